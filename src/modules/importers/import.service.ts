import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { basename, resolve } from 'node:path';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import type { PlaceRecord } from '../places/place-record.ts';
import { createPlaceWriter, type RunCounters } from '../places/places.writer.ts';
import { enrichPlace, type Enricher } from './enrich.ts';
import { readerFactories, type OpenOptions, type ReaderFactory } from './readers/index.ts';

export interface ImportOptions extends OpenOptions {
  /** A format name from `readerFactories`, or undefined to detect it. */
  format?: string;
  batchSize?: number;
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

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Streams a file into the catalog. Each batch is written in its own transaction together with the
 * run's counters, so a crash leaves whole batches only; running the same import again skips rows
 * whose content hash is unchanged and completes the rest.
 */
export async function runImport(db: Db, enricher: Enricher, path: string, options: ImportOptions = {}): Promise<ImportSummary> {
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
  const reader = await factory.open(absolute, options);
  const writer = createPlaceWriter(db);
  const started = Date.now();

  // A run still marked running was cut off (crash, kill -9): say so, this one takes over.
  await db.kysely
    .updateTable('import_runs')
    .set({ status: 'failed', error: 'interrupted', finished_at: new Date().toISOString() })
    .where('status', '=', 'running')
    .where('path', '=', absolute)
    .execute();
  const run = await db.kysely
    .insertInto('import_runs')
    .values({
      source: reader.source,
      format: factory.format,
      path: absolute,
      file_sha256: await sha256File(absolute),
      status: 'running',
      started_at: new Date(started).toISOString(),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const runId = Number(run.id);

  const counters: RunCounters = {
    read_count: 0, imported_count: 0, updated_count: 0, unchanged_count: 0, skipped_count: 0, skipped_reasons: {},
  };
  const skip = (reason: string) => {
    counters.skipped_count++;
    counters.skipped_reasons[reason] = (counters.skipped_reasons[reason] ?? 0) + 1;
  };
  const batchSize = options.batchSize ?? 2000;
  let batch: PlaceRecord[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const r = await writer.writeBatch(batch, runId, counters);
    counters.imported_count += r.imported;
    counters.updated_count += r.updated;
    counters.unchanged_count += r.unchanged;
    batch = [];
    options.onProgress?.({ bytesRead: reader.bytesRead(), totalBytes: reader.totalBytes, counters });
  };

  try {
    for await (const item of reader.records()) {
      counters.read_count++;
      if (!item.ok) {
        skip(item.reason);
        continue;
      }
      const enriched = enrichPlace(reader.source, item.place, enricher);
      if (!enriched.ok) {
        skip(enriched.reason);
        continue;
      }
      batch.push(enriched.record);
      if (batch.length >= batchSize) await flush();
    }
    await flush();
  } catch (error) {
    await db.kysely
      .updateTable('import_runs')
      .set({ status: 'failed', error: error instanceof Error ? error.message : String(error), finished_at: new Date().toISOString() })
      .where('id', '=', runId)
      .execute();
    throw error;
  }
  await db.kysely
    .updateTable('import_runs')
    .set({
      status: 'done',
      finished_at: new Date().toISOString(),
      read_count: counters.read_count,
      skipped_count: counters.skipped_count,
      skipped_reasons: JSON.stringify(counters.skipped_reasons),
    })
    .where('id', '=', runId)
    .execute();
  const seconds = (Date.now() - started) / 1000;
  const stored = counters.imported_count + counters.updated_count + counters.unchanged_count;
  return {
    ...counters,
    runId,
    path: absolute,
    source: reader.source,
    format: factory.format,
    seconds,
    placesPerSecond: seconds > 0 ? stored / seconds : stored,
  };
}
