import { Worker } from 'node:worker_threads';
import { AppError } from '../../infra/errors.ts';
import type { Enricher } from './enrich.ts';
import { type EnrichedChunk, enrichedChunks } from './enriched-chunks.ts';
import type { FromWorker, ToWorker, WorkerJob } from './import-worker.protocol.ts';
import type { OpenOptions, ReaderFactory } from './importer.types.ts';

/** The reading side of an import as the writer sees it: enriched chunks of places, in file order. */
export interface ChunkInput {
  source: string;
  totalBytes: number;
  /** `SourceReader.totalRecords`. */
  totalRecords?: number;
  chunks: AsyncIterable<EnrichedChunk>;
  close(): Promise<void>;
}

/** Reads and enriches on the calling thread (tests, benchmarks of one thread). */
export async function inlineChunks(
  factory: ReaderFactory,
  path: string,
  options: OpenOptions,
  enricher: Enricher,
  chunkSize: number,
): Promise<ChunkInput> {
  const reader = await factory.open(path, options);
  return {
    source: reader.source,
    totalBytes: reader.totalBytes,
    ...(reader.totalRecords !== undefined ? { totalRecords: reader.totalRecords } : {}),
    chunks: enrichedChunks(reader, enricher, chunkSize, options.border ? { border: options.border } : {}),
    close: async () => {},
  };
}

/** The worker module: compiled JS in the build; under TypeScript a bootstrap that registers tsx in the thread first. */
function importWorkerFile(): URL {
  return new URL(import.meta.url.endsWith('.ts') ? './import-worker-tsx.mjs' : './import.worker.js', import.meta.url);
}

/**
 * Reads and enriches on a worker thread (`import.worker.ts`) while this thread writes: the main side of the
 * protocol in `import-worker.protocol.ts`. Each chunk taken is acknowledged, which lets the worker read
 * on, a bounded number of places ahead.
 */
export async function workerChunks(job: WorkerJob): Promise<ChunkInput> {
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
    ...(first.totalRecords !== undefined ? { totalRecords: first.totalRecords } : {}),
    chunks: chunks(),
    // The worker keeps listening for acknowledgements, so it ends only when terminated.
    close: async () => {
      await worker.terminate();
    },
  };
}
