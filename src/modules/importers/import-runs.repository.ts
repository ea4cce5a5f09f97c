import type { Transaction } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { Database } from '../../infra/db/schema.ts';
import { retirePlaces } from '../places/place-updates.repository.ts';
import type { RunCounters } from '../places/places.writer.ts';

/** The `import_runs` log: one row a file import, with its counters and outcome. */

export interface NewRun {
  /** The named snapshot the file is (see `dataset.ts`). */
  dataset: string;
  source: string;
  format: string;
  path: string;
  /** '' until the import has read the whole file. */
  fileSha256: string;
  startedAt: string;
}

/**
 * A run that applies changes to a dataset (an OpenStreetMap change file) rather than a snapshot of it: it
 * retires the places it names and leaves the places it did not see alone.
 */
export interface RunChanges {
  /** Source ids of the places the changes deleted, or that no longer are places. */
  retire: string[];
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
    .values({
      dataset: run.dataset,
      source: run.source,
      format: run.format,
      path: run.path,
      file_sha256: run.fileSha256,
      status: 'running',
      started_at: run.startedAt,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

/** An unfinished run to resume: its counters as its last commit left them, and the parts it wrote whole. */
export interface ResumableRun {
  id: number;
  source: string;
  counters: RunCounters;
  parts: Set<string>;
}

/**
 * The run a split release's import continues (migration 0034): the newest run of the dataset under the same
 * name (`path`, its first part and count of parts), when it did not complete. undefined when the newest one
 * completed, or there is none: the import starts a run of its own.
 */
export async function resumableRun(db: Db, dataset: string, path: string): Promise<ResumableRun | undefined> {
  const run = await db.kysely
    .selectFrom('import_runs')
    .selectAll()
    .where('dataset', '=', dataset)
    .where('path', '=', path)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!run || run.status === 'done') return undefined;
  const parts = await db.kysely.selectFrom('import_run_parts').select('part').where('run_id', '=', run.id).execute();
  return {
    id: Number(run.id),
    source: run.source,
    counters: {
      read_count: Number(run.read_count),
      imported_count: Number(run.imported_count),
      updated_count: Number(run.updated_count),
      unchanged_count: Number(run.unchanged_count),
      skipped_count: Number(run.skipped_count),
      skipped_reasons: JSON.parse(run.skipped_reasons ?? '{}') as Record<string, number>,
    },
    parts: new Set(parts.map((p) => p.part)),
  };
}

/** A resumed run is running again. */
export async function reopenRun(db: Db, runId: number): Promise<void> {
  await db.kysely.updateTable('import_runs').set({ status: 'running', error: null, finished_at: null }).where('id', '=', runId).execute();
}

/** A part of the run's release is written whole: resuming the run will not read it again. */
export async function recordRunPart(db: Db, runId: number, part: string, at: string): Promise<void> {
  await db.kysely
    .insertInto('import_run_parts')
    .values({ run_id: runId, part, finished_at: at })
    .onConflict((oc) => oc.columns(['run_id', 'part']).doNothing())
    .execute();
}

export async function failRun(db: Db, runId: number, error: string, at: string): Promise<void> {
  await db.kysely.updateTable('import_runs').set({ status: 'failed', error, finished_at: at }).where('id', '=', runId).execute();
}

/**
 * Completes a run: retires the places of its dataset (and source) that it did not see, and marks it done
 * with its counters, in one transaction. A place's `seen_run_id` is the last run that read it; the places
 * last seen by an older run of the same dataset are the ones this snapshot no longer holds. Only a
 * completed run retires: an interrupted one leaves every place as it was, and running the import again
 * completes it (its own run sees every place of the file again). Retired places keep their rows, ids and
 * content: the leads that point at them still show them, with `closed_at`.
 * Returns the number of places retired.
 */
export async function finishRun(
  db: Db,
  run: { id: number; dataset: string; source: string; changes?: RunChanges },
  fileSha256: string,
  counters: RunCounters,
  at: string,
  alsoInTransaction?: (trx: Transaction<Database>) => Promise<void>,
): Promise<number> {
  return db.kysely.transaction().execute(async (trx) => {
    let retiredCount = 0;
    if (run.changes) {
      // A change file: exactly the objects it deleted or untagged, whatever dataset last saw them.
      for (let i = 0; i < run.changes.retire.length; i += 5000) {
        retiredCount += await retirePlaces(trx, at, { source: run.source, sourceIds: run.changes.retire.slice(i, i + 5000) });
      }
    } else {
      const olderRuns = trx
        .selectFrom('import_runs')
        .select('id')
        .where('dataset', '=', run.dataset)
        .where('source', '=', run.source)
        .where('id', '<', run.id);
      retiredCount = await retirePlaces(trx, at, { seenByRuns: olderRuns });
    }
    await trx
      .updateTable('import_runs')
      .set({
        status: 'done',
        file_sha256: fileSha256,
        finished_at: at,
        read_count: counters.read_count,
        skipped_count: counters.skipped_count,
        skipped_reasons: JSON.stringify(counters.skipped_reasons),
        retired_count: retiredCount,
      })
      .where('id', '=', run.id)
      .execute();
    await alsoInTransaction?.(trx);
    return retiredCount;
  });
}

/** The datasets that completed runs of `source` imported, by name. */
export async function datasetsOfSource(db: Db, source: string): Promise<string[]> {
  const rows = await db.kysely
    .selectFrom('import_runs')
    .select('dataset')
    .distinct()
    .where('source', '=', source)
    .where('status', '=', 'done')
    .orderBy('dataset')
    .execute();
  return rows.map((r) => r.dataset);
}
