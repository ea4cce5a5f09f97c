import type { IncomingHttpHeaders } from 'node:http';
import { checkAddresses, isPublicAddress, OutboundRefused, parseOutboundUrl, urlHost } from '../../../infra/http/outbound-guard.ts';
import { registrableDomain } from '../../../infra/web-domain.ts';
import type { Resolver } from '../resolver.ts';
import { decodeHtml } from './charset.ts';
import { type GetLimits, type GetResult, httpGet } from './http-get.ts';
import { analysePage } from './page-links.ts';
import { HostGate, Semaphore } from './politeness.ts';
import { allowAll, parseRobots, RobotsCache, type RobotsRules, robotsAgentOf, robotsAllow } from './robots.ts';

export interface CrawlerOptions {
  /** Sent with every request and matched against robots.txt groups by its product token (ENRICH_USER_AGENT). */
  userAgent: string;
  resolver: Resolver;
  /** Let requests reach private and loopback addresses (ENRICH_ALLOW_PRIVATE_NETWORKS); link-local stays refused. */
  allowPrivate: boolean;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  /** The whole body of one response, from its headers to its last byte. */
  bodyTimeoutMs: number;
  /** Bytes of one page, counted after decompression. */
  maxPageBytes: number;
  /** Pages of one site, the home page included. */
  maxPagesPerSite: number;
  /** Redirects followed for one page (each hop guarded and checked against robots.txt again). */
  maxRedirects: number;
  /** Pause between the end of one request to a host and the start of the next (more if robots.txt asks). */
  perHostDelayMs: number;
  /** Sites crawled at once across all callers. */
  concurrency: number;
}

export interface CrawledPage {
  /** The page's URL after redirects. */
  url: string;
  html: string;
  status: number;
  fetchedAt: string;
}

export type CrawlOutcome =
  | 'ok'
  | 'not_modified'
  | 'robots_disallowed'
  | 'http_error'
  | 'rate_limited'
  | 'timeout'
  | 'too_large'
  | 'not_html'
  | 'javascript_only'
  | 'refused'
  | 'unreachable'
  | 'too_many_redirects'
  | 'dns_error'
  | 'invalid_url';

export interface SiteCrawl {
  website: string;
  outcome: CrawlOutcome;
  /** Why the outcome is not `ok`, or for `ok`, the contact pages that could not be read. */
  reason: string | null;
  pages: CrawledPage[];
  etag: string | null;
  lastModified: string | null;
  retryAfterSeconds: number | null;
}

/** RFC 9309: crawlers must read at least the first 500 KiB of a robots.txt. */
const robotsMaxBytes = 500 * 1024;

/** A Crawl-delay above this is not waited out between a site's pages: the crawler reads the home page only. */
const maxCrawlDelayMs = 10_000;

/** A home page with scripts, no link and less visible text than this is a shell a browser fills in with JavaScript. */
const javascriptShellTextLength = 200;

const robotsCacheSize = 1024;
/** What the kept robots rules may take in memory together. */
const robotsCacheBytes = 16 * 1024 * 1024;

const redirectStatuses = new Set([301, 302, 303, 307, 308]);

type Failure = { outcome: Exclude<CrawlOutcome, 'ok' | 'not_modified'>; reason: string; retryAfterSeconds?: number | null };
type Fetched = { url: URL; status: number; headers: IncomingHttpHeaders; body: Buffer | null; fetchedAt: string };

/** The state of one site's crawl: its cancellation, the DNS answers it got (each host resolved once, then pinned), the time its requests took. */
interface SiteContext {
  signal: AbortSignal;
  addresses: Map<string, Promise<Array<{ address: string; family: 4 | 6 }>>>;
  requestMs: number;
}

/**
 * A site's requests may take this many times one request's longest life (connect + headers + body) in all;
 * then it gets no more. A site answering every request just inside each deadline, through every redirect,
 * would otherwise hold its slot for minutes. Pauses between requests do not count.
 */
const siteBudgetFactor = 2;

