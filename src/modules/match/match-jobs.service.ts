import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { decodeCursor, encodeCursor } from '../../infra/cursor.ts';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { asDiskFull, isDiskFull } from '../../infra/storage.ts';
import type { DownloadLinks } from '../exports/download-links.ts';
import { type DeliveryView, deliveriesOfJobs } from '../webhooks/webhooks.service.ts';
import { type ColumnMapping, type HeaderDictionary, listFields } from './match-headers.ts';
import * as repo from './match-jobs.repository.ts';
import { type MatchJobForm, type MatchJobsQuery, type MatchJobView, maxListRows } from './match-jobs.schema.ts';
import { countListRows, type ListFormat, listFormatOf, openList } from './match-lists.ts';

/** Jobs an account may have queued or running at once. */
export const maxOpenMatchJobsPerAccount = 5;

/** What the job stores of its list besides the file: the mapping and the headers it was made from. */
export interface StoredMapping {
  fields: ColumnMapping;
  headers: string[];
}

/** The account's match quota (QuotaService). */
export interface MatchAllowance {
  reserveMatchRows(accountId: number, rows: number): Promise<string>;
  returnMatchRows(accountId: number, month: string, rows: number): Promise<void>;
}

/** An upload written to the data directory, not yet a job. */
export interface ReceivedList {
  publicId: string;
  path: string;
  fileName: string;
  bytes: number;
}

export const newMatchJobId = () => `mjob_${randomBytes(10).toString('base64url')}`;

/**
 * Writes an uploaded list to `<dataDir>/<job>.input` as it arrives (never whole in memory). `tooLarge()` says
 * whether the upload was cut at the size limit (multipart's `truncated`); such an upload is refused.
 */
export async function receiveList(
  dataDir: string,
  stream: Readable,
  fileName: string,
  tooLarge: () => boolean,
  maxBytes: number,
): Promise<ReceivedList> {
  await mkdir(dataDir, { recursive: true });
  const publicId = newMatchJobId();
  const path = join(dataDir, `${publicId}.input`);
  let bytes = 0;
  stream.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
  });
  try {
    await pipeline(stream, createWriteStream(path));
  } catch (error) {
    await rm(path, { force: true });
    // A full disk is the server's, not the upload's: 507 naming the directory and at least the bytes received.
    if (isDiskFull(error)) throw asDiskFull(error, dataDir, Math.max(bytes, 1), 'match list upload');
    throw new AppError(
      'validation_failed',
      `file: the upload could not be read: ${error instanceof Error ? error.message : String(error)}`,
      {
        errors: [{ field: 'file', message: 'was cut short' }],
      },
    );
  }
  if (tooLarge()) {
    await rm(path, { force: true });
    throw new AppError('payload_too_large', `file: a list may have at most ${maxBytes.toLocaleString('en')} bytes`, {
      errors: [{ field: 'file', message: `is larger than ${maxBytes.toLocaleString('en')} bytes` }],
    });
  }
  return { publicId, path, fileName: fileName || 'list', bytes };
}

/**
 * Makes a queued job of a received list: its format, its headers and the mapping (the one given, completed
 * from the headers the dictionary knows), its rows counted, and as many rows taken from the month's match
 * quota (refused whole when they do not fit: 429). Any refusal deletes the upload.
 */
export async function createMatchJob(
  db: Db,
  o: { allowance: MatchAllowance; dictionary: () => HeaderDictionary; maxOpen?: number },
  request: { accountId: number; list: ReceivedList; form: MatchJobForm },
  now = new Date(),
): Promise<repo.MatchJobRow> {
  const { list, form, accountId } = request;
  try {
    const given = parseMapping(form.mapping);
    if ((await repo.countOpenMatchJobs(db, accountId)) >= (o.maxOpen ?? maxOpenMatchJobsPerAccount)) {
      throw new AppError(
        'quota_exceeded',
        `This account has ${o.maxOpen ?? maxOpenMatchJobsPerAccount} match jobs queued or running; start this one when one has ended`,
        { 'violated-policies': ['open-match-jobs'], retry_after: 30 },
        { 'retry-after': '30' },
      );
    }
    const format = form.format ?? listFormatOf(list.fileName, await head(list.path));
    if (!format) {
      throw new AppError('validation_failed', 'file: the upload is empty', { errors: [{ field: 'file', message: 'is empty' }] });
    }
    const opened = await openList(list.path, format);
    const headers = opened.headers;
    for (const [field, header] of Object.entries(given)) {
      if (!headers.includes(header!)) {
        await opened.rows[Symbol.asyncIterator]().return?.(undefined);
        throw new AppError('validation_failed', `body.mapping.${field}: the list has no column ${JSON.stringify(header)}`, {
          errors: [{ field: `body.mapping.${field}`, message: `is not a header of the list`, allowed: headers }],
        });
      }
    }
    const fields = o.dictionary().guess(headers, given);
    if (!fields.name) {
      await opened.rows[Symbol.asyncIterator]().return?.(undefined);
      throw new AppError(
        'validation_failed',
        "body.mapping.name: no column of the list is recognised as the business's name; name it in mapping",
        {
          errors: [{ field: 'body.mapping.name', message: 'is needed: no header was recognised as the name', allowed: headers }],
        },
      );
    }
    const rows = await countListRows(opened);
    if (rows === 0)
      throw new AppError('validation_failed', 'file: the list has no data rows', {
        errors: [{ field: 'file', message: 'has no data rows' }],
      });
    if (rows > maxListRows) {
      throw new AppError(
        'validation_failed',
        `file: a list may have at most ${maxListRows.toLocaleString('en')} rows; this one has ${rows.toLocaleString('en')}`,
        {
          errors: [{ field: 'file', message: `has more than ${maxListRows.toLocaleString('en')} rows` }],
        },
      );
    }
    const month = await o.allowance.reserveMatchRows(accountId, rows);
    try {
      return await repo.insertMatchJob(db, {
        public_id: list.publicId,
        account_id: accountId,
        input_format: format,
        input_name: list.fileName,
        input_file: `${list.publicId}.input`,
        input_bytes: list.bytes,
        mapping: JSON.stringify({ fields, headers } satisfies StoredMapping),
        threshold: form.threshold ?? null,
        as_leads: form.as_leads ? 1 : 0,
        webhook_url: form.webhook_url ?? null,
        row_count: rows,
        charged_rows: rows,
        charged_month: month,
        created_at: now.toISOString(),
      });
    } catch (error) {
      await o.allowance.returnMatchRows(accountId, month, rows);
      throw error;
    }
  } catch (error) {
    await rm(list.path, { force: true });
    throw error;
  }
}

