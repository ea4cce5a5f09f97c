import type { Selectable } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { MatchJobsTable } from '../../infra/db/schema.match.ts';

export type MatchJobRow = Selectable<MatchJobsTable>;

export async function insertMatchJob(
  db: Db,
  row: Pick<
    MatchJobRow,
    | 'public_id'
    | 'account_id'
    | 'input_format'
    | 'input_name'
    | 'input_file'
    | 'input_bytes'
    | 'mapping'
    | 'threshold'
    | 'as_leads'
    | 'webhook_url'
    | 'row_count'
    | 'charged_rows'
    | 'charged_month'
    | 'created_at'
  >,
): Promise<MatchJobRow> {
  const inserted = await db.kysely
    .insertInto('match_jobs')
    .values({ ...row, status: 'queued' })
    .returningAll()
    .executeTakeFirstOrThrow();
  return normalise(inserted);
}

export async function findMatchJobById(db: Db, jobId: number): Promise<MatchJobRow | undefined> {
  const row = await db.kysely.selectFrom('match_jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
  return row && normalise(row);
}

export async function findMatchJob(db: Db, publicId: string): Promise<MatchJobRow | undefined> {
  const row = await db.kysely.selectFrom('match_jobs').selectAll().where('public_id', '=', publicId).executeTakeFirst();
  return row && normalise(row);
}

export async function findMatchJobForAccount(db: Db, accountId: number, publicId: string): Promise<MatchJobRow | undefined> {
  const row = await db.kysely
    .selectFrom('match_jobs')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('public_id', '=', publicId)
    .executeTakeFirst();
  return row && normalise(row);
}

/** The account's jobs, newest first, after the job `beforeId` (keyset). */
export async function listMatchJobsForAccount(db: Db, accountId: number, limit: number, beforeId: number | null): Promise<MatchJobRow[]> {
  let q = db.kysely.selectFrom('match_jobs').selectAll().where('account_id', '=', accountId);
  if (beforeId !== null) q = q.where('id', '<', beforeId);
  const rows = await q.orderBy('id', 'desc').limit(limit).execute();
  return rows.map(normalise);
}

/** Jobs of the account not yet ended (queued or running). */
export async function countOpenMatchJobs(db: Db, accountId: number): Promise<number> {
  const r = await db.kysely
    .selectFrom('match_jobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .where('status', 'in', ['queued', 'running'])
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** The progress of the attempt this process runs. */
export async function updateMatchProgress(
  db: Db,
  jobId: number,
  runner: string,
  values: Pick<MatchJobRow, 'rows_done' | 'matched' | 'closed' | 'bad_rows'>,
): Promise<void> {
  await db.kysely.updateTable('match_jobs').set(values).where('id', '=', jobId).where('runner', '=', runner).execute();
}

/** The end of a job, in the transaction that also queues its webhook delivery. */
export async function endMatchJob(
  trx: Db['kysely'],
  jobId: number,
  runner: string,
  values: Pick<
    MatchJobRow,
    | 'status'
    | 'failure'
    | 'rows_done'
    | 'matched'
    | 'closed'
    | 'bad_rows'
    | 'file_name'
    | 'file_bytes'
    | 'download_name'
    | 'finished_at'
    | 'input_file'
    | 'charged_rows'
  >,
): Promise<boolean> {
  const r = await trx
    .updateTable('match_jobs')
    .set({ ...values, runner: null, lease_until: null })
    .where('id', '=', jobId)
    .where('runner', '=', runner)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** PostgreSQL answers bigint columns as strings. */
function normalise(row: MatchJobRow): MatchJobRow {
  return {
    ...row,
    id: Number(row.id),
    account_id: Number(row.account_id),
    input_bytes: Number(row.input_bytes),
    threshold: row.threshold === null ? null : Number(row.threshold),
    as_leads: Number(row.as_leads),
    attempts: Number(row.attempts),
    row_count: Number(row.row_count),
    rows_done: Number(row.rows_done),
    matched: Number(row.matched),
    closed: Number(row.closed),
    bad_rows: Number(row.bad_rows),
    file_bytes: row.file_bytes === null ? null : Number(row.file_bytes),
    charged_rows: Number(row.charged_rows),
  };
}
