import { lookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The guard against server-side request forgery that every outbound request of the server goes through
 * (webhook deliveries, the enrichment crawler): http/https only, no credentials in the URL, public
 * addresses only, and the connection pinned to the address that was checked.
 */

/** The guard refused the destination: nothing was sent, and trying again will not help. */
export class OutboundRefused extends Error {
  override name = 'OutboundRefused';
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

/** Parses an outbound URL, refusing what is not http/https and credentials in it. */
export function parseOutboundUrl(url: string): URL {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new OutboundRefused('not a URL');
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new OutboundRefused(`scheme ${target.protocol} is not allowed`);
  if (target.username || target.password) throw new OutboundRefused('credentials in the URL are not allowed');
  return target;
}

/** The host of a URL as a resolver takes it: IPv6 literals without their brackets. */
export function urlHost(target: URL): string {
  return target.hostname.replace(/^\[(.*)\]$/, '$1');
}

/** Refuses the destination unless every address `host` resolved to is public (one private address among public ones is enough to refuse). */
export function checkAddresses(host: string, addresses: ReadonlyArray<{ address: string }>, allowPrivate: boolean): void {
  if (allowPrivate) return;
  for (const { address } of addresses) {
    const check = isPublicAddress(address);
    if (!check.public)
      throw new OutboundRefused(`${host} resolves to ${address}, a ${check.range} address: only public addresses may be reached`);
  }
}

/**
 * A socket `lookup` that answers the checked address whatever the name: the connection goes where the
 * guard looked, so a second DNS answer cannot swap in another address (DNS rebinding), while the host
 * name still goes into `Host` and TLS's server name.
 */
export function pinnedLookup(pinned: { address: string; family: number }): LookupFunction {
  return ((_hostname: string, opts: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (opts?.all) callback(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  }) as unknown as LookupFunction;
}

/** A URL the guard let through: where to connect, with a lookup that answers the checked address only. */
export interface GuardedTarget {
  target: URL;
  host: string;
  lookup: LookupFunction;
}

/** Name resolution as the guard asks it: every address of a host. */
export type ResolveAll = (host: string) => Promise<Array<{ address: string; family: number }>>;

const systemResolveAll: ResolveAll = (h) => lookup(h, { all: true, verbatim: true });

/**
 * The whole guard for one request: the URL parsed (http/https, no credentials), the host resolved (an
 * address literal as itself), every address checked unless `allowPrivate`, and a lookup pinned to the first.
 */
export async function guardTarget(url: string, options: { allowPrivate: boolean; resolve?: ResolveAll }): Promise<GuardedTarget> {
  const target = parseOutboundUrl(url);
  const host = urlHost(target);
  let addresses: Array<{ address: string; family: number }>;
  if (ipaddr.isValid(host)) addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  else {
    try {
      addresses = await (options.resolve ?? systemResolveAll)(host);
    } catch (error) {
      throw new Error(`cannot resolve ${host}: ${(error as Error).message}`);
    }
  }
  if (addresses.length === 0) throw new Error(`${host} resolves to no address`);
  checkAddresses(host, addresses, options.allowPrivate);
  return { target, host, lookup: pinnedLookup(addresses[0]!) };
}
