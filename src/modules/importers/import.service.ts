import { open, stat } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { basename, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { createPlaceWriter, type RunCounters } from '../places/places.writer.ts';
import type { Enricher } from './enrich.ts';
import { enrichedChunks, type EnrichedChunk } from './enriched-chunks.ts';
import type { FromWorker, ToWorker, WorkerJob } from './import-worker.protocol.ts';
import { readerFactories, type OpenOptions, type ReaderFactory } from './readers/index.ts';

export interface ImportOptions extends OpenOptions {
  /** A format name from `readerFactories`, or undefined to detect it. */
  format?: string;
  /** Places per transaction (SQLite; PostgreSQL commits every chunk, of at most 5,000). */
  batchSize?: number;
  /** A transaction commits after this long even when it holds fewer places (default MAX_TRANSACTION_MS). */
  maxTransactionMs?: number;
  onProgress?: (progress: ImportProgress) => void;
}

export interface ImportProgress {
  bytesRead: number;
  totalBytes: number;
  counters: RunCounters;
}

export interface ImportSummary extends RunCounters {
  runId: number;
  path: string;
  source: string;
  format: string;
  seconds: number;
  /** Places stored or confirmed per second of wall time. */
  placesPerSecond: number;
}

export async function detectFormat(path: string): Promise<ReaderFactory> {
  const head = await readHead(path);
  const found = readerFactories.find((f) => f.detect(path, head));
  if (!found) {
    throw new AppError('unknown_value', `cannot tell the format of ${basename(path)}; pass --format`, {
      errors: [{ field: 'format', message: 'not detected', allowed: readerFactories.map((f) => f.format) }],
    });
  }
  return found;
}

/** First 64 KiB of the file, decompressed when it is gzip. */
export async function readHead(path: string): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const buf = Buffer.alloc(65536);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    const head = buf.subarray(0, bytesRead);
    if (head[0] === 0x1f && head[1] === 0x8b) {
      try {
        return gunzipSync(head, { finishFlush: 2 /* Z_SYNC_FLUSH: a truncated stream is fine */ }).subarray(0, 65536);
      } catch {
        return Buffer.alloc(0);
      }
    }
    return head;
  } finally {
    await handle.close();
  }
}

const digestThread = `
const { createHash } = require('node:crypto');
const { createReadStream } = require('node:fs');
const { workerData, parentPort } = require('node:worker_threads');
const hash = createHash('sha256');
createReadStream(workerData, { highWaterMark: 1 << 20 })
  .on('data', (chunk) => hash.update(chunk))
  .on('error', (error) => parentPort.postMessage({ error: error.message }))
  .on('end', () => parentPort.postMessage({ digest: hash.digest('hex') }));
`;

/**
 * The file's SHA-256, read and hashed on a thread of its own while the import runs. On the writing thread
 * it cost ~2 ms of its CPU a MB, and the writer waited for the whole file's digest before its first chunk
 * (a 164 MB file: ~0.4 s, the worker stalled meanwhile once ten chunks were waiting).
 */
function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(digestThread, { eval: true, workerData: path });
    worker.once('message', (m: { digest?: string; error?: string }) => (m.digest ? resolve(m.digest) : reject(new Error(`cannot read ${path}: ${m.error}`))));
    worker.once('error', reject);
    // After a message this settles nothing: the promise is settled already.
    worker.once('exit', (code) => reject(new Error(`the digest thread for ${path} exited with code ${code}`)));
  });
}

/** Places per transaction by default: fewer, larger commits write each dirtied index page fewer times. */
export const DEFAULT_BATCH_SIZE = 50_000;

/**
 * Places per chunk from the reading side: the unit of hand-over between threads, and of progress. Small,
 * because a chunk lives through the garbage collections that happen while it is built (worker) and
 * written (writer): every young-generation collection copies it. 200,000 NDJSON places, `--trace-gc`:
 * chunks of 5,000 cost the worker's scavenges 790–960 ms and the writer's 195–270 ms; chunks of 500,
 * 290–390 ms and 45–80 ms. Below 500 it saved little more.
 */
const CHUNK_SIZE = 500;

/** PostgreSQL's writer commits every chunk: there a chunk is a transaction, and larger ones commit less often. */
const POSTGRES_CHUNK_SIZE = 5000;

