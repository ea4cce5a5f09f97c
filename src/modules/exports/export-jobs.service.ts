import { randomBytes } from 'node:crypto';
import { decodeCursor, encodeCursor } from '../../infra/cursor.ts';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { parseFields } from '../places/places.schema.ts';
import { getSearchForAccount } from '../search/saved-searches.ts';
import { type DeliveryView, deliveriesOfJobs } from '../webhooks/webhooks.service.ts';
import type { DownloadLinks } from './download-links.ts';
import * as repo from './export-jobs.repository.ts';
import type { ExportFormatName } from './formats/index.ts';

/** Jobs an account may have queued or running at once; more are refused until some end. */
export const maxOpenJobsPerAccount = 20;

export interface JobRequest {
  accountId: number;
  searchId: string;
  format: ExportFormatName;
  fields: string | undefined;
  webhookUrl: string | undefined;
}

/** What an account's quotas say about a new job (implemented by QuotaService). */
export interface JobAllowance {
  assertRowsLeft(accountId: number): Promise<unknown>;
}

/** The public shape of a job (`GET /api/v2/exports/{id}`, the list, the webhook event). */
export interface JobView {
  id: string;
  status: repo.ExportJobRow['status'];
  search_id: string;
  format: string;
  fields: string[] | null;
  webhook_url: string | null;
  /** Rows written so far while running (a workbook counts at its end); the file's rows once succeeded. */
  rows: number;
  limited: boolean;
  failure: string | null;
  attempts: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  download: { url: string; expires_at: string; bytes: number } | null;
}

/**
 * Queues an export job of a saved search of the account. Checked before anything is queued: the
 * search (another account's is `not_found`), the fields, the account's rows left this month, and how
 * many jobs it already has open. The job runs in the background (`ExportJobRunner`).
 */
export async function createJob(db: Db, allowance: JobAllowance, request: JobRequest, now = new Date()): Promise<repo.ExportJobRow> {
  try {
    parseFields(request.fields);
  } catch (error) {
    if (error instanceof AppError && error.extras.errors) {
      throw new AppError(error.code, error.message.replace('querystring.fields', 'body.fields'), {
        ...error.extras,
        errors: error.extras.errors.map((e) => ({ ...e, field: 'body.fields' })),
      });
    }
    throw error;
  }
  const search = await getSearchForAccount(db, request.accountId, request.searchId);
  await allowance.assertRowsLeft(request.accountId);
  if ((await repo.countOpenJobs(db, request.accountId)) >= maxOpenJobsPerAccount) {
    throw new AppError(
      'quota_exceeded',
      `This account has ${maxOpenJobsPerAccount} export jobs queued or running; start this one when one has ended`,
      { 'violated-policies': ['open-export-jobs'], retry_after: 30 },
      { 'retry-after': '30' },
    );
  }
  return repo.insertJob(db, {
    public_id: `job_${randomBytes(10).toString('base64url')}`,
    account_id: request.accountId,
    search_id: search.id,
    format: request.format,
    fields: request.fields?.trim() ? request.fields : null,
    webhook_url: request.webhookUrl ?? null,
    created_at: now.toISOString(),
  });
}

export async function getJob(db: Db, links: DownloadLinks, accountId: number, jobId: string, baseUrl: string): Promise<JobView> {
  const row = /^job_[A-Za-z0-9_-]{14}$/.test(jobId) ? await repo.findJobForAccount(db, accountId, jobId) : undefined;
  if (!row) throw new AppError('not_found', `export job ${jobId} does not exist`);
  return jobView(row, links, baseUrl);
}

export async function listJobs(
  db: Db,
  links: DownloadLinks,
  accountId: number,
  query: { per_page?: number; cursor?: string },
  baseUrl: string,
): Promise<{ data: JobView[]; next_cursor: string | null }> {
  const perPage = query.per_page ?? 20;
  const before =
    query.cursor === undefined
      ? null
      : decodeCursor(
          query.cursor,
          (v) =>
            typeof v === 'object' && v !== null && Number.isSafeInteger((v as { j?: unknown }).j) ? (v as { j: number }).j : undefined,
          {
            field: 'querystring.cursor',
            message: 'is not a cursor of this list',
          },
        );
  const rows = await repo.listJobsForAccount(db, accountId, perPage + 1, before);
  const page = rows.slice(0, perPage);
  return {
    data: await Promise.all(page.map((r) => jobView(r, links, baseUrl))),
    next_cursor: rows.length > perPage ? encodeCursor({ j: page[page.length - 1]!.id }) : null,
  };
}

/** A job with its webhook deliveries (the dashboard's Export jobs page); download links are paths of this site. */
export interface JobOverview {
  job: JobView;
  deliveries: DeliveryView[];
}

/** The account's most recent jobs, newest first, with their webhook deliveries and every attempt. */
export async function recentJobs(db: Db, links: DownloadLinks, accountId: number, limit: number): Promise<JobOverview[]> {
  const rows = await repo.listJobsForAccount(db, accountId, limit, null);
  const deliveries = await deliveriesOfJobs(
    db,
    'export_job',
    rows.map((r) => r.id),
  );
  return Promise.all(
    rows.map(async (row) => ({ job: await jobView(row, links, ''), deliveries: deliveries.filter((d) => d.jobId === row.id) })),
  );
}

export async function jobView(row: repo.ExportJobView, links: DownloadLinks, baseUrl: string): Promise<JobView> {
  let download: JobView['download'] = null;
  if (row.status === 'succeeded' && row.file_name) {
    const link = await links.linkFor(row.public_id);
    download = { url: `${baseUrl}${link.path}`, expires_at: link.expiresAt.toISOString(), bytes: row.file_bytes ?? 0 };
  }
  return {
    id: row.public_id,
    status: row.status,
    search_id: row.search_id,
    format: row.format,
    fields: row.fields === null ? null : parseFields(row.fields),
    webhook_url: row.webhook_url,
    rows: row.status === 'running' ? row.rows_done : row.row_count,
    limited: row.limited === 1,
    failure: row.failure,
    attempts: row.attempts,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
    download,
  };
}
