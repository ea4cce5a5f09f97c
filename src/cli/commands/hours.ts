import type { Command } from 'commander';
import { prepareDatabase } from '../../bootstrap.ts';
import { rebuildOpeningHours, unparsedHours } from '../../modules/places/opening-hours.repository.ts';
import { withDb } from '../options.ts';

/** `leadatlas hours`: the opening-hours pass now, and the values it cannot parse. */
export function registerHours(program: Command): void {
  program
    .command('hours')
    .description(
      'recompute when each place is open (open_now, open_at) from its opening_hours now, rather than before the next such search; list the values that cannot be parsed',
    )
    .option('--unparsed <n>', 'unparseable values to list, most places first', (v) => Number(v), 20)
    .action((opts: { unparsed: number }) =>
      withDb(async (db, config) => {
        await prepareDatabase(db);
        const pass = await rebuildOpeningHours(db, Date.now(), config.OPENING_HOURS_WINDOW_DAYS);
        console.log(
          `${pass.places} places with hours: ${pass.places - pass.unparsed} in ${pass.schedules} schedules, ${pass.unparsed} unparsed; ${pass.intervals} open intervals from ${new Date(pass.window.fromMs).toISOString().slice(0, 10)} to ${new Date(pass.window.toMs).toISOString().slice(0, 10)}`,
        );
        for (const u of await unparsedHours(db, opts.unparsed)) console.log(`${u.places}\t${JSON.stringify(u.value)}\t${u.reason}`);
      }),
    );
}
