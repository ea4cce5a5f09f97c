import { type Selectable, sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { ExportJobsTable } from '../../infra/db/schema.ts';

export type ExportJobRow = Selectable<ExportJobsTable>;
/** A job with its current attempt's progress (rows recorded so far by its `exports` row). */
export type ExportJobView = ExportJobRow & { rows_done: number };

export async function insertJob(
  db: Db,
  row: Pick<ExportJobRow, 'public_id' | 'account_id' | 'search_id' | 'format' | 'fields' | 'webhook_url' | 'created_at'>,
): Promise<ExportJobRow> {
  return db.kysely
    .insertInto('export_jobs')
    .values({ ...row, status: 'queued' })
    .returningAll()
    .executeTakeFirstOrThrow();
}

const withProgress = (db: Db) =>
  db.kysely
    .selectFrom('export_jobs')
    .leftJoin('exports', 'exports.id', 'export_jobs.export_id')
    .selectAll('export_jobs')
    .select((eb) => eb.fn.coalesce('exports.row_count', sql<number>`0`).as('rows_done'));

export async function findJobForAccount(db: Db, accountId: number, publicId: string): Promise<ExportJobView | undefined> {
  const row = await withProgress(db)
    .where('export_jobs.account_id', '=', accountId)
    .where('export_jobs.public_id', '=', publicId)
    .executeTakeFirst();
  return row && normalise(row);
}

export async function findJob(db: Db, publicId: string): Promise<ExportJobRow | undefined> {
  const row = await db.kysely.selectFrom('export_jobs').selectAll().where('public_id', '=', publicId).executeTakeFirst();
  return row && normalise({ ...row, rows_done: 0 });
}

/** The account's jobs, newest first, after the job `beforeId` (keyset). */
export async function listJobsForAccount(db: Db, accountId: number, limit: number, beforeId: number | null): Promise<ExportJobView[]> {
  let q = withProgress(db).where('export_jobs.account_id', '=', accountId);
  if (beforeId !== null) q = q.where('export_jobs.id', '<', beforeId);
  const rows = await q.orderBy('export_jobs.id', 'desc').limit(limit).execute();
  return rows.map(normalise);
}

/** Jobs of the account not yet ended (queued or running). */
export async function countOpenJobs(db: Db, accountId: number): Promise<number> {
  const r = await db.kysely
    .selectFrom('export_jobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .where('status', 'in', ['queued', 'running'])
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** A job by its internal id, as the runner reads it before claiming it. */
export async function findJobById(db: Db, jobId: number): Promise<ExportJobRow | undefined> {
  const row = await db.kysely.selectFrom('export_jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
  return row && normalise({ ...row, rows_done: 0 });
}

export async function updateRunningJob(
  db: Db,
  jobId: number,
  runner: string,
  values: Partial<Pick<ExportJobRow, 'export_id' | 'charged_rows' | 'charged_month'>>,
): Promise<void> {
  await db.kysely.updateTable('export_jobs').set(values).where('id', '=', jobId).where('runner', '=', runner).execute();
}

/** The end of a job, in the transaction that also queues its webhook delivery. */
export async function endJob(
  trx: Db['kysely'],
  jobId: number,
  runner: string,
  values: Pick<ExportJobRow, 'status' | 'failure' | 'row_count' | 'limited' | 'file_name' | 'file_bytes' | 'download_name' | 'finished_at'>,
): Promise<boolean> {
  const r = await trx
    .updateTable('export_jobs')
    .set({ ...values, runner: null, lease_until: null })
    .where('id', '=', jobId)
    .where('runner', '=', runner)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** An attempt that died with its process: its export is logged `aborted`. */
export async function abortExportAttempt(db: Db, exportId: number, at: string): Promise<void> {
  await db.kysely
    .updateTable('exports')
    .set({ status: 'aborted', finished_at: at })
    .where('id', '=', exportId)
    .where('status', '=', 'running')
    .execute();
}

export async function exportRowById(db: Db, publicId: string): Promise<{ id: number; row_count: number; status: string } | undefined> {
  const r = await db.kysely
    .selectFrom('exports')
    .select(['id', 'row_count', 'status'])
    .where('public_id', '=', publicId)
    .executeTakeFirst();
  return r && { id: Number(r.id), row_count: Number(r.row_count), status: r.status };
}

/** A server-wide secret, made once: of several processes creating it at once, the first insert wins. */
export async function serverSecret(db: Db, name: string, make: () => string): Promise<string> {
  const found = await db.kysely.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirst();
  if (found) return found.value;
  await db.kysely
    .insertInto('server_secrets')
    .values({ name, value: make(), created_at: new Date().toISOString() })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  return (await db.kysely.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow()).value;
}

/** PostgreSQL answers bigint columns as strings. */
function normalise<T extends ExportJobRow & { rows_done: unknown }>(row: T): T & { rows_done: number } {
  return {
    ...row,
    id: Number(row.id),
    account_id: Number(row.account_id),
    export_id: row.export_id === null ? null : Number(row.export_id),
    row_count: Number(row.row_count),
    limited: Number(row.limited),
    attempts: Number(row.attempts),
    file_bytes: row.file_bytes === null ? null : Number(row.file_bytes),
    charged_rows: Number(row.charged_rows),
    rows_done: Number(row.rows_done),
  };
}
