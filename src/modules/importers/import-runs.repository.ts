import type { Db } from '../../infra/db/database.ts';
import type { RunCounters } from '../places/places.writer.ts';

/** The `import_runs` log: one row a file import, with its counters and outcome. */

export interface NewRun {
  source: string;
  format: string;
  path: string;
  /** '' until the import has read the whole file. */
  fileSha256: string;
  startedAt: string;
}

/** Runs of this file still marked running were cut off (crash, kill -9): marks them failed, `interrupted`. */
export async function markInterruptedRuns(db: Db, path: string, at: string): Promise<void> {
  await db.kysely
    .updateTable('import_runs')
    .set({ status: 'failed', error: 'interrupted', finished_at: at })
    .where('status', '=', 'running')
    .where('path', '=', path)
    .execute();
}

export async function insertRun(db: Db, run: NewRun): Promise<number> {
  const row = await db.kysely
    .insertInto('import_runs')
    .values({ source: run.source, format: run.format, path: run.path, file_sha256: run.fileSha256, status: 'running', started_at: run.startedAt })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

export async function failRun(db: Db, runId: number, error: string, at: string): Promise<void> {
  await db.kysely.updateTable('import_runs').set({ status: 'failed', error, finished_at: at }).where('id', '=', runId).execute();
}

export async function finishRun(db: Db, runId: number, fileSha256: string, counters: RunCounters, at: string): Promise<void> {
  await db.kysely
    .updateTable('import_runs')
    .set({
      status: 'done',
      file_sha256: fileSha256,
      finished_at: at,
      read_count: counters.read_count,
      skipped_count: counters.skipped_count,
      skipped_reasons: JSON.stringify(counters.skipped_reasons),
    })
    .where('id', '=', runId)
    .execute();
}
