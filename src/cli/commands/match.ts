import { basename } from 'node:path';
import cliProgress from 'cli-progress';
import { type Command, InvalidArgumentError } from 'commander';
import { prepareDatabase } from '../../bootstrap.ts';
import { AppError } from '../../infra/errors.ts';
import { MemoryRateLimiter } from '../../infra/ratelimit/ratelimit.ts';
import { AccountService } from '../../modules/auth/accounts.service.ts';
import { matchFile } from '../../modules/match/match-file.ts';
import type { ColumnMapping } from '../../modules/match/match-headers.ts';
import { fractionOption, log, withDb } from '../options.ts';

function mappingOption(value: string): ColumnMapping {
  try {
    const parsed: unknown = JSON.parse(value);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as ColumnMapping;
  } catch {
    // The usage error below.
  }
  throw new InvalidArgumentError('a JSON object of record field → header, such as {"name": "Company", "city": "Town"}');
}

/** `leadatlas match FILE --out FILE`: a list of the operator's matched against the catalog, with a progress bar. */
export function registerMatch(program: Command): void {
  program
    .command('match')
    .description(
      'match a list (CSV, XLSX or NDJSON, columns recognised by their headers) against the catalog: writes every row with the place id, score, decision and the catalog contacts appended',
    )
    .argument('<file>', 'the list')
    .requiredOption('--out <file>', "where to write the result (in the list's format: CSV, XLSX or NDJSON)")
    .option('--threshold <n>', 'lowest score that is a match (0–1); the default is the one whose precision is published', fractionOption)
    .option('--mapping <json>', 'record field → header, for columns the headers do not say', mappingOption)
    .option('--as-leads', 'every matched place becomes a lead of --account, so its only_new searches and exports leave it out')
    .option('--account <email>', 'the account whose leads the matched places become (with --as-leads)')
    .action((file: string, opts: { out: string; threshold?: number; mapping?: ColumnMapping; asLeads?: boolean; account?: string }) =>
      withDb(async (db) => {
        if (opts.asLeads && !opts.account) {
          throw new AppError('validation_failed', '--as-leads needs --account <email>: whose leads the matched places become', {
            errors: [{ field: '--account', message: 'is needed with --as-leads' }],
          });
        }
        await prepareDatabase(db);
        let leadsAccountId: number | undefined;
        if (opts.asLeads) {
          const account = await new AccountService(db, new MemoryRateLimiter()).findByEmail(opts.account!);
          if (!account)
            throw new AppError('not_found', `No account with email ${opts.account}`, {
              errors: [{ field: '--account', message: 'is not a known account email' }],
            });
          leadsAccountId = account.id;
        }
        const bar = process.stderr.isTTY
          ? new cliProgress.SingleBar(
              {
                format: `${basename(file)} {bar} {percentage}% | {value}/{total} rows | {matched} matched | {bad} bad`,
                stream: process.stderr,
                hideCursor: true,
              },
              cliProgress.Presets.shades_classic,
            )
          : undefined;
        const summary = await matchFile(db, {
          input: file,
          output: opts.out,
          mapping: opts.mapping,
          threshold: opts.threshold,
          leadsAccountId,
          onStart: (rows, mapping) => {
            log(
              `columns: ${Object.entries(mapping)
                .map(([field, header]) => `${field} ← ${header}`)
                .join(', ')}`,
            );
            bar?.start(rows, 0, { matched: 0, bad: 0 });
          },
          onProgress: (c) => bar?.update(c.rows_done, { matched: c.matched, bad: c.bad_rows }),
        });
        bar?.stop();
        log(
          `${basename(file)}: ${summary.rows_done} rows, ${summary.matched} matched (${summary.closed} closed or retired), ` +
            `${summary.rows_done - summary.matched - summary.bad_rows} unmatched, ${summary.bad_rows} bad → ${opts.out}` +
            (leadsAccountId === undefined ? '' : `; ${summary.matched} matched places are leads of ${opts.account}`),
        );
      }),
    );
}
