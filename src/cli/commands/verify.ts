import type { Command } from 'commander';
import { prepareDatabase } from '../../bootstrap.ts';
import { integerOption, withDb } from '../options.ts';

/** `leadatlas verify`: the email domains and websites checked longer ago than VERIFY_AFTER_DAYS, checked again (docs/trust.md). */
export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description(
      "check again the email domains (DNS) and websites (their home page, through the crawler's guard and politeness) last checked longer ago than VERIFY_AFTER_DAYS; update their statuses and the places' trust",
    )
    .option('--after-days <n>', 'check what was last checked longer ago than this (default VERIFY_AFTER_DAYS)', integerOption(0))
    .option('--limit <n>', 'check at most this many websites and this many email domains', integerOption(1))
    .option('--concurrency <n>', 'websites fetched at once (default VERIFY_CONCURRENCY)', integerOption(1, 4096))
    .action((opts: { afterDays?: number; limit?: number; concurrency?: number }) =>
      withDb(async (db, config) => {
        await prepareDatabase(db);
        const { verifyCommand } = await import('../../modules/enrichment/verify.cli.ts');
        await verifyCommand(db, config, opts, (line) => console.log(line));
      }),
    );
}