/**
 * Fetches a site's home page and the few pages its links name as contact, imprint, about or team, politely
 * (robots.txt, one request at a time per host with a pause between them, a clear User-Agent) and safely
 * (every hop through the outbound guard, each phase of a request timed, each body capped). A site always
 * ends with an outcome and a reason; `crawlSite` rejects only when `signal` aborts or the crawler closes.
 */
export class Crawler {
  private readonly sites: Semaphore;
  private readonly gate = new HostGate();
  private readonly robots = new RobotsCache<RobotsRules | Failure>({
    entries: robotsCacheSize,
    maxBytes: robotsCacheBytes,
    weigh: (rules) => ('bytes' in rules ? rules.bytes : 0),
  });
  private readonly closing = new AbortController();
  private readonly robotsAgent: string;

  constructor(private readonly options: CrawlerOptions) {
    this.sites = new Semaphore(Math.max(1, options.concurrency));
    this.robotsAgent = robotsAgentOf(options.userAgent);
  }

  async crawlSite(
    website: string,
    previous?: { etag: string | null; lastModified: string | null },
    signal?: AbortSignal,
  ): Promise<SiteCrawl> {
    // A signal of its own for each crawl: its few listeners come and go with it, instead of piling up on the crawler's.
    const abort = AbortSignal.any(signal ? [signal, this.closing.signal] : [this.closing.signal]);
    const start = startUrl(website);
    if ('outcome' in start) return failed(website, start);
    const release = await this.sites.acquire(abort);
    try {
      return await this.crawl(website, start, previous, { signal: abort, addresses: new Map(), requestMs: 0 });
    } finally {
      release();
    }
  }

  /** Stops every crawl in progress (their promises reject) and refuses new ones. */
  close(): void {
    this.closing.abort(new Error('the crawler is closed'));
  }

  private async crawl(
    website: string,
    start: URL,
    previous: { etag: string | null; lastModified: string | null } | undefined,
    site: SiteContext,
  ): Promise<SiteCrawl> {
    const conditional: Record<string, string> = {};
    if (previous?.etag) conditional['if-none-match'] = previous.etag;
    if (previous?.lastModified) conditional['if-modified-since'] = previous.lastModified;
    let home = await this.fetchPage(site, start, 'home', conditional);
    if ('outcome' in home) return failed(website, home);
    const etag = headerValue(home.headers.etag) ?? null;
    const lastModified = headerValue(home.headers['last-modified']) ?? null;
    const result = (outcome: CrawlOutcome, reason: string | null, pages: CrawledPage[] = []): SiteCrawl => ({
      website,
      outcome,
      reason,
      pages,
      etag,
      lastModified,
      retryAfterSeconds: null,
    });
    if (home.status === 304) {
      return {
        ...result('not_modified', `${home.url.href} has not changed since the last crawl`),
        etag: etag ?? previous?.etag ?? null,
        lastModified: lastModified ?? previous?.lastModified ?? null,
      };
    }
    const problem = pageProblem(home);
    if (problem) return { ...failed(website, problem), etag, lastModified };

    let page = toPage(home);
    let inScope = scopeOf(home.url);
    let analysis = analysePage(page.html, page.url, inScope);
    // An old habit of small sites: an empty home page whose <meta refresh> leads to the real one.
    if (analysis.contactLinks.length === 0 && analysis.refreshUrl && analysis.refreshUrl !== page.url) {
      const refreshed = await this.fetchPage(site, new URL(analysis.refreshUrl), 'home', {});
      if ('outcome' in refreshed) return { ...failed(website, refreshed), etag, lastModified };
      const refreshProblem = pageProblem(refreshed);
      if (refreshProblem) return { ...failed(website, refreshProblem), etag, lastModified };
      home = refreshed;
      page = toPage(home);
      inScope = scopeOf(home.url);
      analysis = analysePage(page.html, page.url, inScope);
    }
    if (analysis.scriptCount > 0 && analysis.linkCount === 0 && analysis.visibleTextLength < javascriptShellTextLength) {
      const reason = `${page.url} is a JavaScript shell: ${analysis.scriptCount} script(s), no link and ${analysis.visibleTextLength} characters of text`;
      return result('javascript_only', reason, [page]);
    }

    const pages = [page];
    // URLs asked for, and URLs whose page is kept (a contact link may redirect to a page already kept).
    const tried = new Set([page.url, start.href]);
    const kept = new Set([page.url]);
    const notes: string[] = [];
    const homeRules = await this.robotsFor(site, home.url);
    const delay = 'outcome' in homeRules ? 0 : (homeRules.crawlDelayMs ?? 0);
    const maxPages = delay > maxCrawlDelayMs ? 1 : this.options.maxPagesPerSite;
    if (maxPages < this.options.maxPagesPerSite) notes.push(`robots.txt asks for ${delay / 1000} s between requests: the home page only`);
    let attempts = 1;
    for (const link of analysis.contactLinks) {
      if (attempts >= maxPages) break;
      if (tried.has(link.url)) continue;
      attempts++;
      tried.add(link.url);
      const contact = await this.fetchPage(site, new URL(link.url), 'contact', {}, inScope);
      const trouble = 'outcome' in contact ? contact : pageProblem(contact);
      if (trouble) {
        notes.push(`${link.url}: ${trouble.outcome} (${trouble.reason})`);
        // A host that is slow or asks us to back off does not get the rest of the list.
        if (trouble.outcome === 'timeout' || trouble.outcome === 'rate_limited') break;
        continue;
      }
      if (!('outcome' in contact) && !kept.has(contact.url.href)) {
        kept.add(contact.url.href);
        pages.push(toPage(contact));
      }
    }
    return result('ok', notes.length > 0 ? notes.join('; ') : null, pages);
  }

