import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { guardTarget } from './outbound-guard.ts';

/**
 * One outbound GET through the guard (`guardTarget`: http/https, public addresses unless allowed, the
 * connection pinned to the checked address), without redirects: the shared shape of the importers' reads of
 * publishers' files (Parquet by range, catalogs, listings, extracts).
 */
export interface GuardedGetOptions {
  /** Let the URL reach private and loopback addresses (a mirror on the local network). */
  allowPrivate: boolean;
  /** From sending the request to the last byte of a buffered answer; for a stream, the longest silence. */
  timeoutMs: number;
  /** Request headers (`Range`, `Authorization` of a host that wants a token…). */
  headers?: Readonly<Record<string, string>>;
}

/** The answer's head, and its body as a stream the caller reads or destroys. */
export async function guardedStream(url: string, options: GuardedGetOptions): Promise<IncomingMessage> {
  const { target, host, lookup } = await guardTarget(url, { allowPrivate: options.allowPrivate });
  return new Promise((resolve, reject) => {
    const req = (target.protocol === 'https:' ? httpsRequest : httpRequest)(
      {
        method: 'GET',
        host,
        port: target.port || undefined,
        path: `${target.pathname}${target.search}`,
        headers: { 'accept-encoding': 'identity', ...options.headers },
        lookup,
        agent: false,
      },
      (res) => {
        // From here on the limit is on silence: a stream may be long, but never stalled.
        req.setTimeout(options.timeoutMs, () => res.destroy(new Error(`no data for ${options.timeoutMs} ms`)));
        resolve(res);
      },
    );
    req.setTimeout(options.timeoutMs, () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

export interface GuardedAnswer {
  status: number;
  headers: IncomingMessage['headers'];
  /** The body of an answer `keep` accepts (at most `maxBytes`); empty otherwise (not read). */
  body: Buffer;
}

/**
 * A GET whose body is read whole, within `timeoutMs` from the request to its last byte and at most
 * `maxBytes` (a larger body is an error, not cut short). `keep` says which statuses' bodies are read
 * (200 and 206 by default); any other answer is closed unread and only its status returned.
 */
export async function guardedGet(
  url: string,
  options: GuardedGetOptions & { maxBytes: number; keep?: (status: number) => boolean },
): Promise<GuardedAnswer> {
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const res = await guardedStream(url, options);
  const status = res.statusCode ?? 0;
  if (!(options.keep ?? ((s: number) => s === 200 || s === 206))(status)) {
    res.destroy();
    return { status, headers: res.headers, body: Buffer.alloc(0) };
  }
  const parts: Buffer[] = [];
  let size = 0;
  const onDeadline = () => res.destroy(new Error(`no complete answer within ${options.timeoutMs} ms`));
  deadline.addEventListener('abort', onDeadline, { once: true });
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > options.maxBytes) {
        res.destroy();
        throw new Error(`the answer is larger than the ${options.maxBytes} bytes allowed`);
      }
      parts.push(chunk);
    }
  } finally {
    deadline.removeEventListener('abort', onDeadline);
  }
  return { status, headers: res.headers, body: Buffer.concat(parts) };
}