function parseMapping(text: string | undefined): ColumnMapping {
  if (text === undefined || text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AppError('validation_failed', 'body.mapping: must be a JSON object of record field → header', {
      errors: [
        { field: 'body.mapping', message: 'must be a JSON object such as {"name": "Company", "city": "Town"}', allowed: [...listFields] },
      ],
    });
  }
  const mapping: ColumnMapping = {};
  for (const [field, header] of Object.entries(value)) {
    if (!(listFields as readonly string[]).includes(field)) {
      throw new AppError('validation_failed', `body.mapping.${field}: not a field of a record`, {
        errors: [{ field: `body.mapping.${field}`, message: 'is not a field of a record', allowed: [...listFields] }],
      });
    }
    if (typeof header !== 'string' || header.trim() === '') {
      throw new AppError('validation_failed', `body.mapping.${field}: must be a header of the list`, {
        errors: [{ field: `body.mapping.${field}`, message: 'must be a non-empty string: a header of the list' }],
      });
    }
    mapping[field as keyof ColumnMapping] = header;
  }
  return mapping;
}

async function head(path: string): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const buf = Buffer.alloc(512);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

export async function getMatchJob(db: Db, links: DownloadLinks, accountId: number, jobId: string, baseUrl: string): Promise<MatchJobView> {
  const row = /^mjob_[A-Za-z0-9_-]{14}$/.test(jobId) ? await repo.findMatchJobForAccount(db, accountId, jobId) : undefined;
  if (!row) throw new AppError('not_found', `match job ${jobId} does not exist`);
  return matchJobView(row, links, baseUrl);
}

export async function listMatchJobs(
  db: Db,
  links: DownloadLinks,
  accountId: number,
  query: MatchJobsQuery,
  baseUrl: string,
): Promise<{ data: MatchJobView[]; next_cursor: string | null }> {
  const perPage = query.per_page ?? 20;
  const before =
    query.cursor === undefined
      ? null
      : decodeCursor(
          query.cursor,
          (v) =>
            typeof v === 'object' && v !== null && Number.isSafeInteger((v as { m?: unknown }).m) ? (v as { m: number }).m : undefined,
          { field: 'querystring.cursor', message: 'is not a cursor of this list' },
        );
  const rows = await repo.listMatchJobsForAccount(db, accountId, perPage + 1, before);
  const page = rows.slice(0, perPage);
  return {
    data: await Promise.all(page.map((r) => matchJobView(r, links, baseUrl))),
    next_cursor: rows.length > perPage ? encodeCursor({ m: page[page.length - 1]!.id }) : null,
  };
}

/** The account's most recent jobs with their webhook deliveries (the dashboard's page); links are paths of this site. */
export async function recentMatchJobs(
  db: Db,
  links: DownloadLinks,
  accountId: number,
  limit: number,
): Promise<Array<{ job: MatchJobView; deliveries: DeliveryView[] }>> {
  const rows = await repo.listMatchJobsForAccount(db, accountId, limit, null);
  const deliveries = await deliveriesOfJobs(
    db,
    'match_job',
    rows.map((r) => r.id),
  );
  return Promise.all(
    rows.map(async (row) => ({ job: await matchJobView(row, links, ''), deliveries: deliveries.filter((d) => d.jobId === row.id) })),
  );
}

export async function matchJobView(row: repo.MatchJobRow, links: DownloadLinks, baseUrl: string): Promise<MatchJobView> {
  let download: MatchJobView['download'] = null;
  if (row.status === 'succeeded' && row.file_name) {
    const link = await links.linkFor(row.public_id);
    download = { url: `${baseUrl}${link.path}`, expires_at: link.expiresAt.toISOString(), bytes: row.file_bytes ?? 0 };
  }
  const stored = JSON.parse(row.mapping) as StoredMapping;
  return {
    id: row.public_id,
    status: row.status,
    file_name: row.input_name,
    format: row.input_format as ListFormat,
    mapping: stored.fields as Record<string, string>,
    headers: stored.headers,
    threshold: row.threshold,
    as_leads: row.as_leads === 1,
    webhook_url: row.webhook_url,
    rows: row.row_count,
    progress: {
      done: row.rows_done,
      matched: row.matched,
      unmatched: row.rows_done - row.matched - row.bad_rows,
      closed: row.closed,
      bad_rows: row.bad_rows,
    },
    failure: row.failure,
    attempts: row.attempts,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
    download,
  };
}