  /**
   * GETs a page, following up to maxRedirects redirects. Every hop is checked against robots.txt (except
   * robots.txt itself) and the outbound guard; a contact page must stay within the site (`inScope`).
   */
  private async fetchPage(
    site: SiteContext,
    first: URL,
    kind: 'home' | 'contact' | 'robots',
    headers: Record<string, string>,
    inScope?: (url: URL) => boolean,
  ): Promise<Fetched | Failure> {
    const seen = new Set<string>();
    let url = first;
    for (let hops = 0; ; hops++) {
      seen.add(url.href);
      let delayMs = this.options.perHostDelayMs;
      if (kind !== 'robots') {
        const rules = await this.robotsFor(site, url);
        if ('outcome' in rules) return rules;
        if (!robotsAllow(rules, url.href, this.robotsAgent)) {
          return {
            outcome: 'robots_disallowed',
            reason: rules.disallowAll ?? `robots.txt of ${url.host} disallows ${url.pathname}${url.search} for ${this.robotsAgent}`,
          };
        }
        delayMs = Math.max(delayMs, Math.min(rules.crawlDelayMs ?? 0, maxCrawlDelayMs));
      }
      const limits: GetLimits = {
        connectTimeoutMs: this.options.connectTimeoutMs,
        headersTimeoutMs: this.options.headersTimeoutMs,
        bodyTimeoutMs: this.options.bodyTimeoutMs,
        maxBytes: kind === 'robots' ? robotsMaxBytes : this.options.maxPageBytes,
        truncate: kind === 'robots',
      };
      const accept = kind === 'robots' ? 'text/plain, */*;q=0.5' : 'text/html, application/xhtml+xml;q=0.9, */*;q=0.1';
      const wantBody =
        kind === 'robots'
          ? (status: number) => status >= 200 && status < 300
          : (status: number, h: IncomingHttpHeaders) => status >= 200 && status < 300 && isHtmlType(h['content-type']);
      const answer = await this.request(site, url, { ...headers, accept }, limits, wantBody, delayMs);
      if ('outcome' in answer) return { ...answer, reason: `${url.href}: ${answer.reason}` };
      const location = headerValue(answer.headers.location);
      if (!redirectStatuses.has(answer.status) || !location) return { url, ...answer };
      let next: URL;
      try {
        next = parseOutboundUrl(new URL(location, url).href);
      } catch (error) {
        const reason = error instanceof OutboundRefused ? error.message : 'not a URL';
        return { outcome: 'refused', reason: `${url.href} redirects to ${JSON.stringify(location)}: ${reason}` };
      }
      next.hash = '';
      if (inScope && !inScope(next)) return { outcome: 'refused', reason: `${url.href} redirects off the site, to ${next.href}` };
      if (seen.has(next.href)) return { outcome: 'too_many_redirects', reason: `redirect loop: ${url.href} leads back to ${next.href}` };
      if (hops + 1 > this.options.maxRedirects)
        return {
          outcome: 'too_many_redirects',
          reason: `more than ${this.options.maxRedirects} redirects from ${first.href} (the last to ${next.href})`,
        };
      url = next;
    }
  }

