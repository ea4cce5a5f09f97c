import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { PollLoop } from '../../infra/poll-loop.ts';
import { placesOfEmailDomains, placesOfSites } from '../trust/trust.repository.ts';
import { recomputeTrust } from '../trust/trust.service.ts';
import type { EmailChecker, SiteCrawler } from './enrichment.service.ts';
import { crawlTools } from './enrichment.ts';
import { websiteStatusOf } from './site-status.ts';
import { domainsToVerify, saveDomainVerdicts, saveSiteStatuses, sitesToVerify } from './verify.repository.ts';

/**
 * Re-verification (issue 33; docs/trust.md, "Re-verification"): the websites and email domains last checked longer
 * ago than `afterDays` are checked again, the websites by a fetch of their home page through the crawler (so the
 * same outbound guard, robots.txt, per-host pause and User-Agent as enrichment), the domains through the email
 * check's DNS. Their statuses and `checked_at` are stored where the crawler keeps them (`enrich_sites`,
 * `email_domains`), then the trust pass judges the places that hold them at once, so a status that changed moves
 * the place's summary, which the search engine and the monitors follow through the change log (a monitor member
 * whose email domain lost its MX, or whose website went dead, is a `changed` event naming the field).
 *
 * An inconclusive fetch (a timeout, robots.txt forbidding, a 5xx: `unknown`) says nothing of the site: its
 * previous status and check time stay, and it is tried again next round.
 */

export interface VerifyOptions {
  db: Db;
  /** The crawler, limited to the home page (`crawlTools(config, { maxPagesPerSite: 1 })`). */
  crawler: SiteCrawler;
  checker: EmailChecker;
  afterDays: number;
  /** Websites, and email domains, checked at most in this call (each). */
  limit: number;
  /** Websites fetched at once (the crawler's own limit and per-host pause apply too). */
  concurrency: number;
  now?: () => Date;
  signal?: AbortSignal;
}

export interface VerifySummary {
  sites: number;
  domains: number;
  /** Checks whose status differs from the one stored before. */
  changed: number;
  /** Places whose trust judgement changed. */
  places: number;
  /** Wall time of each step, ms: the websites' fetches, the domains' DNS checks, the places judged anew. */
  ms: { sites: number; domains: number; places: number };
}

export async function verifyOnce(o: VerifyOptions): Promise<VerifySummary> {
  const now = o.now ?? (() => new Date());
  const cutoff = new Date(now().getTime() - o.afterDays * 86_400_000).toISOString();
  const summary: VerifySummary = { sites: 0, domains: 0, changed: 0, places: 0, ms: { sites: 0, domains: 0, places: 0 } };
  const started = performance.now();
  // The websites and the email domains are checked side by side: a site's fetch is mostly waiting on its host,
  // and the domains' DNS questions fill that wait instead of following it.
  const [statuses, verdicts] = await Promise.all([
    checkSites(o, cutoff, now, summary).finally(() => {
      summary.ms.sites = performance.now() - started;
    }),
    checkDomains(o, cutoff, now, summary).finally(() => {
      summary.ms.domains = performance.now() - started;
    }),
  ]);
  const judging = performance.now();

  // The places these checks speak for, judged now rather than at the trust pass's next round.
  const places = new Set(
    await placesOfSites(
      o.db,
      statuses.map((s) => s.id),
    ),
  );
  const checkedDomains = verdicts.filter((v) => v.status !== 'unknown').map((v) => v.domain);
  for (const id of await placesOfEmailDomains(o.db, checkedDomains)) places.add(id);
  summary.places = await recomputeTrust(
    o.db,
    [...places].sort((a, b) => a - b),
  );
  summary.ms.places = performance.now() - judging;
  return summary;
}

type SiteStatusRow = Parameters<typeof saveSiteStatuses>[1][number];

