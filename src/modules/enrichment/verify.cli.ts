import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { crawlTools } from './enrichment.ts';
import { type VerifySummary, verifyOnce } from './verify.ts';

/** `leadatlas verify` once: every website and email domain due (or `limit` of each), then a line of figures. */
export async function verifyCommand(
  db: Db,
  config: Config,
  options: { afterDays?: number; limit?: number; concurrency?: number },
  log: (line: string) => void,
): Promise<VerifySummary> {
  const concurrency = options.concurrency ?? config.VERIFY_CONCURRENCY;
  const { crawler, checker } = crawlTools(config, { maxPagesPerSite: 1, concurrency });
  const started = performance.now();
  try {
    const summary = await verifyOnce({
      db,
      crawler,
      checker,
      afterDays: options.afterDays ?? config.VERIFY_AFTER_DAYS,
      limit: options.limit ?? Number.MAX_SAFE_INTEGER,
      concurrency,
    });
    const seconds = (performance.now() - started) / 1000;
    log(
      `${summary.sites} websites and ${summary.domains} email domains checked in ${seconds.toFixed(1)} s (${(summary.sites / Math.max(seconds, 0.001)).toFixed(0)} websites/s); ${summary.changed} statuses changed, ${summary.places} places judged anew (websites ${(summary.ms.sites / 1000).toFixed(1)} s, domains ${(summary.ms.domains / 1000).toFixed(1)} s, places ${(summary.ms.places / 1000).toFixed(1)} s)`,
    );
    return summary;
  } finally {
    crawler.close();
  }
}
