import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { decodeCursor, encodeCursor } from '../../infra/cursor.ts';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { PollLoop } from '../../infra/poll-loop.ts';
import { monthOf } from '../auth/quotas.service.ts';
import { iterateSearchPlaces } from '../search/bulk-reads.ts';
import { getSearchForAccount } from '../search/saved-searches.ts';
import type { SavedSearch } from '../search/search.types.ts';
import { queueDelivery } from '../webhooks/webhooks.service.ts';
import { prioritiseSites } from './enrichment.repository.ts';
import { linkPlaces } from './enrichment.service.ts';
import * as repo from './enrichment-jobs.repository.ts';
import type { EnrichmentJobsQuery, EnrichmentJobView } from './enrichment-jobs.schema.ts';

/** Jobs an account may have queued or running at once. */
export const maxOpenEnrichmentJobs = 20;
/** The queue priority of a job's sites (the background queue's are 0). */
const jobPriority = 1;

/** The account's enrichment quota (implemented by QuotaService). */
export interface EnrichAllowance {
  assertEnrichPlacesLeft(accountId: number): Promise<unknown>;
  reserveEnrichPlaces(accountId: number, month: string, wanted: number): Promise<number>;
  returnEnrichPlaces(accountId: number, month: string, places: number): Promise<void>;
}

/**
 * Queues an enrichment job of a saved search of the account (another account's is `not_found`), if the
 * account has places left to enrich this month and fewer than `maxOpenEnrichmentJobs` jobs open.
 */
export async function createEnrichmentJob(
  db: Db,
  allowance: EnrichAllowance,
  accountId: number,
  request: { searchId: string; webhookUrl?: string | undefined },
  now = new Date(),
): Promise<repo.EnrichmentJobRow> {
  const search = await getSearchForAccount(db, accountId, request.searchId);
  await allowance.assertEnrichPlacesLeft(accountId);
  if ((await repo.countOpenJobs(db, accountId)) >= maxOpenEnrichmentJobs) {
    throw new AppError(
      'quota_exceeded',
      `This account has ${maxOpenEnrichmentJobs} enrichment jobs queued or running; start this one when one has ended`,
      { 'violated-policies': ['open-enrichment-jobs'], retry_after: 60 },
      { 'retry-after': '60' },
    );
  }
  return repo.insertJob(db, {
    public_id: `enr_${randomBytes(10).toString('base64url')}`,
    account_id: accountId,
    search_id: search.id,
    webhook_url: request.webhookUrl ?? null,
    created_at: now.toISOString(),
  });
}

export async function getEnrichmentJob(db: Db, accountId: number, jobId: string): Promise<EnrichmentJobView> {
  const row = /^enr_[A-Za-z0-9_-]{14}$/.test(jobId) ? await repo.findJobForAccount(db, accountId, jobId) : undefined;
  if (!row) throw new AppError('not_found', `enrichment job ${jobId} does not exist`);
  return enrichmentJobView(row);
}

export async function listEnrichmentJobs(
  db: Db,
  accountId: number,
  query: EnrichmentJobsQuery,
): Promise<{ data: EnrichmentJobView[]; next_cursor: string | null }> {
  const perPage = query.per_page ?? 20;
  const before =
    query.cursor === undefined
      ? null
      : decodeCursor(
          query.cursor,
          (v) =>
            typeof v === 'object' && v !== null && Number.isSafeInteger((v as { e?: unknown }).e) ? (v as { e: number }).e : undefined,
          {
            field: 'querystring.cursor',
            message: 'is not a cursor of this list',
          },
        );
  const rows = await repo.listJobsForAccount(db, accountId, perPage + 1, before);
  const page = rows.slice(0, perPage);
  return { data: page.map(enrichmentJobView), next_cursor: rows.length > perPage ? encodeCursor({ e: page[page.length - 1]!.id }) : null };
}

export function enrichmentJobView(row: repo.EnrichmentJobRow): EnrichmentJobView {
  return {
    id: row.public_id,
    status: row.status,
    search_id: row.search_id,
    webhook_url: row.webhook_url,
    places: row.place_count,
    limited: row.limited === 1,
    sites: row.site_count,
    sites_done: row.sites_done,
    places_with_email: row.places_with_email,
    failure: row.failure,
    attempts: row.attempts,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
  };
}

/**
 * Runs enrichment jobs from the database, in every `serve` (the crawling itself is the enrichment queue's:
 * ENRICH_WORKERS or `leadatlas enrich`). A queued job is taken with a lease; its search's places are tied to
 * their sites, the month's quota is charged for them, and their sites that are due go to the front of the
 * queue. A process that dies while doing so stops renewing the lease; another takes the job again, gives
 * back what the attempt charged and starts over. The job then waits, held by nobody, until every site has
 * been crawled since it started (or was fresh already), and succeeds. A job with `webhook_url` queues its
 * event (`enrichment_job.succeeded` or `.failed`, the job as `GET` shows it) in the transaction that ends it;
 * the webhook queue (`modules/webhooks`) sends it as it sends export jobs' events.
 */
export class EnrichmentJobRunner {
  readonly id = `run_${randomBytes(8).toString('hex')}`;
  private readonly loop: PollLoop;