  /** One GET through the guard (the host's addresses checked, the connection pinned to one of them) and the host's turn. */
  private async request(
    site: SiteContext,
    url: URL,
    headers: Record<string, string>,
    limits: GetLimits,
    wantBody: (status: number, headers: IncomingHttpHeaders) => boolean,
    delayMs: number,
  ): Promise<(GetResult & { kind: 'response'; fetchedAt: string }) | Failure> {
    const host = urlHost(url);
    let lookup = site.addresses.get(host);
    if (!lookup) {
      lookup = this.options.resolver.lookup(host);
      site.addresses.set(host, lookup);
    }
    let addresses: Array<{ address: string; family: 4 | 6 }>;
    try {
      addresses = await lookup;
    } catch (error) {
      site.signal.throwIfAborted();
      // No answer in time says nothing of the name (a resolver under load): not `dns_error`, which reads as a dead site.
      if ((error as { code?: unknown }).code === 'ETIMEOUT') return { outcome: 'timeout', reason: (error as Error).message };
      return { outcome: 'dns_error', reason: (error as Error).message };
    }
    try {
      checkAddresses(host, addresses, this.options.allowPrivate);
      // Link-local is the cloud metadata service's range: never a site, even where private networks are allowed.
      for (const { address } of addresses) {
        if (isPublicAddress(address).range === 'linkLocal')
          throw new OutboundRefused(`${host} resolves to ${address}, a link-local address (cloud metadata): never crawled`);
      }
    } catch (error) {
      return { outcome: 'refused', reason: (error as Error).message };
    }
    const { connectTimeoutMs, headersTimeoutMs, bodyTimeoutMs } = this.options;
    const budgetMs = siteBudgetFactor * (connectTimeoutMs + headersTimeoutMs + bodyTimeoutMs);
    const answer = await this.gate.run(url.host, delayMs, site.signal, async () => {
      if (site.requestMs >= budgetMs)
        return {
          kind: 'failure' as const,
          outcome: 'timeout' as const,
          reason: `the site's requests took ${Math.round(site.requestMs)} ms, its budget of ${budgetMs} ms is spent`,
        };
      const started = performance.now();
      try {
        return await httpGet(
          url,
          addresses[0]!,
          { ...headers, 'user-agent': this.options.userAgent, 'accept-encoding': 'gzip, deflate, br' },
          limits,
          site.signal,
          wantBody,
        );
      } finally {
        site.requestMs += performance.now() - started;
      }
    });
    if (answer.kind === 'failure') return { outcome: answer.outcome, reason: answer.reason };
    if (answer.status === 429 || (answer.status === 503 && answer.headers['retry-after'])) {
      const retryAfterSeconds = parseRetryAfter(headerValue(answer.headers['retry-after']));
      return {
        outcome: 'rate_limited',
        reason: `answered ${answer.status}${retryAfterSeconds === null ? '' : `, retry after ${retryAfterSeconds} s`}`,
        retryAfterSeconds,
      };
    }
    return { ...answer, fetchedAt: new Date().toISOString() };
  }

