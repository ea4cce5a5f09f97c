import type { ServerResponse } from 'node:http';

/**
 * What "exported" means: a place becomes a lead of the account once the bytes that carry it have been
 * handed to the operating system for the client (the response's write callbacks), not when the export
 * read it from the database or when a format writer turned it into text. Bytes still in the server's
 * socket buffer when a client goes away are counted (they left the process; TCP gives no receipt for
 * them); bytes still queued in the process are not.
 *
 * Text formats (CSV, JSON, NDJSON, GeoJSON) are delivered batch by batch: the ledger knows where each
 * batch's text ends in the body, and records the batch once the body has been flushed that far. A
 * workbook (xlsx) is a zip file that is of no use cut short: its places count only once the whole file
 * has been flushed.
 */
export class DeliveryLedger {
  /** Body bytes produced so far by a text format (where the last finished batch ends). */
  private produced = 0;
  /** Body bytes handed to the operating system. */
  private flushed = 0;
  private readonly pending: Array<{ end: number; ids: number[] }> = [];
  private recording: Promise<void> = Promise.resolve();
  private failure: unknown;
  private delivered = 0;
  private closed = false;
  private drainWaiters: Array<() => void> = [];

  constructor(
    private readonly record: (ids: number[]) => Promise<void>,
    /** False for formats whose partial output is useless (xlsx): nothing counts before the whole file is flushed. */
    private readonly perBatch: boolean,
  ) {}

  /** A text format produced `bytes` more of the body. */
  produce(bytes: number): void {
    this.produced += bytes;
  }

  /** Every byte of this batch has been produced (the format writer asked for the next batch, or ended). */
  batchProduced(ids: number[]): void {
    this.pending.push({ end: this.perBatch ? this.produced : Number.POSITIVE_INFINITY, ids });
    this.settle();
  }

  /** The response handed `bytes` more body bytes to the operating system. */
  bodyFlushed(bytes: number): void {
    this.flushed += bytes;
    this.settle();
  }

  /**
   * The response is over. `complete`: every byte was flushed (the response finished), so every batch is
   * delivered; otherwise (the client went away, an error) only the batches flushed so far. Resolves with
   * the number of places recorded, once they are.
   */
  async close(complete: boolean): Promise<number> {
    if (complete) this.flushed = Number.POSITIVE_INFINITY;
    this.settle();
    this.pending.length = 0;
    this.closed = true;
    this.wakeDrainWaiters();
    await this.recording;
    if (this.failure !== undefined) throw this.failure;
    return this.delivered;
  }

  /**
   * Resolves once every batch produced so far has been flushed and recorded (or the response is over).
   * A text export waits for it before its last byte, so a client that has the whole file also has its
   * leads.
   */
  async drained(): Promise<void> {
    if (this.pending.length > 0 && !this.closed) await new Promise<void>((resolve) => this.drainWaiters.push(resolve));
    await this.recording;
  }

  private wakeDrainWaiters(): void {
    if (this.pending.length > 0 && !this.closed) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const wake of waiters) wake();
  }

  private settle(): void {
    while (this.pending.length > 0 && this.pending[0]!.end <= this.flushed) {
      const { ids } = this.pending.shift()!;
      // One batch at a time, in order: each is a short transaction of its own.
      this.recording = this.recording.then(async () => {
        if (this.failure !== undefined) return;
        try {
          await this.record(ids);
          this.delivered += ids.length;
        } catch (error) {
          this.failure = error;
        }
      });
    }
    this.wakeDrainWaiters();
  }
}

/**
 * Calls `onFlushed(bytes)` whenever the response has handed a body chunk to the operating system
 * (`ServerResponse.write`'s callback), however the body is written (Fastify pipes a stream into it).
 */
export function observeFlushedBody(res: ServerResponse, onFlushed: (bytes: number) => void): void {
  const write = res.write;
  type WriteCallback = (error?: Error | null) => void;
  res.write = function (
    this: ServerResponse,
    chunk: unknown,
    encodingOrCallback?: BufferEncoding | WriteCallback,
    callback?: WriteCallback,
  ): boolean {
    const done = typeof encodingOrCallback === 'function' ? encodingOrCallback : callback;
    const encoding = typeof encodingOrCallback === 'string' ? encodingOrCallback : undefined;
    const bytes = typeof chunk === 'string' ? Buffer.byteLength(chunk, encoding) : (chunk as Uint8Array).byteLength;
    const flushed: WriteCallback = (error) => {
      if (!error) onFlushed(bytes);
      done?.(error);
    };
    return (write as (chunk: unknown, encoding: BufferEncoding | undefined, callback: WriteCallback) => boolean).call(
      this,
      chunk,
      encoding,
      flushed,
    );
  } as ServerResponse['write'];
}