  constructor(
    private readonly o: {
      db: Db;
      log: FastifyBaseLogger;
      allowance: EnrichAllowance;
      leaseSeconds: number;
      onQueued: () => void;
      /** A webhook event was queued. */
      onEvent: () => void;
      pollMs?: number;
    },
  ) {
    this.loop = new PollLoop(
      () => this.tick(),
      o.pollMs ?? 2000,
      (err: unknown) => o.log.error({ err }, 'enrichment jobs: a round failed'),
    );
  }

  start(): void {
    this.loop.schedule(0);
  }

  poke(): void {
    this.loop.schedule(0);
  }

  close(): Promise<void> {
    return this.loop.close();
  }

  private leaseFrom(at: Date): string {
    return new Date(at.getTime() + this.o.leaseSeconds * 1000).toISOString();
  }

  private async tick(): Promise<void> {
    const { db } = this.o;
    for (const job of await repo.claimableJobs(db, new Date().toISOString(), 10)) {
      if (this.loop.closed) return;
      const at = new Date();
      if (!(await repo.claimJob(db, job.id, this.id, at.toISOString(), this.leaseFrom(at)))) continue;
      await this.queue({ ...job, started_at: at.toISOString(), runner: this.id });
    }
    for (const job of await repo.waitingJobs(db, 100)) {
      if (this.loop.closed) return;
      const progress = await repo.jobProgress(db, job);
      if (progress.sitesDone >= job.site_count) {
        await this.end(
          job,
          { status: 'succeeded', failure: null, sites_done: job.site_count, places_with_email: progress.placesWithEmail },
          null,
        );
        this.o.log.info({ job: job.public_id, places: job.place_count, sites: job.site_count }, 'enrichment job succeeded');
      } else if (progress.sitesDone !== job.sites_done) {
        await repo.updateProgress(db, job.id, progress.sitesDone);
      }
    }
  }

  /** Puts a job's places first in the queue (the job is this process's). */
  private async queue(job: repo.EnrichmentJobRow): Promise<void> {
    const { db, allowance, log } = this.o;
    const renew = setInterval(
      () => {
        void db.kysely
          .updateTable('enrichment_jobs')
          .set({ lease_until: this.leaseFrom(new Date()) })
          .where('id', '=', job.id)
          .where('runner', '=', this.id)
          .execute()
          .catch(() => {});
      },
      (this.o.leaseSeconds * 1000) / 3,
    );
    renew.unref();
    try {
      if (job.charged_places > 0 && job.charged_month)
        await allowance.returnEnrichPlaces(job.account_id, job.charged_month, job.charged_places);
      await repo.clearJobSites(db, job.id, this.id);
      let search: SavedSearch;
      try {
        search = await getSearchForAccount(db, job.account_id, job.search_id);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        await this.end(job, { status: 'failed', failure: `${error.code}: ${error.message}` }, this.id);
        return;
      }
      const linked = await linkPlaces(db, {
        placeIds: (async function* () {
          for await (const rows of iterateSearchPlaces(db, search)) yield rows.map((r) => Number(r.id));
        })(),
      });
      const month = monthOf(new Date());
      const granted = linked.places === 0 ? 0 : await allowance.reserveEnrichPlaces(job.account_id, month, linked.places);
      await repo.chargeJob(db, job.id, this.id, granted, month);
      if (linked.places > 0 && granted === 0) {
        await this.end(job, { status: 'failed', failure: 'quota_exceeded: no places left to enrich this month' }, this.id);
        return;
      }
      const placeSites = linked.placeSites.slice(0, granted);
      const siteIds = [...new Set(placeSites.map(([, site]) => site))];
      await repo.addJobPlaces(db, job.id, placeSites);
      await prioritiseSites(db, siteIds, jobPriority);
      await repo.jobQueued(db, job.id, this.id, {
        place_count: granted,
        site_count: siteIds.length,
        limited: granted < linked.places ? 1 : 0,
      });
      log.info({ job: job.public_id, places: granted, sites: siteIds.length }, 'enrichment job queued');
      this.o.onQueued();
    } finally {
      clearInterval(renew);
    }
  }

  /** Ends the job (held by `runner`, or waiting: null) and queues its webhook event, in one transaction. */
  private async end(
    job: repo.EnrichmentJobRow,
    values: Pick<repo.EnrichmentJobRow, 'status' | 'failure'> & Partial<Pick<repo.EnrichmentJobRow, 'sites_done' | 'places_with_email'>>,
    runner: string | null,
  ): Promise<void> {
    const at = new Date();
    const ended = { ...values, finished_at: at.toISOString() };
    let queued = false;
    await this.o.db.kysely.transaction().execute(async (trx) => {
      if (!(await repo.endJob(trx, job.id, ended, runner))) return;
      if (job.webhook_url && (values.status === 'succeeded' || values.status === 'failed')) {
        await queueDelivery(trx, {
          accountId: job.account_id,
          jobKind: 'enrichment_job',
          jobId: job.id,
          url: job.webhook_url,
          outcome: values.status,
          data: { job: enrichmentJobView({ ...job, ...ended, runner: null, lease_until: null }) },
          at,
        });
        queued = true;
      }
    });
    if (queued) this.o.onEvent();
  }
}
