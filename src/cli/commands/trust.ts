import type { Command } from 'commander';
import { prepareDatabase } from '../../bootstrap.ts';
import { refreshTrust } from '../../modules/trust/trust.service.ts';
import { withDb } from '../options.ts';

/** `leadatlas trust`: the trust pass now (docs/trust.md), rather than in `serve`'s background. */
export function registerTrust(program: Command): void {
  program
    .command('trust')
    .description(
      'judge every email, phone and website of the places changed since the last pass (status, evidence, confidence) and their lead_score; --all judges every place',
    )
    .option('--all', 'judge every place, not only those changed since the last pass', false)
    .action((opts: { all: boolean }) =>
      withDb(async (db) => {
        await prepareDatabase(db);
        const started = performance.now();
        const pass = await refreshTrust(db, { all: opts.all });
        const seconds = (performance.now() - started) / 1000;
        console.log(
          `${pass.places} places judged${pass.full ? ' (all)' : ''}, ${pass.changed} changed, in ${seconds.toFixed(1)} s; caught up to places version ${pass.version}`,
        );
      }),
    );
}
