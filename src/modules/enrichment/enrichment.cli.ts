import cliProgress from 'cli-progress';
import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { lowerPriority } from '../../infra/priority.ts';
import { iterateSearchPlaces } from '../search/bulk-reads.ts';
import { trueOpenCriteria } from '../search/open-filter.ts';
import { getSearchById } from '../search/saved-searches.ts';
import { EnrichmentRun, linkPlaces, type RunSummary, type Selection } from './enrichment.service.ts';
import { EnrichmentWorker, enrichmentTools, type WorkerLog } from './enrichment.ts';

export interface EnrichOptions {
  country?: string;
  source?: string;
  search?: string;
  limit?: number;
}

/**
 * Lowers the process's CPU priority to `nice` (ENRICH_NICE, or `--nice`) before the crawler, its
 * extraction threads and the database's threads start, so that they all inherit it. On a host that also
 * runs `serve`, the API's requests then get the cores first and the crawl takes what is left.
 */
export function applyEnrichPriority(nice: number, log: (line: string) => void): void {
  if (nice === 0) return;
  const result = lowerPriority(nice);
  if (result.error) log(`could not lower the CPU priority to nice ${nice}: ${result.error}`);
}

/**
 * `leadatlas enrich --watch`: enrichment as a service of its own, beside `serve` (which then runs with
 * ENRICH_WORKERS=0). It ties new and changed places to their sites every ten minutes, crawls whatever is
 * due, ENRICH_CONCURRENCY sites at once, highest priority (enrichment jobs' sites) first, then looks again
 * every `pollMs` for new sites and for sites that fell due. SIGTERM or SIGINT: it stops taking sites, puts
 * the ones in hand back in the queue (their crawls are cut) and resolves.
 */
export async function enrichWatchCommand(db: Db, config: Config, log: (line: string) => void, pollMs = 5000): Promise<void> {
  const lines: WorkerLog = {
    info: (fields, message) => log(`${message} ${JSON.stringify(fields)}`),
    error: (fields, message) => {
      const err = (fields as { err?: unknown }).err;
      log(`${message}: ${err instanceof Error ? err.message : JSON.stringify(fields)}`);
    },
  };
  const worker = new EnrichmentWorker({ db, config, log: lines, pollMs, workers: config.ENRICH_CONCURRENCY });
  const stopped = new Promise<string>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  // The worker's timers do not keep a process alive (in `serve` the server does); this one does, until a signal.
  const alive = setInterval(() => {}, 2 ** 30);
  log(`enrichment: watching the queue, ${config.ENRICH_CONCURRENCY} sites at once`);
  worker.start();
  const signal = await stopped;
  log(`enrichment: ${signal}, putting the sites in hand back in the queue`);
  await worker.close();
  clearInterval(alive);
  log('enrichment: stopped');
}

/**
 * `leadatlas enrich`: ties the chosen places to their sites, then crawls the sites that are due (never
 * crawled, or crawled longer ago than ENRICH_REFRESH_DAYS), ENRICH_CONCURRENCY at a time, with a progress
 * bar on a terminal and a summary at the end. Ctrl-C puts the sites in hand back in the queue; a process
 * killed outright leaves them to be taken again once their leases lapse. Either way the next run goes on
 * where this one stopped.
 */
export async function enrichCommand(db: Db, config: Config, options: EnrichOptions, log: (line: string) => void): Promise<RunSummary> {
  const selection: Selection = {};
  if (options.country !== undefined) {
    if (!/^[A-Za-z]{2}$/.test(options.country)) {
      throw new AppError('validation_failed', '--country takes an ISO 3166-1 alpha-2 code', {
        errors: [{ field: 'country', message: 'two letters, e.g. MC' }],
      });
    }
    selection.countryCode = options.country.toUpperCase();
  }
  if (options.source !== undefined) selection.source = options.source;
  if (options.search !== undefined) {
    const saved = await getSearchById(db, options.search);
    // No server's engine keeps the opening hours current in this process: a search with an open filter
    // runs the pass itself when the tables cannot answer it.
    const search = { ...saved, criteria: await trueOpenCriteria(db, saved.criteria, config.OPENING_HOURS_WINDOW_DAYS) };
    selection.placeIds = (async function* () {
      for await (const rows of iterateSearchPlaces(db, search)) yield rows.map((r) => Number(r.id));
    })();
  }
  const linked = await linkPlaces(db, selection);
  log(`${linked.places} places with a website or a business email, on ${linked.siteIds.length} sites`);
  const tools = enrichmentTools(db, config);
  const run = new EnrichmentRun(tools.pipeline);
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let bar: cliProgress.SingleBar | undefined;
  let withEmail = 0;
  try {
    const summary = await run.run({
      siteIds: linked.siteIds,
      concurrency: config.ENRICH_CONCURRENCY,
      limit: options.limit,
      signal: stop.signal,
      onTotal: (total) => {
        if (!process.stderr.isTTY) return;
        bar = new cliProgress.SingleBar(
          { format: 'sites {bar} {percentage}% | {value}/{total} | {emails} with email', stream: process.stderr, hideCursor: true },
          cliProgress.Presets.shades_classic,
        );
        bar.start(Math.max(total, 1), 0, { emails: 0 });
      },
      onSite: (done) => {
        if (done.emails > 0) withEmail++;
        bar?.increment(1, { emails: withEmail });
      },
    });
    bar?.stop();
    printEnrichSummary(summary, log);
    return summary;
  } finally {
    bar?.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    tools.close();
  }
}

export function printEnrichSummary(s: RunSummary, log: (line: string) => void): void {
  const outcomes = Object.entries(s.outcomes)
    .sort((a, b) => b[1] - a[1])
    .map(([o, n]) => `${o}: ${n}`)
    .join(', ');
  log(
    `enriched ${s.sites} sites${outcomes ? ` (${outcomes})` : ''} for ${s.places} places: ` +
      `${s.sitesWithEmail} sites with an email, ${s.sitesWithPhone} with a phone, ${s.sitesWithSocial} with a social profile` +
      (s.skipped > 0 ? `; ${s.skipped} held by another process` : ''),
  );
}
