import { parentPort, workerData } from 'node:worker_threads';
import { AppError } from '../../infra/errors.ts';
import { enrichedChunks } from './enriched-chunks.ts';
import { loadEnricher } from './enricher.ts';
import type { FromWorker, ToWorker, WorkerJob } from './import-worker.protocol.ts';
import type { OpenOptions } from './importer.types.ts';
import { readerFactories } from './readers/index.ts';

/**
 * Import worker: reads and enriches on its own thread while the main thread writes, so parsing,
 * classification, gazetteer look-ups and phone parsing overlap with SQLite's work.
 * Keeps at most `MAX_AHEAD_PLACES` places in flight, in chunks: the main thread acknowledges each chunk it
 * has written. 50,000 places (tens of MB) cover one writer transaction: while the writer fills the
 * indexes of a transaction's places before it commits, this thread goes on reading instead of waiting.
 */
const job = workerData as WorkerJob;
const port = parentPort!;
const MAX_AHEAD_PLACES = 50_000;
const maxAhead = Math.max(2, Math.ceil(MAX_AHEAD_PLACES / job.batchSize));
let credits = maxAhead;
let wake: (() => void) | undefined;
port.on('message', (m: ToWorker) => {
  if (m.type === 'ack') {
    credits++;
    wake?.();
  }
});
const post = (m: FromWorker) => port.postMessage(m);

try {
  const factory = readerFactories.find((f) => f.format === job.format);
  if (!factory) throw new Error(`unknown format ${job.format}`);
  const reader = await factory.open(job.path, job.options as OpenOptions);
  const enricher = loadEnricher();
  post({
    type: 'open',
    source: reader.source,
    totalBytes: reader.totalBytes,
    ...(reader.totalRecords !== undefined ? { totalRecords: reader.totalRecords } : {}),
  });
  for await (const chunk of enrichedChunks(
    reader,
    enricher,
    job.batchSize,
    (job.options as OpenOptions).border ? { border: (job.options as OpenOptions).border! } : {},
  )) {
    while (credits === 0) await new Promise<void>((resolve) => (wake = resolve));
    credits--;
    post({ type: 'chunk', chunk });
  }
  post({ type: 'done' });
} catch (error) {
  post({
    type: 'error',
    message: error instanceof Error ? error.message : String(error),
    ...(error instanceof AppError ? { appError: { code: error.code, extras: error.extras } } : {}),
  });
}
