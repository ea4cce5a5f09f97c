import type { Transaction } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { Database } from '../../infra/db/schema.ts';
import { type ConflationSummary, conflate, remergeChanged } from '../conflation/conflation.service.ts';
import { createPlaceWriter, type RunCounters } from '../places/places.writer.ts';
import type { EnrichedChunk } from './enriched-chunks.ts';
import { failRun, finishRun, insertRun, markInterruptedRuns, type RunChanges, recordRunPart, reopenRun } from './import-runs.repository.ts';
import { geometryStoreOf } from './osm-geometry.repository.ts';

/** Places per transaction by default: fewer, larger commits write each dirtied index page fewer times. */
export const DEFAULT_BATCH_SIZE = 50_000;

/**
 * A transaction commits after this long even when it holds fewer places than the batch size: it holds
 * SQLite's write lock, and another process's writer waits for it (busy_timeout is 10 s).
 */
const MAX_TRANSACTION_MS = 1000;

/**
 * Places the writer adds between two indexings while it waits for chunks: each indexing writes FTS5's
 * buffered terms out as a segment, so indexing at every wait would write many small segments.
 */
const INDEX_STEP = 5000;

export interface RunInfo {
  /** The named snapshot the file is: completing the run retires the places of the dataset it did not see. */
  dataset: string;
  source: string;
  format: string;
  path: string;
  /** The file's SHA-256, or its promise: the run row holds '' until the import has written its last place. */
  fileSha256: string | Promise<string>;
  startedAt: string;
  /** Set when the file holds changes to the dataset (an `.osc`), not a snapshot of it: see `RunChanges`. */
  changes?: RunChanges;
  /** Written in the transaction that completes the run (a followed feed's position: `replication.repository.ts`). */
  onFinish?: (trx: Transaction<Database>) => Promise<void>;
}

export interface StoreOptions {
  /** Places per transaction. */
  batchSize?: number;
  /** A large file: the writer may tune its connection for it (a larger page cache on SQLite). */
  largeFile?: boolean;
  onProgress?: (counters: RunCounters, bytesRead: number) => void;
  /**
   * false: leave the run's records unconflated (they stay due, `place_match_due`, and the next import that
   * conflates takes them): for a bulk load of several files, or to measure what conflation costs.
   */
  conflate?: boolean;
  /**
   * Continue this unfinished run (`resumableRun`) rather than start one: its places keep it as their
   * `seen_run_id`, so completing it retires what neither attempt read. Its counters go on from these.
   */
  resume?: { runId: number; counters: RunCounters };
}

export interface StoredRun {
  runId: number;
  counters: RunCounters;
  /** Places of the dataset that the run retired when it completed. */
  retired: number;
  /** What conflation did with the run's records (records of different sources that are one business become one place). */
  conflation: ConflationSummary;
}

/**
 * The writing half of an import, on the calling thread: records a run, writes every chunk through the
 * PlaceWriter and completes the run (retiring what its dataset no longer holds, `finishRun`), or marks it
 * failed and rethrows. Places are written in transactions of `batchSize` together with the run's
 * counters, so a crash leaves whole transactions only; running the same import again skips rows whose
 * content hash is unchanged and completes the rest, and only then retires.
 */
