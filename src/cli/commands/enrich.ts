import type { Command } from 'commander';
import { prepareDatabase } from '../../bootstrap.ts';
import { AppError } from '../../infra/errors.ts';
import { integerOption, log, withDb } from '../options.ts';

/** `leadatlas enrich`: contacts from the places' own websites, once or `--watch`. */
export function registerEnrich(program: Command): void {
  program
    .command('enrich')
    .description(
      "find emails, phones and social profiles on places' own websites: the sites never crawled, or crawled longer ago than ENRICH_REFRESH_DAYS (see README, Enrichment)",
    )
    .option('--country <code>', 'only places of this country (ISO 3166-1 alpha-2)')
    .option('--source <source>', 'only places of this source (osm, overture…)')
    .option('--search <id>', 'only the places of this saved search (srch_…)')
    .option('--limit <n>', 'crawl at most this many sites', integerOption(1))
    .option('--watch', 'keep going: crawl the queue as sites fall due and new places come, until SIGTERM (a service beside `serve`)')
    .option('--nice <n>', 'CPU priority to lower the process to, 0–19 (default ENRICH_NICE, 10; 0: unchanged)', integerOption(0, 19))
    .action((opts: { country?: string; source?: string; search?: string; limit?: number; watch?: boolean; nice?: number }) =>
      withDb(async (db, config) => {
        const { applyEnrichPriority, enrichCommand, enrichWatchCommand } = await import('../../modules/enrichment/enrichment.cli.ts');
        // Before anything starts a thread (the database's, the extraction's), so that every thread runs at it.
        applyEnrichPriority(opts.nice ?? config.ENRICH_NICE, log);
        if (opts.watch) {
          const selection = (['country', 'source', 'search', 'limit'] as const).filter((k) => opts[k] !== undefined);
          if (selection.length > 0)
            throw new AppError('validation_failed', '--watch crawls the whole queue, without a selection', {
              errors: selection.map((k) => ({ field: k, message: `--${k} is for a single run, without --watch` })),
            });
        }
        await prepareDatabase(db);
        if (opts.watch) await enrichWatchCommand(db, config, log);
        else await enrichCommand(db, config, opts, log);
      }),
    );
}
