import { domainToASCII } from 'node:url';
/**
 * What DNS says about an address's domain: it names mail servers (or, lacking MX records, has an address
 * that mail may be sent to: RFC 5321's implicit MX); it cannot receive mail (it does not exist, has neither,
 * or publishes RFC 7505's null MX); or it could not be told (timeout, server failure).
 */
import type { EmailVerdict } from '../contacts/contacts.ts';
import { emailSyntax } from './extract/emails.ts';
import { createResolver, type Resolver } from './resolver.ts';

export interface EmailDomainCheckerOptions {
  /** DNS servers to ask (`1.1.1.1`, `127.0.0.1:5353`); the system's resolvers when absent. */
  dnsServers?: string[];
  /** How long one DNS question may take. */
  timeoutMs?: number;
  /** How many domains' verdicts are remembered; the least recently used goes first. */
  cacheEntries?: number;
  /** How long a remembered verdict holds: mail servers come and go. */
  cacheTtlMs?: number;
  /** The resolver the crawler uses, so that both ask the same servers; built from the options above when absent. */
  resolver?: Resolver;
  now?: () => number;
}

interface Remembered {
  verdict: Promise<EmailVerdict>;
  expires: number;
}

const codeOf = (error: unknown): string => String((error as { code?: unknown })?.code ?? '');
/** Codes that say the name, or its records of the type asked, do not exist: an answer, not a failure. */
const ABSENT = new Set(['ENOTFOUND', 'ENODATA']);

/**
 * Checks an email address's domain for mail servers through DNS. Verdicts are remembered per domain in a
 * bounded least-recently-used cache (a site's addresses share one domain, and free-mail domains recur on
 * every other site); a check under way is shared by the callers that ask meanwhile. `unknown` is not
 * remembered, so a passing DNS failure is asked again next time.
 */
export class EmailDomainChecker {
  private readonly resolver: Resolver;
  private readonly cache = new Map<string, Remembered>();
  private readonly cacheEntries: number;
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(options: EmailDomainCheckerOptions = {}) {
    this.resolver = options.resolver ?? createResolver({ dnsServers: options.dnsServers, timeoutMs: options.timeoutMs ?? 3_000 });
    this.cacheEntries = Math.max(1, options.cacheEntries ?? 10_000);
    this.ttlMs = options.cacheTtlMs ?? 24 * 3_600_000;
    this.now = options.now ?? Date.now;
  }

  /** The verdict for an address; an address whose syntax cannot be delivered to is `no_mx` without asking DNS. */
  async check(address: string): Promise<EmailVerdict> {
    const syntax = emailSyntax(address);
    if (!syntax) return 'no_mx';
    // DNS speaks ASCII: an internationalised domain (`müller-bau.de`) is asked in its punycode form.
    const domain = domainToASCII(syntax.domain);
    if (domain === '') return 'no_mx';
    const known = this.cache.get(domain);
    if (known && known.expires > this.now()) {
      this.cache.delete(domain);
      this.cache.set(domain, known);
      return known.verdict;
    }
    const verdict = this.ask(domain);
    this.remember(domain, verdict);
    const answer = await verdict;
    if (answer === 'unknown' && this.cache.get(domain)?.verdict === verdict) this.cache.delete(domain);
    return answer;
  }

  /** How many domains are remembered (for tests and metrics). */
  get size(): number {
    return this.cache.size;
  }

  private remember(domain: string, verdict: Promise<EmailVerdict>): void {
    this.cache.delete(domain);
    this.cache.set(domain, { verdict, expires: this.now() + this.ttlMs });
    while (this.cache.size > this.cacheEntries) this.cache.delete(this.cache.keys().next().value!);
  }

  private async ask(domain: string): Promise<EmailVerdict> {
    try {
      const records = await this.resolver.resolveMx(domain);
      // RFC 7505: a single MX of "." says the domain accepts no mail at all.
      const servers = records.filter((r) => r.exchange !== '' && r.exchange !== '.');
      if (servers.length > 0) return 'deliverable_domain';
      if (records.length > 0) return 'no_mx';
    } catch (error) {
      const code = codeOf(error);
      if (code === 'ENOTFOUND') return 'no_mx';
      if (code !== 'ENODATA') return 'unknown';
    }
    try {
      await this.resolver.lookup(domain);
      return 'deliverable_domain';
    } catch (error) {
      return ABSENT.has(codeOf(error)) ? 'no_mx' : 'unknown';
    }
  }
}
