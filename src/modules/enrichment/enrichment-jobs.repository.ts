import { type ExpressionBuilder, type Selectable, sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { Database, EnrichmentJobsTable } from '../../infra/db/schema.ts';

export type EnrichmentJobRow = Selectable<EnrichmentJobsTable>;

export async function insertJob(
  db: Db,
  row: Pick<EnrichmentJobRow, 'public_id' | 'account_id' | 'search_id' | 'webhook_url' | 'created_at'>,
): Promise<EnrichmentJobRow> {
  return normalise(
    await db.kysely
      .insertInto('enrichment_jobs')
      .values({ ...row, status: 'queued' })
      .returningAll()
      .executeTakeFirstOrThrow(),
  );
}

export async function findJobForAccount(db: Db, accountId: number, publicId: string): Promise<EnrichmentJobRow | undefined> {
  const row = await db.kysely
    .selectFrom('enrichment_jobs')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('public_id', '=', publicId)
    .executeTakeFirst();
  return row && normalise(row);
}

/** The account's jobs, newest first, after the job `beforeId` (keyset). */
export async function listJobsForAccount(db: Db, accountId: number, limit: number, beforeId: number | null): Promise<EnrichmentJobRow[]> {
  let q = db.kysely.selectFrom('enrichment_jobs').selectAll().where('account_id', '=', accountId);
  if (beforeId !== null) q = q.where('id', '<', beforeId);
  return (await q.orderBy('id', 'desc').limit(limit).execute()).map(normalise);
}

export async function countOpenJobs(db: Db, accountId: number): Promise<number> {
  const r = await db.kysely
    .selectFrom('enrichment_jobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .where('status', 'in', ['queued', 'running'])
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** A job to queue: new, or being queued by a process whose lease lapsed. */
const claimable = (eb: ExpressionBuilder<Database, 'enrichment_jobs'>, now: string) =>
  eb.or([eb('status', '=', 'queued'), eb.and([eb('status', '=', 'running'), eb('runner', 'is not', null), eb('lease_until', '<', now)])]);

export async function claimableJobs(db: Db, now: string, limit: number): Promise<EnrichmentJobRow[]> {
  const rows = await db.kysely
    .selectFrom('enrichment_jobs')
    .selectAll()
    .where((eb) => claimable(eb, now))
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map(normalise);
}

/** Takes a job to queue its sites, in one conditional UPDATE: of several processes, exactly one gets it. */
export async function claimJob(db: Db, jobId: number, runner: string, now: string, leaseUntil: string): Promise<boolean> {
  const r = await db.kysely
    .updateTable('enrichment_jobs')
    .set({ status: 'running', runner, lease_until: leaseUntil, attempts: sql<number>`attempts + 1`, started_at: now })
    .where('id', '=', jobId)
    .where((eb) => claimable(eb, now))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** What an abandoned attempt left: its places and sites (queued again from scratch) and what it charged. */
export async function clearJobSites(db: Db, jobId: number, runner: string): Promise<void> {
  await db.kysely.deleteFrom('enrichment_job_sites').where('job_id', '=', jobId).execute();
  await db.kysely.deleteFrom('enrichment_job_places').where('job_id', '=', jobId).execute();
  await db.kysely
    .updateTable('enrichment_jobs')
    .set({ charged_places: 0, charged_month: null })
    .where('id', '=', jobId)
    .where('runner', '=', runner)
    .execute();
}

export async function chargeJob(db: Db, jobId: number, runner: string, places: number, month: string): Promise<void> {
  await db.kysely
    .updateTable('enrichment_jobs')
    .set({ charged_places: places, charged_month: month })
    .where('id', '=', jobId)
    .where('runner', '=', runner)
    .execute();
}

/** The places a job queued and their sites. */
export async function addJobPlaces(db: Db, jobId: number, placeSites: ReadonlyArray<readonly [number, number]>): Promise<void> {
  const siteIds = [...new Set(placeSites.map(([, site]) => site))];
  for (let i = 0; i < siteIds.length; i += 500) {
    await db.kysely
      .insertInto('enrichment_job_sites')
      .values(siteIds.slice(i, i + 500).map((siteId) => ({ job_id: jobId, site_id: siteId })))
      .onConflict((oc) => oc.columns(['job_id', 'site_id']).doNothing())
      .execute();
  }
  for (let i = 0; i < placeSites.length; i += 500) {
    await db.kysely
      .insertInto('enrichment_job_places')
      .values(placeSites.slice(i, i + 500).map(([placeId]) => ({ job_id: jobId, place_id: placeId })))
      .onConflict((oc) => oc.columns(['job_id', 'place_id']).doNothing())
      .execute();
  }
}

/** The job's sites are queued: it now waits for the crawls, held by no process. False when the job is no longer this process's. */
export async function jobQueued(
  db: Db,
  jobId: number,
  runner: string,
  values: Pick<EnrichmentJobRow, 'place_count' | 'site_count' | 'limited'>,
): Promise<boolean> {
  const r = await db.kysely
    .updateTable('enrichment_jobs')
    .set({ ...values, runner: null, lease_until: null })
    .where('id', '=', jobId)
    .where('runner', '=', runner)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Jobs whose sites are queued and not all crawled. */
export async function waitingJobs(db: Db, limit: number): Promise<EnrichmentJobRow[]> {
  const rows = await db.kysely
    .selectFrom('enrichment_jobs')
    .selectAll()
    .where('status', '=', 'running')
    .where('runner', 'is', null)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map(normalise);
}

/**
 * Sites of the job crawled since it started, or fresh when it did (crawled within the refresh period: not due
 * again before the job started), and the places the job queued that have an email (their own or a found one).
 */
export async function jobProgress(db: Db, job: EnrichmentJobRow): Promise<{ sitesDone: number; placesWithEmail: number }> {
  const started = job.started_at ?? job.created_at;
  const done = await db.kysely
    .selectFrom('enrichment_job_sites as js')
    .innerJoin('enrich_sites as s', 's.id', 'js.site_id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('js.job_id', '=', job.id)
    .where('s.status', '=', 'done')
    .where((eb) => eb.or([eb('s.crawled_at', '>=', started), eb('s.due_at', '>', started)]))
    .executeTakeFirstOrThrow();
  const emails = await db.kysely
    .selectFrom('enrichment_job_places as jp')
    .innerJoin('places', 'places.id', 'jp.place_id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('jp.job_id', '=', job.id)
    .where('places.closed_at', 'is', null)
    .where(
      sql<boolean>`(places.email IS NOT NULL OR (places.found_email IS NOT NULL AND places.enrich_basis = coalesce(places.website, places.email)))`,
    )
    .executeTakeFirstOrThrow();
  return { sitesDone: Number(done.n), placesWithEmail: Number(emails.n) };
}

export async function updateProgress(db: Db, jobId: number, sitesDone: number): Promise<void> {
  await db.kysely
    .updateTable('enrichment_jobs')
    .set({ sites_done: sitesDone })
    .where('id', '=', jobId)
    .where('status', '=', 'running')
    .execute();
}

/** Ends a job (inside the transaction that queues its webhook event); false when another process ended it first. */
export async function endJob(
  db: Db['kysely'],
  jobId: number,
  values: Pick<EnrichmentJobRow, 'status' | 'failure' | 'finished_at'> &
    Partial<Pick<EnrichmentJobRow, 'sites_done' | 'places_with_email'>>,
  runner: string | null,
): Promise<boolean> {
  const r = await db
    .updateTable('enrichment_jobs')
    .set({ ...values, runner: null, lease_until: null })
    .where('id', '=', jobId)
    .where('status', '=', 'running')
    .where((eb) => (runner === null ? eb('runner', 'is', null) : eb('runner', '=', runner)))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** PostgreSQL answers bigint columns as strings. */
function normalise(r: EnrichmentJobRow): EnrichmentJobRow {
  return {
    ...r,
    id: Number(r.id),
    account_id: Number(r.account_id),
    attempts: Number(r.attempts),
    place_count: Number(r.place_count),
    limited: Number(r.limited),
    site_count: Number(r.site_count),
    sites_done: Number(r.sites_done),
    places_with_email: Number(r.places_with_email),
    charged_places: Number(r.charged_places),
  };
}