/**
 * Places the writer adds between two indexings while it waits for chunks. With chunks of 500, indexing at
 * every wait wrote FTS5 segments ten times as often: the writer's instructions went from 137.6k to
 * 150.8k a place (callgrind, 40,000 NDJSON places), most of it in fts5IndexFlush.
 */
const INDEX_STEP = 5000;

/** A file from this size on is a large import: it gets a larger page cache. */
const LARGE_FILE_BYTES = 64 * 1024 * 1024;

/**
 * A transaction commits after this long even when it holds fewer places than the batch size: it holds
 * SQLite's write lock, and another process's writer waits for it (busy_timeout is 10 s).
 */
const MAX_TRANSACTION_MS = 1000;

/**
 * Streams a file into the catalog. Places are written in transactions of `batchSize` together with the
 * run's counters, so a crash leaves whole transactions only; running the same import again skips rows
 * whose content hash is unchanged and completes the rest.
 *
 * With `enricher` null, reading and enriching run on a worker thread while this thread writes
 * (what the CLI and the server do); with an Enricher, everything runs on this thread.
 */
export async function runImport(db: Db, enricher: Enricher | null, path: string, options: ImportOptions = {}): Promise<ImportSummary> {
  const absolute = resolve(path);
  await stat(absolute).catch(() => {
    throw new AppError('not_found', `no such file: ${path}`);
  });
  const factory = options.format ? readerFactories.find((f) => f.format === options.format) : await detectFormat(absolute);
  if (!factory) {
    throw new AppError('unknown_value', `unknown format ${options.format}`, {
      errors: [{ field: 'format', message: 'unknown format', allowed: readerFactories.map((f) => f.format) }],
    });
  }
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const chunkSize = Math.min(batchSize, db.dialect === 'sqlite' ? CHUNK_SIZE : POSTGRES_CHUNK_SIZE);
  const openOptions: OpenOptions = {
    ...(options.encoding ? { encoding: options.encoding } : {}),
    ...(options.source ? { source: options.source } : {}),
    ...(options.columns ? { columns: options.columns } : {}),
  };
  // The clock starts before the worker does: loading the taxonomy and gazetteer is part of the wait.
  const started = Date.now();
  // The file's digest is read on a thread of its own while the import runs; the run records it at the end.
  const digest = sha256File(absolute);
  digest.catch(() => {}); // awaited by storeChunks; a failure before then is not an unhandled rejection
  const input = enricher
    ? await inlineChunks(factory, absolute, openOptions, enricher, chunkSize)
    : await workerChunks({ path: absolute, format: factory.format, options: openOptions, batchSize: chunkSize });
  let run: StoredRun;
  try {
    run = await storeChunks(
      db,
      { source: input.source, format: factory.format, path: absolute, fileSha256: digest, startedAt: new Date(started).toISOString() },
      input.chunks,
      {
        batchSize,
        ...(options.maxTransactionMs !== undefined ? { maxTransactionMs: options.maxTransactionMs } : {}),
        largeCache: input.totalBytes >= LARGE_FILE_BYTES,
        ...(options.onProgress ? { onProgress: (counters, bytesRead) => options.onProgress!({ bytesRead, totalBytes: input.totalBytes, counters }) } : {}),
      },
    );
  } finally {
    await input.close();
  }
  const { runId, counters } = run;
  const seconds = (Date.now() - started) / 1000;
  const stored = counters.imported_count + counters.updated_count + counters.unchanged_count;
  return {
    ...counters,
    runId,
    path: absolute,
    source: input.source,
    format: factory.format,
    seconds,
    placesPerSecond: seconds > 0 ? stored / seconds : stored,
  };
}

export interface RunInfo {
  source: string;
  format: string;
  path: string;
  /** The file's SHA-256, or its promise: the run row holds '' until the import has written its last place. */
  fileSha256: string | Promise<string>;
  startedAt: string;
}

