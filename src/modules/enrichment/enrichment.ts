import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { PollLoop } from '../../infra/poll-loop.ts';
import { Crawler } from './crawler/crawler.ts';
import { EmailDomainChecker } from './email-check.ts';
import { EnrichmentRun, linkPlaces, type PipelineOptions } from './enrichment.service.ts';
import { ExtractionPool } from './extract/extract-pool.ts';
import { createResolver } from './resolver.ts';

/** The crawler and the email check as the configuration sets them, for one process. */
export interface EnrichmentTools {
  pipeline: PipelineOptions;
  close(): void;
}

/**
 * The crawler and the email check as the configuration sets them: one resolver for both, every request through
 * the outbound guard, robots.txt and the per-host pause. `maxPagesPerSite`: 1 for a check of the home page alone.
 */
export function crawlTools(config: Config, overrides: { maxPagesPerSite?: number; concurrency?: number } = {}) {
  const dnsServers = config.ENRICH_DNS_SERVERS?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const resolver = createResolver({ dnsServers, timeoutMs: config.ENRICH_CONNECT_TIMEOUT_MS });
  const crawler = new Crawler({
    userAgent: config.ENRICH_USER_AGENT,
    resolver,
    allowPrivate: config.ENRICH_ALLOW_PRIVATE_NETWORKS,
    connectTimeoutMs: config.ENRICH_CONNECT_TIMEOUT_MS,
    headersTimeoutMs: config.ENRICH_HEADERS_TIMEOUT_MS,
    bodyTimeoutMs: config.ENRICH_BODY_TIMEOUT_MS,
    maxPageBytes: config.ENRICH_MAX_PAGE_BYTES,
    maxPagesPerSite: overrides.maxPagesPerSite ?? config.ENRICH_MAX_PAGES,
    maxRedirects: 5,
    perHostDelayMs: config.ENRICH_HOST_DELAY_MS,
    concurrency: overrides.concurrency ?? Math.max(config.ENRICH_CONCURRENCY, config.ENRICH_WORKERS),
  });
  return { resolver, crawler, checker: new EmailDomainChecker({ resolver, cacheEntries: 10_000 }) };
}

export function enrichmentTools(db: Db, config: Config): EnrichmentTools {
  const { crawler, checker } = crawlTools(config);
  const pool = config.ENRICH_EXTRACT_THREADS > 0 ? new ExtractionPool(config.ENRICH_EXTRACT_THREADS) : undefined;
  return {
    pipeline: {
      db,
      crawler,
      checker,
      refreshDays: config.ENRICH_REFRESH_DAYS,
      leaseSeconds: config.ENRICH_LEASE,
      addressConcurrency: config.ENRICH_ADDRESS_CONCURRENCY,
      ...(pool ? { extract: (pages, context) => pool.extract(pages, context) } : {}),
    },
    close: () => {
      crawler.close();
      void pool?.close();
    },
  };
}

/** Places whose sites are looked for again in the background (new and re-imported places), at most this often. */
const relinkEveryMs = 10 * 60_000;

/** What the worker logs through: Fastify's logger in `serve`, lines on stderr in `leadatlas enrich --watch`. */
export interface WorkerLog {
  info(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/**
 * Enrichment that keeps going: ties new and changed places to their sites now and then and crawls the
 * queue, `workers` sites at once, highest priority (a job's sites) first, then waits `pollMs` for more.
 * `serve` runs it with ENRICH_WORKERS; `leadatlas enrich --watch` with ENRICH_CONCURRENCY, in a process of
 * its own. Stopping puts the sites in hand back in the queue.
 */
export class EnrichmentWorker {
  private readonly loop: PollLoop;
  private readonly stop = new AbortController();
  private tools: EnrichmentTools | undefined;
  private linkedAt = 0;
  private run: EnrichmentRun | undefined;

  private readonly workers: number;

  constructor(private readonly o: { db: Db; config: Config; log: WorkerLog; pollMs?: number; workers?: number }) {
    this.workers = o.workers ?? o.config.ENRICH_WORKERS;
    this.loop = new PollLoop(
      () => this.round(),
      o.pollMs ?? 5000,
      (err: unknown) => o.log.error({ err }, 'enrichment: a round of the queue failed'),
    );
  }

  start(): void {
    if (this.workers > 0) this.loop.schedule(0);
  }

  /** Look at the queue now (a job just raised some sites). */
  poke(): void {
    if (this.workers > 0) this.loop.schedule(0);
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.loop.close();
    this.tools?.close();
  }

  private async round(): Promise<void> {
    const { db, config, log } = this.o;
    this.tools ??= enrichmentTools(db, config);
    this.run ??= new EnrichmentRun(this.tools.pipeline);
    if (Date.now() - this.linkedAt >= relinkEveryMs) {
      const linked = await linkPlaces(db, {});
      this.linkedAt = Date.now();
      log.info({ places: linked.places, sites: linked.siteIds.length }, 'enrichment: places tied to their sites');
    }
    const summary = await this.run.run({ concurrency: this.workers, signal: this.stop.signal });
    if (summary.sites > 0) log.info({ ...summary }, 'enrichment: sites crawled');
  }
}
