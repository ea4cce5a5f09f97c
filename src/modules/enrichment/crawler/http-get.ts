import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { pipeline, type Transform, Writable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { pinnedLookup } from '../../../infra/http/outbound-guard.ts';

export interface GetLimits {
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** Bytes of body kept, counted after decompression (and before it: the wire may not carry more either). */
  maxBytes: number;
  /** Past `maxBytes`, keep the first bytes instead of failing (robots.txt: RFC 9309 reads at least the first 500 KiB). */
  truncate: boolean;
}

export type GetResult =
  | { kind: 'response'; status: number; headers: IncomingHttpHeaders; body: Buffer | null }
  | { kind: 'failure'; outcome: 'timeout' | 'too_large' | 'unreachable' | 'http_error'; reason: string };

class Failure extends Error {
  constructor(
    readonly outcome: 'timeout' | 'too_large' | 'unreachable' | 'http_error',
    message: string,
  ) {
    super(message);
  }
}

/**
 * One GET to `url`, connected to the already checked address `pinned`, with a deadline for each phase
 * (connecting, including TLS; the response headers; the whole body) and a byte cap on the body counted
 * after decompression, so a gzip bomb stops at the cap rather than at the end of memory. The body is read
 * only when `wantBody` says so (a 2xx page of a kind the crawler reads); otherwise the connection is
 * dropped after the headers. Never rejects except when `signal` aborts.
 */
export function httpGet(
  url: URL,
  pinned: { address: string; family: number },
  headers: Record<string, string>,
  limits: GetLimits,
  signal: AbortSignal,
  wantBody: (status: number, headers: IncomingHttpHeaders) => boolean,
): Promise<GetResult> {
  return new Promise<GetResult>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const https = url.protocol === 'https:';
    const req = (https ? httpsRequest : httpRequest)({
      method: 'GET',
      host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      headers,
      lookup: pinnedLookup(pinned),
      agent: false,
      // Headers larger than this are an attack or a broken server, not a business's home page.
      maxHeaderSize: 32 * 1024,
    });
    const finish = (result: GetResult | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      req.destroy();
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const fail = (error: unknown) => {
      if (error instanceof Failure) finish({ kind: 'failure', outcome: error.outcome, reason: error.message });
      else finish({ kind: 'failure', outcome: networkOutcome(error), reason: networkReason(error) });
    };
    const phase = (ms: number, what: string) => {
      clearTimeout(timer);
      timer = setTimeout(() => fail(new Failure('timeout', `${what} within ${ms} ms`)), ms);
    };
    const onAbort = () => finish(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });

    phase(limits.connectTimeoutMs, `no connection to ${url.host}`);
    req.on('socket', (socket) => {
      socket.once(https ? 'secureConnect' : 'connect', () => phase(limits.headersTimeoutMs, 'no response headers'));
    });
    req.on('error', fail);
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      if (!wantBody(status, res.headers)) return finish({ kind: 'response', status, headers: res.headers, body: null });
      const declared = Number(res.headers['content-length']);
      if (!limits.truncate && Number.isFinite(declared) && declared > limits.maxBytes) {
        return fail(new Failure('too_large', `the body is ${declared} bytes, over the cap of ${limits.maxBytes}`));
      }
      phase(limits.bodyTimeoutMs, 'the whole body did not arrive');
      let decoder: Transform | null;
      try {
        decoder = decompressorFor(res.headers['content-encoding']);
      } catch (error) {
        return fail(error);
      }
      const chunks: Buffer[] = [];
      let kept = 0;
      let wire = 0;
      const complete = () => finish({ kind: 'response', status, headers: res.headers, body: Buffer.concat(chunks) });
      const sink = new Writable({
        write(chunk: Buffer, _encoding, next) {
          const room = limits.maxBytes - kept;
          if (chunk.length > room) {
            if (limits.truncate) {
              chunks.push(chunk.subarray(0, room));
              kept += room;
              return complete();
            }
            return next(
              new Failure('too_large', `the body passed the cap of ${limits.maxBytes} bytes${decoder ? ' once decompressed' : ''}`),
            );
          }
          chunks.push(chunk);
          kept += chunk.length;
          next();
        },
      });
      // The wire is capped too: a compressed body larger than the cap could not decompress to less.
      res.on('data', (chunk: Buffer) => {
        wire += chunk.length;
        if (wire > limits.maxBytes && !limits.truncate)
          fail(new Failure('too_large', `the body passed the cap of ${limits.maxBytes} bytes`));
      });
      const done = (error: Error | null | undefined) => (error ? fail(error) : complete());
      if (decoder) pipeline(res, decoder, sink, done);
      else pipeline(res, sink, done);
    });
    req.end();
  });
}

function decompressorFor(encoding: string | undefined): Transform | null {
  const name = (encoding ?? '').trim().toLowerCase();
  if (name === '' || name === 'identity') return null;
  if (name === 'gzip' || name === 'x-gzip') return createGunzip();
  if (name === 'deflate') return createInflate();
  if (name === 'br') return createBrotliDecompress();
  throw new Failure('http_error', `the body is in an encoding the crawler did not ask for (${name})`);
}

function networkOutcome(error: unknown): 'unreachable' | 'http_error' {
  const code = String((error as { code?: unknown })?.code ?? '');
  // The server answered, but not with HTTP a parser accepts (llhttp's HPE_ codes) or with a broken compressed body (zlib's Z_ codes).
  if (code.startsWith('HPE_') || code.startsWith('Z_') || code === 'ERR_ZLIB_INITIALIZATION_FAILED') return 'http_error';
  return 'unreachable';
}

function networkReason(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code ? `${String(code)}: ${String(message)}` : String(message ?? error);
}