export interface StoreOptions {
  /** Places per transaction. */
  batchSize?: number;
  /**
   * Milliseconds after which a transaction commits with fewer places (default MAX_TRANSACTION_MS). A
   * benchmark that counts instructions under valgrind, 50 times slower, sets it out of reach so that the
   * commits fall where they would at full speed.
   */
  maxTransactionMs?: number;
  /** A page cache of IMPORT_CACHE_KIB for the import (SQLite). */
  largeCache?: boolean;
  onProgress?: (counters: RunCounters, bytesRead: number) => void;
}

export interface StoredRun {
  runId: number;
  counters: RunCounters;
}

/**
 * The writing half of an import, on the calling thread: records a run, writes every chunk through the
 * PlaceWriter and marks the run done (or failed, and rethrows). Exported for the writer's benchmark.
 */
export async function storeChunks(
  db: Db,
  info: RunInfo,
  chunks: AsyncIterable<EnrichedChunk>,
  options: StoreOptions = {},
): Promise<StoredRun> {
  const { batchSize = DEFAULT_BATCH_SIZE, maxTransactionMs = MAX_TRANSACTION_MS, onProgress } = options;
  const writer = createPlaceWriter(db);

  // A run still marked running was cut off (crash, kill -9): say so, this one takes over.
  await db.kysely
    .updateTable('import_runs')
    .set({ status: 'failed', error: 'interrupted', finished_at: new Date().toISOString() })
    .where('status', '=', 'running')
    .where('path', '=', info.path)
    .execute();
  const run = await db.kysely
    .insertInto('import_runs')
    .values({
      source: info.source,
      format: info.format,
      path: info.path,
      file_sha256: typeof info.fileSha256 === 'string' ? info.fileSha256 : '',
      status: 'running',
      started_at: info.startedAt,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const runId = Number(run.id);

  const counters: RunCounters = {
    read_count: 0, imported_count: 0, updated_count: 0, unchanged_count: 0, skipped_count: 0, skipped_reasons: {},
  };
  const restorePragmas = importPragmas(db, options.largeCache ?? false);
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
      // At least INDEX_STEP places at a time: each indexing writes FTS5's buffered terms out as a segment.
      if (writer.pending - indexedAt >= INDEX_STEP && (await Promise.race([next.then(() => false), nextTurn()]))) {
        await writer.index();
        indexedAt = writer.pending;
      }
      const step = await next;
      if (step.done) break;
      const chunk = step.value;
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
        if (writer.pending >= batchSize || performance.now() - openedAt >= maxTransactionMs) {
          await writer.commit();
          indexedAt = 0;
        }
      }
      onProgress?.(counters, chunk.bytesRead);
    }
    // Read alongside the import: done long before on a file that takes seconds to import.
    fileSha256 = await info.fileSha256;
    await writer.commit();
  } catch (error) {
    // As a for-await loop would: let the reader close its file.
    await iterator.return?.().catch(() => {});
    await writer.rollback();
    await db.kysely
      .updateTable('import_runs')
      .set({ status: 'failed', error: error instanceof Error ? error.message : String(error), finished_at: new Date().toISOString() })
      .where('id', '=', runId)
      .execute();
    throw error;
  } finally {
    restorePragmas();
  }
  await db.kysely
    .updateTable('import_runs')
    .set({
      status: 'done',
      file_sha256: fileSha256,
      finished_at: new Date().toISOString(),
      read_count: counters.read_count,
      skipped_count: counters.skipped_count,
      skipped_reasons: JSON.stringify(counters.skipped_reasons),
    })
    .where('id', '=', runId)
    .execute();
  return { runId, counters };
}

/**
 * Resolves true on the event loop's next turn, after messages already waiting (a worker's chunk) have
 * been delivered: a `Promise.race` with it tells whether a chunk is ready now.
 */
const nextTurn = (): Promise<boolean> => new Promise((resolve) => setImmediate(() => resolve(true)));

/** WAL pages between automatic checkpoints while an import writes (SQLite's default is 1,000: 4 MB). */
const IMPORT_CHECKPOINT_PAGES = 25_000;

/** Page cache while a large import writes, in KiB (an import's connection usually has 16 MB). */
const IMPORT_CACHE_KIB = 65_536;

