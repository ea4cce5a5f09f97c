import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { guardTarget, type ResolveAll } from '../../infra/http/outbound-guard.ts';

export interface OutboundOptions {
  /** Let requests reach private, loopback, link-local and other non-public addresses (WEBHOOK_ALLOW_PRIVATE_NETWORKS). */
  allowPrivate: boolean;
  timeoutMs: number;
  /** Name resolution; the system resolver unless a test passes its own. */
  resolve?: ResolveAll;
}

/**
 * POSTs `body` to `url` and answers the response status, guarded against server-side request forgery:
 * the host is resolved first and every address it resolves to must be public (unless `allowPrivate`);
 * the connection then goes to the checked address itself (the socket's lookup answers it), so a second
 * resolution cannot swap in another one (DNS rebinding). Redirects are not followed: a 3xx is the
 * answer. The response body is read and dropped.
 */
export async function postJson(url: string, body: string, headers: Record<string, string>, options: OutboundOptions): Promise<number> {
  const { target, host, lookup } = await guardTarget(url, options);
  const requestOptions: RequestOptions = {
    method: 'POST',
    host,
    port: target.port || undefined,
    path: `${target.pathname}${target.search}`,
    headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
    lookup,
    agent: false,
  };
  return new Promise<number>((resolveStatus, reject) => {
    const req = (target.protocol === 'https:' ? httpsRequest : httpRequest)(requestOptions, (res) => {
      res.on('data', () => {});
      res.on('end', () => {
        clearTimeout(timer);
        resolveStatus(res.statusCode ?? 0);
      });
      res.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    timer.unref();
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(body);
  });
}
