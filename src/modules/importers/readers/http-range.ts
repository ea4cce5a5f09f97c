import { AppError } from '../../../infra/errors.ts';
import { type GuardedAnswer, guardedGet } from '../../../infra/http/guarded-get.ts';
import type { HttpReadOptions } from '../importer.types.ts';
import type { CountingBuffer } from './parquet.ts';

export const isHttpUrl = (location: string): boolean => /^https?:\/\//i.test(location);

const DEFAULT_TIMEOUT_MS = 30_000;

const unreadable = (url: string, message: string) =>
  new AppError('validation_failed', `cannot read ${url}: ${message}`, { errors: [{ field: 'file', message }] });

/**
 * A remote file as an AsyncBuffer, read through HTTP range requests (a Parquet reader asks for the footer, then
 * for the column chunks it needs), so a part of a release is read without downloading the whole file. The URL
 * is checked like any outbound request (`guardTarget`: no private addresses unless allowed), every request is
 * bounded in time and in bytes (what it asked for), and redirects are not followed.
 */
export async function httpRangeBuffer(url: string, options: HttpReadOptions): Promise<CountingBuffer> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let read = 0;
  // Only a 206 is a part of the file: an error page, or the whole file from a server that ignores Range, is not read.
  const get = async (start: number, end: number): Promise<GuardedAnswer> => {
    let answer: GuardedAnswer;
    try {
      answer = await guardedGet(url, {
        allowPrivate: options.allowPrivate === true,
        timeoutMs,
        maxBytes: end - start,
        headers: { ...options.headers, range: `bytes=${start}-${end - 1}` },
        keep: (status) => status === 206,
      });
    } catch (error) {
      throw unreadable(url, (error as Error).message);
    }
    if (answer.status !== 206)
      throw unreadable(url, `HTTP ${answer.status} to a range request (the server must answer 206 Partial Content)`);
    read += answer.body.length;
    return answer;
  };
  // The first byte tells the size (Content-Range: bytes 0-0/SIZE) and that ranges are served.
  const first = await get(0, 1);
  const size = Number(/\/(\d+)$/.exec(first.headers['content-range'] ?? '')?.[1]);
  if (!Number.isSafeInteger(size)) throw unreadable(url, 'no file size in the Content-Range header');
  return {
    byteLength: size,
    async slice(start, end = size) {
      if (end <= start) return new ArrayBuffer(0);
      const { body } = await get(start, Math.min(end, size));
      return body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer;
    },
    bytesRead: () => read,
    close: async () => {},
  };
}