/**
 * SQLite, for the import's duration:
 * - checkpoints every ~100 MB of WAL instead of every 4 MB. Each checkpoint copies back and syncs the
 *   pages the transactions dirtied, and the index on random keys (public ids) dirties pages
 *   all over the file: fewer checkpoints copy each page fewer times. The next commit after the import
 *   (the run's final status) checkpoints with the usual setting again, inside the timed import.
 * - for a large file, a page cache of up to 64 MB, so that more of a transaction's dirty pages stay in
 *   memory until it commits instead of spilling into the WAL (and being written again) when the cache is
 *   full: 500,000 places, ~0.5 µs less a place than with 16 MB (256 MB: ~1 µs, for 150 MB more memory).
 *   The pages are allocated as they are used and freed when the usual size is set back. Small files
 *   (the server's demo data at start) keep the connection's cache.
 */
function importPragmas(db: Db, largeCache: boolean): () => void {
  const handle = db.sqlite;
  if (!handle) return () => {};
  const cache = handle.pragma('cache_size', { simple: true }) as number;
  const cacheKiB = cache < 0 ? -cache : (cache * (handle.pragma('page_size', { simple: true }) as number)) / 1024;
  const raiseCache = largeCache && cacheKiB < IMPORT_CACHE_KIB;
  if (raiseCache) handle.pragma(`cache_size = -${IMPORT_CACHE_KIB}`);
  const checkpoints = db.sqlitePath ? (handle.pragma('wal_autocheckpoint', { simple: true }) as number) : 0;
  // 0: checkpoints were turned off on purpose; leave them so.
  if (checkpoints > 0) handle.pragma(`wal_autocheckpoint = ${Math.max(checkpoints, IMPORT_CHECKPOINT_PAGES)}`);
  return () => {
    if (raiseCache) handle.pragma(`cache_size = ${cache}`);
    if (checkpoints > 0) handle.pragma(`wal_autocheckpoint = ${checkpoints}`);
  };
}

interface ChunkInput {
  source: string;
  totalBytes: number;
  chunks: AsyncIterable<EnrichedChunk>;
  close(): Promise<void>;
}

async function inlineChunks(factory: ReaderFactory, path: string, options: OpenOptions, enricher: Enricher, batchSize: number): Promise<ChunkInput> {
  const reader = await factory.open(path, options);
  return { source: reader.source, totalBytes: reader.totalBytes, chunks: enrichedChunks(reader, enricher, batchSize), close: async () => {} };
}

/** The worker module: compiled JS in the build; under TypeScript a bootstrap that registers tsx in the thread first. */
function importWorkerFile(): URL {
  return new URL(import.meta.url.endsWith('.ts') ? './import-worker-tsx.mjs' : './import.worker.js', import.meta.url);
}

async function workerChunks(job: WorkerJob): Promise<ChunkInput> {
  const worker = new Worker(importWorkerFile(), { workerData: job, resourceLimits: { maxYoungGenerationSizeMb: 96 } });
  const queue: FromWorker[] = [];
  let wake: (() => void) | undefined;
  const push = (m: FromWorker) => {
    queue.push(m);
    wake?.();
  };
  worker.on('message', push);
  worker.on('error', (error) => push({ type: 'error', message: error.message }));
  worker.on('exit', (code) => {
    if (code !== 0) push({ type: 'error', message: `import worker exited with code ${code}` });
  });
  const next = async (): Promise<FromWorker> => {
    while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    return queue.shift()!;
  };
  const toError = (m: Extract<FromWorker, { type: 'error' }>) =>
    m.appError ? new AppError(m.appError.code, m.message, m.appError.extras) : new Error(m.message);

  const first = await next();
  if (first.type === 'error') {
    await worker.terminate();
    throw toError(first);
  }
  if (first.type !== 'open') throw new Error(`import worker: unexpected ${first.type}`);
  async function* chunks(): AsyncGenerator<EnrichedChunk> {
    for (;;) {
      const m = await next();
      if (m.type === 'done') return;
      if (m.type === 'error') throw toError(m);
      if (m.type === 'chunk') {
        yield m.chunk;
        worker.postMessage({ type: 'ack' } satisfies ToWorker);
      }
    }
  }
  return {
    source: first.source,
    totalBytes: first.totalBytes,
    chunks: chunks(),
    // The worker keeps listening for acknowledgements, so it ends only when terminated.
    close: async () => {
      await worker.terminate();
    },
  };
}
