import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { AppError } from '../../../infra/errors.ts';
import { guardTarget, OutboundRefused, type GuardedTarget } from '../../../infra/http/outbound-guard.ts';
import type { HttpReadOptions } from '../importer.types.ts';
import type { CountingBuffer } from './parquet.ts';

export const isHttpUrl = (location: string): boolean => /^https?:\/\//i.test(location);

const DEFAULT_TIMEOUT_MS = 30_000;

/** One GET with a `Range` header: the body of a 206 answer, at most `maxBytes`, within the time limit; of any other answer, only its status. */
function get(
  guarded: GuardedTarget,
  range: string,
  maxBytes: number,
  timeoutMs: number,
): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> {
  const { target, host, lookup } = guarded;
  return new Promise((resolve, reject) => {
    const req = (target.protocol === 'https:' ? httpsRequest : httpRequest)(
      {
        method: 'GET',
        host,
        port: target.port || undefined,
        path: `${target.pathname}${target.search}`,
        headers: { range, 'accept-encoding': 'identity' },
        lookup,
        agent: false,
      },
      (res) => {
        if (res.statusCode !== 206) {
          // Not a part of the file (an error page, or the whole file from a server that ignores Range): not read.
          clearTimeout(timer);
          res.destroy();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.alloc(0) });
          return;
        }
        const parts: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) req.destroy(new Error(`the server sent more than the ${maxBytes} bytes asked for`));
          else parts.push(chunk);
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) });
        });
        res.on('error', (error) => {
          clearTimeout(timer);
          reject(error);
        });
      },
    );
    const timer = setTimeout(() => req.destroy(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end();
  });
}

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
  let guarded: GuardedTarget;
  try {
    guarded = await guardTarget(url, { allowPrivate: options.allowPrivate === true });
  } catch (error) {
    throw unreadable(url, error instanceof OutboundRefused ? error.message : (error as Error).message);
  }
  let read = 0;
  type Answer = Awaited<ReturnType<typeof get>>;
  const fetchRange = async (start: number, end: number): Promise<Buffer> => {
    let answer: Answer;
    try {
      answer = await get(guarded, `bytes=${start}-${end - 1}`, end - start, timeoutMs);
    } catch (error) {
      throw unreadable(url, (error as Error).message);
    }
    if (answer.status !== 206)
      throw unreadable(url, `HTTP ${answer.status} to a range request (the server must answer 206 Partial Content)`);
    read += answer.body.length;
    return answer.body;
  };
  // The first byte tells the size (Content-Range: bytes 0-0/SIZE) and that ranges are served.
  let first: Answer;
  try {
    first = await get(guarded, 'bytes=0-0', 1, timeoutMs);
  } catch (error) {
    throw unreadable(url, (error as Error).message);
  }
  if (first.status !== 206) throw unreadable(url, `HTTP ${first.status} to a range request (the server must answer 206 Partial Content)`);
  const size = Number(/\/(\d+)$/.exec(first.headers['content-range'] ?? '')?.[1]);
  if (!Number.isSafeInteger(size)) throw unreadable(url, 'no file size in the Content-Range header');
  read += first.body.length;
  return {
    byteLength: size,
    async slice(start, end = size) {
      if (end <= start) return new ArrayBuffer(0);
      const body = await fetchRange(start, Math.min(end, size));
      return body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer;
    },
    bytesRead: () => read,
    close: async () => {},
  };
}
