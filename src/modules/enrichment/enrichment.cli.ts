import cliProgress from 'cli-progress';
import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { getSearchById, iterateSearchPlaces } from '../search/search.service.ts';
import { enrichmentTools } from './enrichment.ts';
import { EnrichmentRun, linkPlaces, type RunSummary, type Selection } from './enrichment.service.ts';

export interface EnrichOptions {
  country?: string;
  source?: string;
  search?: string;
  limit?: number;
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
    const search = await getSearchById(db, options.search);
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
