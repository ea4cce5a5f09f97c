import type { AppErrorExtras, ErrorCode } from '../../infra/errors.ts';
import type { EnrichedChunk } from './enriched-chunks.ts';
import type { OpenOptions } from './importer.types.ts';

/** What the main thread gives the import worker. */
export interface WorkerJob {
  path: string;
  format: string;
  options: OpenOptions;
  batchSize: number;
}

export type ToWorker = { type: 'ack' };

export type FromWorker =
  | { type: 'open'; source: string; totalBytes: number; totalRecords?: number }
  | { type: 'chunk'; chunk: EnrichedChunk }
  | { type: 'done' }
  | { type: 'error'; message: string; appError?: { code: ErrorCode; extras: AppErrorExtras } };
