import { createHash } from 'node:crypto';
import { open, stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { emptyPlaceRows } from '../places/place-record.ts';
import { placeWriterChunkSize, type RunCounters } from '../places/places.writer.ts';
import { checkDatasetName, datasetOfPath } from './dataset.ts';
import type { Enricher } from './enrich.ts';
import type { EnrichedChunk } from './enriched-chunks.ts';
import { sha256File } from './file-digest.ts';
import { resumableRun } from './import-runs.repository.ts';
import { DEFAULT_BATCH_SIZE, type StoredRun, storeChunks } from './import-store.ts';
import { type ChunkInput, inlineChunks, workerChunks } from './import-worker.host.ts';
import type { OpenOptions, ReaderFactory } from './importer.types.ts';
import { applyOsmChange, osmChangeFormat } from './osm-change.service.ts';
import { isHttpUrl } from './readers/http-range.ts';
import { readerFactories } from './readers/index.ts';
import { looksLikeOsmChange } from './readers/osm-change.ts';
import { parquetPlaces } from './readers/parquet-places.ts';

export interface ImportOptions extends OpenOptions {
  /** A format name from `readerFactories`, or undefined to detect it. */
  format?: string;
  /** Places per transaction (SQLite; PostgreSQL commits every chunk, of at most 5,000). */
  batchSize?: number;
  /** The dataset the file is a snapshot of; by default derived from the file name (`datasetOfPath`). */
  dataset?: string;
  onProgress?: (progress: ImportProgress) => void;
  /** false: records are not conflated by this import (the next one that does takes them); `StoreOptions.conflate`. */
  conflate?: boolean;
  /**
   * The parts of a release whose names carry the release (a publisher's URLs): each part written whole is
   * recorded, and an interrupted run of the same parts is continued, its written parts not read again
   * (`resumableRun`). Not for local files, whose names may stay while their content changes.
   */
  resume?: boolean;
}

export interface ImportProgress {
  bytesRead: number;
  totalBytes: number;
  counters: RunCounters;
  /** Parts written whole (those a resumed run had written included), and the release's parts. */
  partsDone: number;
  parts: number;
}

export interface ImportSummary extends RunCounters {
  runId: number;
  dataset: string;
  /** Places of the dataset that this snapshot no longer holds, retired when it completed. */
  retired_count: number;
  /** Records of the run that joined a place another source describes (`conflation/`). */
  merged_count: number;
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

/** A file from this size on is a large import (the writer may tune its connection for it). */
const LARGE_FILE_BYTES = 64 * 1024 * 1024;
/**
 * Or from this many records, when the format says how many it holds: about what 64 MB of Overture NDJSON
 * holds. A GeoParquet file holds several times the places of NDJSON in a byte, so its size alone would
 * leave a file of hundreds of thousands of places a small import.
 */
const LARGE_FILE_RECORDS = 50_000;

/**
 * Streams a file into the catalog: detects its format, reads and enriches it (`import-worker.host.ts`),
 * and writes it (`import-store.ts`), recording the run (`import-runs.repository.ts`).
 *
 * `path` may also be the parts of one release split into several files (Overture and Foursquare publish
 * hundreds of Parquet files): they are read one after the other into ONE run, so completing it retires
 * the places of the dataset that no part holds. The parts must be of one format and source.
 *
 * With `enricher` null, reading and enriching run on a worker thread while this thread writes
 * (what the CLI and the server do); with an Enricher, everything runs on this thread.
 */
export async function runImport(
  db: Db,
  enricher: Enricher | null,
  path: string | readonly string[],
  options: ImportOptions = {},
): Promise<ImportSummary> {
  const paths = typeof path === 'string' ? [path] : [...path];
  if (paths.length === 0)
    throw new AppError('validation_failed', 'no file to import', { errors: [{ field: 'files', message: 'at least one' }] });
  const parts: Array<{ path: string; remote: boolean }> = [];
  for (const p of paths) {
    const remote = isHttpUrl(p);
    if (remote && options.format !== undefined && options.format !== parquetPlaces.format) {
      throw new AppError('validation_failed', `a URL is read as Parquet, not ${options.format}`, {
        errors: [{ field: 'format', message: 'only Parquet is read from a URL', allowed: [parquetPlaces.format] }],
      });
    }
    const absolute = remote ? p : resolve(p);
    if (!remote) {
      await stat(absolute).catch(() => {
        throw new AppError('not_found', `no such file: ${p}`);
      });
    }
    parts.push({ path: absolute, remote });
  }
  const first = parts[0]!;
  if (parts.length === 1 && !first.remote) {
    if (options.format === osmChangeFormat || (options.format === undefined && (await isChangeFile(first.path))))
      return importChanges(db, first.path, options);
  }
  const factories: ReaderFactory[] = [];
  for (const part of parts) factories.push(await factoryOf(part, options.format));
  const factory = factories[0]!;
  const other = factories.findIndex((f) => f !== factory);
  if (other >= 0) {
    throw new AppError(
      'validation_failed',
      `the parts of one dataset must be of one format: ${basename(parts[other]!.path)} is ${factories[other]!.format}, not ${factory.format}`,
      {
        errors: [{ field: 'files', message: 'parts of different formats', allowed: [factory.format] }],
      },
    );
  }
  const dataset = options.dataset !== undefined ? checkDatasetName(options.dataset) : datasetOfPath(first.path);
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const chunkSize = Math.min(batchSize, placeWriterChunkSize(db));
  const openOptions: OpenOptions = {
    ...(options.encoding ? { encoding: options.encoding } : {}),
    ...(options.source ? { source: options.source } : {}),
    ...(options.columns ? { columns: options.columns } : {}),
    ...(options.bbox ? { bbox: options.bbox } : {}),
    ...(options.country ? { country: options.country } : {}),
    ...(options.minConfidence !== undefined ? { minConfidence: options.minConfidence } : {}),
    ...(options.areas ? { areas: options.areas } : {}),
    ...(options.border ? { border: options.border } : {}),
    ...(options.http ? { http: options.http } : {}),
  };
  const selecting = openOptions.bbox || openOptions.country || openOptions.minConfidence !== undefined || openOptions.areas;
  if (selecting && factory.format !== parquetPlaces.format) {
    throw new AppError('validation_failed', `--bbox, --country and --min-confidence apply to Parquet files, not ${factory.format}`, {
      errors: [{ field: 'format', message: 'row selection is read from Parquet only', allowed: [parquetPlaces.format] }],
    });
  }
  // The clock starts before the worker does: loading the taxonomy and gazetteer is part of the wait.
  const started = Date.now();
  // The file's digest is read on a thread of its own while the import runs; the run records it at the end.
  // A remote file is not downloaded whole to hash it: its run records no digest. Parts: the digest of their digests.
  const digest = parts.some((p) => p.remote) ? Promise.resolve('') : digestOfParts(parts.map((p) => p.path));
  digest.catch(() => {}); // awaited by storeChunks; a failure before then is not an unhandled rejection
  const openPart = (part: string) =>
    enricher
      ? inlineChunks(factory, part, openOptions, enricher, chunkSize)
      : workerChunks({ path: part, format: factory.format, options: openOptions, batchSize: chunkSize });
  // A run is named by its first part; the count of parts keeps a run of a split release apart from one of its first file.
  const runPath = parts.length === 1 ? first.path : `${first.path} (+${parts.length - 1} ${parts.length === 2 ? 'part' : 'parts'})`;
  const resumed = options.resume ? await resumableRun(db, dataset, runPath) : undefined;
  const toRead = resumed ? parts.filter((p) => !resumed.parts.has(p.path)) : parts;
  const input = await partChunks(toRead, openPart, { markParts: options.resume === true, source: resumed?.source });
  const partsBefore = parts.length - toRead.length;
  let run: StoredRun;
  try {
    run = await storeChunks(
      db,
      {
        dataset,
        source: input.source,
        format: factory.format,
        path: runPath,
        fileSha256: digest,
        startedAt: new Date(started).toISOString(),
      },
      input.chunks,
      {
        batchSize,
        largeFile: input.totalBytes() >= LARGE_FILE_BYTES || input.totalRecords >= LARGE_FILE_RECORDS,
        ...(options.conflate === false ? { conflate: false } : {}),
        ...(resumed ? { resume: { runId: resumed.id, counters: resumed.counters } } : {}),
        ...(options.onProgress
          ? {
              onProgress: (counters, bytesRead) =>
                options.onProgress!({
                  bytesRead,
                  totalBytes: input.totalBytes(),
                  counters,
                  partsDone: partsBefore + input.partsDone(),
                  parts: parts.length,
                }),
            }
          : {}),
      },
    );
  } finally {
    await input.close();
  }
  return summarize(run, { dataset, path: runPath, source: input.source, format: factory.format }, started);
}

/** The reader of one part: Parquet for a URL, else the given format or the detected one. */
async function factoryOf(part: { path: string; remote: boolean }, format: string | undefined): Promise<ReaderFactory> {
  if (part.remote) return parquetPlaces;
  if (format === undefined) return detectFormat(part.path);
  const found = readerFactories.find((f) => f.format === format);
  if (!found) {
    throw new AppError('unknown_value', `unknown format ${format}`, {
      errors: [{ field: 'format', message: 'unknown format', allowed: [...readerFactories.map((f) => f.format), osmChangeFormat] }],
    });
  }
  return found;
}

/** The digest of one file, or for several parts the SHA-256 of their digests in order. */
async function digestOfParts(paths: string[]): Promise<string> {
  if (paths.length === 1) return sha256File(paths[0]!);
  const digests: string[] = [];
  for (const p of paths) digests.push(await sha256File(p));
  return createHash('sha256').update(digests.join('\n')).digest('hex');
}

/**
 * The chunks of every part in turn, as one input: a part is opened when the one before it is read (one
 * reader at a time, so memory stays that of one file). `bytesRead` counts on across parts; the total
 * grows as each part is opened (a URL's size is known once its reader has it). `markParts`: a chunk marks
 * the end of each part (`EnrichedChunk.partDone`). No part at all (a resumed run whose parts are all
 * written) is an input without chunks, of the `source` given.
 */
async function partChunks(
  parts: ReadonlyArray<{ path: string }>,
  open: (path: string) => Promise<ChunkInput>,
  options: { markParts: boolean; source?: string | undefined },
): Promise<{
  source: string;
  totalBytes: () => number;
  /** The first part's records when its format says (the other parts are opened later). */
  totalRecords: number;
  /** Parts read to their end. */
  partsDone: () => number;
  chunks: AsyncIterable<EnrichedChunk>;
  close(): Promise<void>;
}> {
  if (parts.length === 0) {
    async function* none(): AsyncGenerator<EnrichedChunk> {}
    return {
      source: options.source ?? '',
      totalBytes: () => 0,
      totalRecords: 0,
      partsDone: () => 0,
      chunks: none(),
      close: async () => {},
    };
  }
  let current = await open(parts[0]!.path);
  const source = current.source;
  let before = 0;
  let total = current.totalBytes;
  let done = 0;
  async function* chunks(): AsyncGenerator<EnrichedChunk> {
    for (let i = 0; ; ) {
      for await (const chunk of current.chunks) yield { ...chunk, bytesRead: before + chunk.bytesRead };
      before += current.totalBytes;
      done++;
      if (options.markParts) yield { rows: emptyPlaceRows(), read: 0, skipped: {}, bytesRead: before, partDone: parts[i]!.path };
      if (++i >= parts.length) return;
      await current.close();
      current = await open(parts[i]!.path);
      if (current.source !== source) {
        throw new AppError(
          'validation_failed',
          `the parts of one dataset must be of one source: ${basename(parts[i]!.path)} is ${current.source}, not ${source}`,
          {
            errors: [{ field: 'files', message: 'parts of different sources', allowed: [source] }],
          },
        );
      }
      total = before + current.totalBytes;
    }
  }
  return {
    source,
    totalBytes: () => total,
    totalRecords: current.totalRecords ?? 0,
    partsDone: () => done,
    chunks: chunks(),
    close: () => current.close(),
  };
}

/** A completed run as `runImport` reports it, timed from `started` (ms). */
function summarize(run: StoredRun, about: Pick<ImportSummary, 'dataset' | 'path' | 'source' | 'format'>, started: number): ImportSummary {
  const seconds = (Date.now() - started) / 1000;
  const { counters } = run;
  const stored = counters.imported_count + counters.updated_count + counters.unchanged_count;
  return {
    ...counters,
    ...about,
    runId: run.runId,
    retired_count: run.retired,
    merged_count: run.conflation.merged,
    seconds,
    placesPerSecond: seconds > 0 ? stored / seconds : stored,
  };
}

/** Whether a file is an OpenStreetMap change file (`.osc`, `.osc.gz`, or osmChange XML by its content). */
export async function isChangeFile(path: string): Promise<boolean> {
  return looksLikeOsmChange(path, await readHead(path));
}

/** A change file applied to its dataset (`osm-change.service.ts`), summed up as an import run. */
async function importChanges(db: Db, path: string, options: ImportOptions): Promise<ImportSummary> {
  const started = Date.now();
  const { run, dataset, source } = await applyOsmChange(db, path, {
    ...(options.dataset !== undefined ? { dataset: options.dataset } : {}),
    ...(options.source ? { source: options.source } : {}),
  });
  return summarize(run, { dataset, path, source, format: osmChangeFormat }, started);
}