/** Runs `work` over `items`, `concurrency` at a time (fewer when the signal aborts: the rest are left). */
async function forEachAtOnce<T>(
  items: readonly T[],
  concurrency: number,
  signal: AbortSignal | undefined,
  work: (item: T) => Promise<void>,
) {
  let next = 0;
  const worker = async () => {
    while (next < items.length && !signal?.aborted) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
}

/** The websites due, their home page fetched `concurrency` at once; their new statuses saved. */
async function checkSites(o: VerifyOptions, cutoff: string, now: () => Date, summary: VerifySummary): Promise<SiteStatusRow[]> {
  const sites = await sitesToVerify(o.db, cutoff, o.limit);
  const statuses: SiteStatusRow[] = [];
  await forEachAtOnce(sites, o.concurrency, o.signal, async (site) => {
    const crawl = await o.crawler.crawlSite(site.url, undefined, o.signal);
    const status = websiteStatusOf(crawl, site.url, site);
    if (status.site_status === 'unknown' && site.site_status !== null && site.site_status !== 'unknown') return;
    statuses.push({ id: site.id, ...status, status_checked_at: now().toISOString() });
    if (status.site_status !== site.site_status) summary.changed++;
  });
  await saveSiteStatuses(o.db, statuses);
  summary.sites = sites.length;
  return statuses;
}

/**
 * The email domains due, asked through DNS a few dozen at once (all at once, ten thousand UDP questions to one
 * resolver lose answers and wait out their timeouts); their verdicts saved.
 */
async function checkDomains(
  o: VerifyOptions,
  cutoff: string,
  now: () => Date,
  summary: VerifySummary,
): Promise<Array<{ domain: string; status: 'valid_domain' | 'no_mx' | 'unknown' }>> {
  const domains = await domainsToVerify(o.db, cutoff, o.limit);
  const verdicts: Array<{ domain: string; status: 'valid_domain' | 'no_mx' | 'unknown' }> = [];
  await forEachAtOnce(domains, Math.min(o.concurrency, DOMAINS_AT_ONCE), o.signal, async ({ domain, status }) => {
    const verdict = await o.checker.check(`postmaster@${domain}`);
    const next: 'valid_domain' | 'no_mx' | 'unknown' = verdict === 'deliverable_domain' ? 'valid_domain' : verdict;
    if (next !== 'unknown' && next !== status) summary.changed++;
    verdicts.push({ domain, status: next });
  });
  await saveDomainVerdicts(o.db, verdicts, now().toISOString());
  summary.domains = domains.length;
  return verdicts;
}

/** DNS questions in flight at most (each domain asks MX, then A and AAAA where there is no MX). */
const DOMAINS_AT_ONCE = 64;

/**
 * `serve`'s re-verification in the background (VERIFY_INTERVAL_MS; off at 0): a round checks at most `VERIFY_BATCH`
 * websites and email domains that are due, with the crawler limited to home pages. Several servers may run it:
 * a site checked twice is only checked twice.
 */
export class VerifyLoop {
  private loop: PollLoop | undefined;
  private tools: ReturnType<typeof crawlTools> | undefined;
  private readonly stop = new AbortController();

  constructor(
    private readonly o: { db: Db; config: Config; log?: { info(obj: unknown, msg: string): void; warn(obj: unknown, msg: string): void } },
  ) {}

  start(): void {
    const { config } = this.o;
    if (config.VERIFY_INTERVAL_MS <= 0) return;
    this.loop = new PollLoop(
      async () => {
        this.tools ??= crawlTools(config, { maxPagesPerSite: 1, concurrency: config.VERIFY_CONCURRENCY });
        const summary = await verifyOnce({
          db: this.o.db,
          crawler: this.tools.crawler,
          checker: this.tools.checker,
          afterDays: config.VERIFY_AFTER_DAYS,
          limit: config.VERIFY_BATCH,
          concurrency: config.VERIFY_CONCURRENCY,
          signal: this.stop.signal,
        });
        if (summary.sites + summary.domains > 0) this.o.log?.info({ verify: summary }, 'websites and email domains checked again');
      },
      config.VERIFY_INTERVAL_MS,
      (error) => this.o.log?.warn({ err: error }, 'a round of re-verification failed: it is tried again next round'),
    );
    this.loop.schedule(config.VERIFY_INTERVAL_MS);
  }

  async close(): Promise<void> {
    this.stop.abort();
    this.tools?.crawler.close();
    await this.loop?.close();
  }
}