  /** The robots rules of `url`'s origin, fetched once and kept; a failure to read them (the host unreachable, rate limiting) is the site's outcome and is not kept. */
  private async robotsFor(site: SiteContext, url: URL): Promise<RobotsRules | Failure> {
    const origin = url.origin;
    const cached = this.robots.get(origin);
    if (cached) return cached;
    const pending = this.fetchRobots(site, url);
    this.robots.set(origin, pending);
    const rules = await pending.catch((error: unknown) => {
      this.robots.delete(origin);
      throw error;
    });
    if ('outcome' in rules) this.robots.delete(origin);
    return rules;
  }

  private async fetchRobots(site: SiteContext, url: URL): Promise<RobotsRules | Failure> {
    const robotsUrl = new URL('/robots.txt', url.origin);
    const answer = await this.fetchPage(site, robotsUrl, 'robots', {});
    if ('outcome' in answer) {
      // RFC 9309 2.3.1.2: more than five redirects may be read as no robots.txt at all.
      if (answer.outcome === 'too_many_redirects') return allowAll;
      return answer;
    }
    if (answer.status >= 200 && answer.status < 300) {
      return parseRobots(robotsUrl.href, new TextDecoder('utf-8').decode(answer.body ?? Buffer.alloc(0)), this.robotsAgent);
    }
    // RFC 9309 2.3.1.4: a server error on robots.txt means the whole site is disallowed.
    if (answer.status >= 500)
      return {
        ...allowAll,
        disallowAll: `robots.txt of ${url.host} answered ${answer.status}, which RFC 9309 reads as "disallow everything"`,
      };
    return allowAll;
  }
}

function startUrl(website: string): URL | Failure {
  const text = website.trim();
  if (text === '') return { outcome: 'invalid_url', reason: 'the website is empty' };
  const withScheme = /^[a-z][a-z0-9+.-]*:/i.test(text) && !/^[^:/]+:\d+(\/|$)/.test(text) ? text : `http://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return { outcome: 'invalid_url', reason: `${JSON.stringify(website)} is not a URL` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return { outcome: 'invalid_url', reason: `${url.protocol} is not http or https` };
  if (url.username || url.password) return { outcome: 'invalid_url', reason: 'credentials in the URL are not allowed' };
  if (!url.hostname) return { outcome: 'invalid_url', reason: `${JSON.stringify(website)} names no host` };
  url.hash = '';
  return url;
}

/** Pages of the same registrable domain as `home` (`www.shop.example` and `shop.example` alike); the same host where there is no domain (an IP address). */
function scopeOf(home: URL): (url: URL) => boolean {
  const domain = registrableDomain(home.href);
  if (!domain) return (url) => url.hostname === home.hostname;
  return (url) => registrableDomain(url.href) === domain;
}

/** Why a fetched page gives nothing to read, or null when it does. */
function pageProblem(page: Fetched): Failure | null {
  if (page.status < 200 || page.status >= 300) return { outcome: 'http_error', reason: `${page.url.href} answered ${page.status}` };
  if (!page.body)
    return {
      outcome: 'not_html',
      reason: `${page.url.href} is ${headerValue(page.headers['content-type']) ?? 'of no declared type'}, not HTML`,
    };
  return null;
}

function toPage(page: Fetched): CrawledPage {
  return {
    url: page.url.href,
    html: decodeHtml(page.body!, headerValue(page.headers['content-type'])).html,
    status: page.status,
    fetchedAt: page.fetchedAt,
  };
}

function failed(website: string, failure: Failure): SiteCrawl {
  return {
    website,
    outcome: failure.outcome,
    reason: failure.reason,
    pages: [],
    etag: null,
    lastModified: null,
    retryAfterSeconds: failure.retryAfterSeconds ?? null,
  };
}

/** HTML or XHTML, or no declared type at all (old servers): anything else is not a page to read. */
function isHtmlType(contentType: string | string[] | undefined): boolean {
  const type = headerValue(contentType)?.split(';')[0]?.trim().toLowerCase();
  return !type || type === 'text/html' || type === 'application/xhtml+xml';
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** `Retry-After: 120` or `Retry-After: Wed, 21 Oct 2026 07:28:00 GMT`, in seconds from now; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000));
}