export async function storeChunks(
  db: Db,
  info: RunInfo,
  chunks: AsyncIterable<EnrichedChunk>,
  options: StoreOptions = {},
): Promise<StoredRun> {
  const { batchSize = DEFAULT_BATCH_SIZE, onProgress } = options;
  const writer = createPlaceWriter(db);
  const geometry = geometryStoreOf(db);

  // A run still marked running was cut off (crash, kill -9): say so, this one takes over (or takes it up again).
  await markInterruptedRuns(db, info.path, new Date().toISOString());
  const { resume } = options;
  if (resume) await reopenRun(db, resume.runId);
  const runId = resume?.runId ?? (await insertRun(db, { ...info, fileSha256: typeof info.fileSha256 === 'string' ? info.fileSha256 : '' }));

  const counters: RunCounters = resume
    ? { ...resume.counters, skipped_reasons: { ...resume.counters.skipped_reasons } }
    : { read_count: 0, imported_count: 0, updated_count: 0, unchanged_count: 0, skipped_count: 0, skipped_reasons: {} };
  const conflation: ConflationSummary = { indexed: 0, merged: 0, remerged: 0 };
  const conflating = options.conflate ?? true;
  const restoreConnection = writer.tuneForImport(options.largeFile ?? false);
  const iterator = chunks[Symbol.asyncIterator]();
  let fileSha256 = '';
  try {
    let openedAt = 0;
    /** `writer.pending` when the writer last indexed (0 after a commit). */
    let indexedAt = 0;
    for (;;) {
      const next = iterator.next();
      // No chunk ready: the reading side is the slower one (a small file, a slow format). The writer
      // indexes what it has added while it waits, instead of all at the commit after the last chunk.
      if (writer.pending - indexedAt >= INDEX_STEP && (await Promise.race([next.then(() => false), nextTurn()]))) {
        await writer.index();
        indexedAt = writer.pending;
      }
      const step = await next;
      if (step.done) break;
      const chunk = step.value;
      // Idempotent upserts: after a crash the next run writes them again (on SQLite they join the open transaction).
      if (chunk.ways) await geometry.saveWays(chunk.ways);
      counters.read_count += chunk.read;
      for (const [reason, n] of Object.entries(chunk.skipped)) {
        counters.skipped_count += n;
        counters.skipped_reasons[reason] = (counters.skipped_reasons[reason] ?? 0) + n;
      }
      if (chunk.rows.count > 0 || writer.pending > 0) {
        if (writer.pending === 0) openedAt = performance.now();
        // A chunk of skipped records only joins an open transaction, to bring its counters up to date.
        const r = await writer.add(chunk.rows, runId, counters);
        counters.imported_count += r.imported;
        counters.updated_count += r.updated;
        counters.unchanged_count += r.unchanged;
        if (writer.pending >= batchSize || performance.now() - openedAt >= MAX_TRANSACTION_MS) {
          await writer.commit();
          indexedAt = 0;
        }
        // Committed: the new and changed records are conflated now, so a record of a business another
        // source has is on its own in search for one transaction at most.
        if (writer.pending === 0 && conflating) addConflation(conflation, await conflate(db));
      }
      if (chunk.partDone !== undefined) {
        // The part's places are committed before it is recorded: a crash in between reads it again, which is idempotent.
        if (writer.pending > 0) {
          await writer.commit();
          indexedAt = 0;
          if (conflating) addConflation(conflation, await conflate(db));
        }
        await recordRunPart(db, runId, chunk.partDone, new Date().toISOString());
      }
      onProgress?.(counters, chunk.bytesRead);
    }
    // Read alongside the import: done long before on a file that takes seconds to import.
    fileSha256 = await info.fileSha256;
    await writer.commit();
    if (conflating) addConflation(conflation, await conflate(db));
  } catch (error) {
    // As a for-await loop would: let the reader close its file.
    await iterator.return?.().catch(() => {});
    await writer.rollback();
    await failRun(db, runId, error instanceof Error ? error.message : String(error), new Date().toISOString());
    throw error;
  } finally {
    restoreConnection();
  }
  const retired = await finishRun(
    db,
    { id: runId, dataset: info.dataset, source: info.source, ...(info.changes ? { changes: info.changes } : {}) },
    fileSha256,
    counters,
    new Date().toISOString(),
    info.onFinish,
  );
  // A place of several sources keeps the records other sources still hold when this run retired one of its
  // own, and takes back a record that returned unchanged (counted as updated).
  if ((retired > 0 || counters.updated_count > 0) && conflating) conflation.remerged += await remergeChanged(db);
  return { runId, counters, retired, conflation };
}

function addConflation(total: ConflationSummary, step: ConflationSummary): void {
  total.indexed += step.indexed;
  total.merged += step.merged;
  total.remerged += step.remerged;
}

/**
 * Resolves true on the event loop's next turn, after messages already waiting (a worker's chunk) have
 * been delivered: a `Promise.race` with it tells whether a chunk is ready now.
 */
const nextTurn = (): Promise<boolean> => new Promise((resolve) => setImmediate(() => resolve(true)));
