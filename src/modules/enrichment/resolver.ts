import { Resolver as DnsResolver } from 'node:dns/promises';
import { isIP } from 'node:net';

/** Name resolution for the crawler and the email checks: one object, built once from ENRICH_DNS_SERVERS. */
export interface Resolver {
  /** Every A and AAAA address of `host` (an IP literal answers itself); rejects with a `code` (ENOTFOUND, ENODATA, ETIMEOUT…) when there is none. */
  lookup(host: string): Promise<Array<{ address: string; family: 4 | 6 }>>;
  /** The MX records of `domain`; rejects with a `code` as `lookup` does. */
  resolveMx(domain: string): Promise<Array<{ exchange: string; priority: number }>>;
}

/** A DNS failure; `code` is c-ares's (ENOTFOUND for a name that does not exist, ENODATA for one without such records, ETIMEOUT…). */
export class DnsError extends Error {
  override name = 'DnsError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * node:dns's c-ares resolver rather than `dns.lookup`: it asks the given servers itself (so a test can
 * answer real names with loopback addresses from a DNS server of its own), it has a timeout, and it does
 * not queue behind libuv's four-thread pool the way getaddrinfo does when many sites resolve at once.
 * Without `dnsServers` it asks the system's resolvers (/etc/resolv.conf); /etc/hosts is not consulted.
 */
export function createResolver(options: { dnsServers?: string[]; timeoutMs: number }): Resolver {
  // A UDP question or answer lost under load is asked again: three tries whose waits (c-ares doubles them,
  // t + 2t + 4t) add up to the timeout for each server; the deadline bounds the whole question.
  const dns = new DnsResolver({ timeout: Math.max(10, Math.floor(options.timeoutMs / 7)), tries: 3 });
  if (options.dnsServers && options.dnsServers.length > 0) dns.setServers(options.dnsServers);
  const deadlineMs = options.timeoutMs * Math.max(1, dns.getServers().length) + 100;
  return {
    async lookup(host) {
      const literal = host.replace(/^\[(.*)\]$/, '$1');
      const family = isIP(literal);
      if (family === 4 || family === 6) return [{ address: literal, family }];
      const [v4, v6] = await Promise.allSettled([
        withDeadline(dns.resolve4(host), deadlineMs, host),
        withDeadline(dns.resolve6(host), deadlineMs, host),
      ]);
      const addresses = [
        ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 as const })) : []),
        ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 as const })) : []),
      ];
      if (addresses.length > 0) return addresses;
      throw dnsError(
        host,
        [v4, v6].flatMap((r) => (r.status === 'rejected' ? [r.reason] : [])),
      );
    },
    async resolveMx(domain) {
      try {
        const records = await withDeadline(dns.resolveMx(domain), deadlineMs, domain);
        return records.map((r) => ({ exchange: r.exchange, priority: r.priority }));
      } catch (error) {
        throw dnsError(domain, [error]);
      }
    },
  };
}

function withDeadline<T>(promise: Promise<T>, ms: number, name: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DnsError('ETIMEOUT', `no DNS answer for ${name} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** The most telling failure: a name that does not exist beats one without records of a type, which beats a timeout. */
function dnsError(name: string, reasons: unknown[]): DnsError {
  const codes = reasons.map((r) => String((r as { code?: unknown })?.code ?? 'EUNKNOWN'));
  const code = ['ENOTFOUND', 'ENODATA', 'ETIMEOUT'].find((c) => codes.includes(c)) ?? codes[0] ?? 'EUNKNOWN';
  const explanation: Record<string, string> = {
    ENOTFOUND: 'does not exist',
    ENODATA: 'has no such DNS records',
    ETIMEOUT: 'got no DNS answer in time',
  };
  return new DnsError(code, `${name} ${explanation[code] ?? `cannot be resolved (${code})`}`);
}
