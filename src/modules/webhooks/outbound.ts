import { lookup } from 'node:dns/promises';
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** The guard refused the destination: nothing was sent, and trying again will not help. */
export class OutboundRefused extends Error {
  override name = 'OutboundRefused';
}

export interface OutboundOptions {
  /** Let requests reach private, loopback, link-local and other non-public addresses (WEBHOOK_ALLOW_PRIVATE_NETWORKS). */
  allowPrivate: boolean;
  timeoutMs: number;
  /** Name resolution; the system resolver unless a test passes its own. */
  resolve?: (host: string) => Promise<Array<{ address: string; family: number }>>;
}

/**
 * Whether an address is one an outbound request from the server may reach: only ipaddr.js's `unicast`
 * range, i.e. none of loopback, private (RFC 1918), carrier-grade NAT, link-local (cloud metadata at
 * 169.254.169.254), unique-local, multicast, broadcast, unspecified, reserved, documentation, and none
 * of the IPv6 forms that embed an IPv4 address (mapped addresses are checked as the IPv4 they carry;
 * NAT64, 6to4 and Teredo are refused, as they can lead to any IPv4).
 */
export function isPublicAddress(address: string): { public: boolean; range: string } {
  if (!ipaddr.isValid(address)) return { public: false, range: 'invalid' };
  const range = ipaddr.process(address).range();
  return { public: range === 'unicast', range };
}

/** A URL checked by `guardTarget`: where to connect, with a lookup that answers the checked address only. */
export interface GuardedTarget {
  target: URL;
  host: string;
  lookup: LookupFunction;
}

/**
 * Checks an outbound URL against server-side request forgery: http or https only, no credentials, and every
 * address the host resolves to public (unless `allowPrivate`). The returned lookup pins the connection to the
 * checked address itself, so a second resolution cannot swap in another one (DNS rebinding).
 */
export async function guardTarget(url: string, options: Pick<OutboundOptions, 'allowPrivate' | 'resolve'>): Promise<GuardedTarget> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new OutboundRefused('not a URL');
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new OutboundRefused(`scheme ${target.protocol} is not allowed`);
  if (target.username || target.password) throw new OutboundRefused('credentials in the URL are not allowed');
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  const resolve = options.resolve ?? ((h: string) => lookup(h, { all: true, verbatim: true }));
  let addresses: Array<{ address: string; family: number }>;
  if (ipaddr.isValid(host)) addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      throw new Error(`cannot resolve ${host}: ${(error as Error).message}`);
    }
  }
  if (addresses.length === 0) throw new Error(`${host} resolves to no address`);
  if (!options.allowPrivate) {
    for (const { address } of addresses) {
      const check = isPublicAddress(address);
      if (!check.public) throw new OutboundRefused(`${host} resolves to ${address}, a ${check.range} address: only public addresses may be reached`);
    }
  }
  const pinned = addresses[0]!;
  const pinnedLookup = ((_hostname: string, opts: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (opts?.all) callback(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  }) as unknown as LookupFunction;
  return { target, host, lookup: pinnedLookup };
}

/**
 * POSTs `body` to `url` and answers the response status, guarded against server-side request forgery
 * (`guardTarget`). Redirects are not followed: a 3xx is the answer. The response body is read and dropped.
 */
export async function postJson(url: string, body: string, headers: Record<string, string>, options: OutboundOptions): Promise<number> {
  const { target, host, lookup: pinnedLookup } = await guardTarget(url, options);
  const requestOptions: RequestOptions = {
    method: 'POST',
    host,
    port: target.port || undefined,
    path: `${target.pathname}${target.search}`,
    headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
    lookup: pinnedLookup,
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
