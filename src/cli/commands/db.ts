import type { Command } from 'commander';
import { prepareDatabase } from '../../bootstrap.ts';
import { loadConfig } from '../../config.ts';
import { openDatabase } from '../../infra/db/database.ts';
import { CommandFailure, integerOption, log, withDb } from '../options.ts';
import { copyProgressRenderer } from '../progress.ts';

/** `leadatlas db copy` and `leadatlas db backup`: a whole installation moved between databases, or backed up. */
export function registerDb(program: Command): void {
  const dbCommand = program.command('db').description('move a whole installation between databases, or back it up');

  dbCommand
    .command('copy')
    .description(
      'copy the catalog, accounts, tokens, searches, exports, leads and usage from one database to another (resumable, checked by counts and checksums)',
    )
    .requiredOption('--from <url>', 'source DATABASE_URL (sqlite:PATH or postgres://…)')
    .requiredOption('--to <url>', 'target DATABASE_URL; migrated first')
    .option('--batch-size <n>', 'rows per transaction', integerOption(1, 100_000), 1000)
    .action(async (opts: { from: string; to: string; batchSize: number }) => {
      const { copyDatabase, CopyMismatch } = await import('../../infra/db/copy.ts');
      const from = openDatabase(loadConfig({ DATABASE_URL: opts.from }).DATABASE_URL);
      const to = openDatabase(loadConfig({ DATABASE_URL: opts.to }).DATABASE_URL);
      try {
        await prepareDatabase(from);
        await prepareDatabase(to, log);
        const report = await copyDatabase(from, to, { batchSize: opts.batchSize, onProgress: copyProgressRenderer() }).catch(
          (error: unknown) => {
            if (error instanceof CopyMismatch)
              throw new CommandFailure(`leadatlas: the copy does not match its source: ${error.message}`, 1);
            throw error;
          },
        );
        for (const r of report) {
          console.error(
            `${r.table.padEnd(12)} ${String(r.rows).padStart(10)} rows${r.resumedAt > 0 ? ` (${r.resumedAt} already there)` : ''}  sha256 ${r.checksum.slice(0, 16)}`,
          );
        }
        console.error('copy checked: every table has the same rows on both sides');
      } finally {
        await from.close();
        await to.close();
      }
    });

  dbCommand
    .command('backup')
    .description(
      'a consistent copy of the SQLite database in FILE while the server runs (online backup, checked before it takes the name FILE); PostgreSQL: use pg_dump',
    )
    .argument('<file>', 'the backup file (replaced only by a complete, checked backup)')
    .action((file: string) =>
      withDb(async (db) => {
        const { backupDatabase } = await import('../../infra/db/backup.ts');
        const result = await backupDatabase(db)(file);
        console.error(`backup checked and written: ${result.path} (${result.pages} pages, ${result.bytes} bytes)`);
      }),
    );
}
