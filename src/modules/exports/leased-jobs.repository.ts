import { sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';

/**
 * The queue of a kind of job held in a table of its owner's: the tables of jobs that run in the background
 * with a lease (`export_jobs`, `match_jobs`) share these columns, and these statements touch only them. The
 * owner hands its table in; the rest of its rows (what the job is, how it ended) stays the owner's to write.
 */
export type LeasedJobTable = 'export_jobs' | 'match_jobs';

/** A job as the queue sees it. */
export interface LeasedJobRow {
  id: number;
  public_id: string;
  account_id: number;
  attempts: number;
}

export interface LeasedJobQueries {
  /** Candidates to run: queued jobs, and running ones whose process let the lease lapse; oldest first. */
  runnableIds(now: string, limit: number): Promise<number[]>;
  /**
   * Takes a job for this process if nobody holds it (queued, or its lease lapsed), in one conditional
   * UPDATE: of several processes asking at once, exactly one gets it.
   */
  claim(jobId: number, runner: string, now: string, leaseUntil: string): Promise<boolean>;
  /** Renews this process's lease; false when the job is no longer this process's (another took it). */
  renew(jobId: number, runner: string, leaseUntil: string): Promise<boolean>;
  /** Puts a job this process holds back in the queue (the process is stopping, or the account's slots are taken). */
  requeue(jobId: number, runner: string, undoAttempt: boolean): Promise<void>;
}

export function leasedJobQueries(db: Db, table: LeasedJobTable): LeasedJobQueries {
  // Both tables have the lease columns; Kysely is given one name to type the statements with.
  const t = table as 'export_jobs';
  return {
    async runnableIds(now, limit) {
      const rows = await db.kysely
        .selectFrom(t)
        .select('id')
        .where((eb) => eb.or([eb('status', '=', 'queued'), eb.and([eb('status', '=', 'running'), eb('lease_until', '<', now)])]))
        .orderBy('id')
        .limit(limit)
        .execute();
      return rows.map((r) => Number(r.id));
    },
    async claim(jobId, runner, now, leaseUntil) {
      const r = await db.kysely
        .updateTable(t)
        .set({ status: 'running', runner, lease_until: leaseUntil, attempts: sql<number>`attempts + 1`, started_at: now })
        .where('id', '=', jobId)
        .where((eb) => eb.or([eb('status', '=', 'queued'), eb.and([eb('status', '=', 'running'), eb('lease_until', '<', now)])]))
        .executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },
    async renew(jobId, runner, leaseUntil) {
      const r = await db.kysely
        .updateTable(t)
        .set({ lease_until: leaseUntil })
        .where('id', '=', jobId)
        .where('runner', '=', runner)
        .where('status', '=', 'running')
        .executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },
    async requeue(jobId, runner, undoAttempt) {
      await db.kysely
        .updateTable(t)
        .set({ status: 'queued', runner: null, lease_until: null, ...(undoAttempt ? { attempts: sql<number>`attempts - 1` } : {}) })
        .where('id', '=', jobId)
        .where('runner', '=', runner)
        .execute();
    },
  };
}
