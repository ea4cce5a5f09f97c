import type { Command } from 'commander';
import { prepareDatabase } from '../../bootstrap.ts';
import { integerOption, log, withDb } from '../options.ts';

/** `leadatlas monitors`: the monitor evaluator in a process of its own. */
export function registerMonitors(program: Command): void {
  program
    .command('monitors')
    .description(
      'evaluate the monitors after each change of the catalog, in this process, until stopped: the evaluator of `serve` on its own, for installations that set MONITOR_EVALUATOR=off on their servers (see src/modules/monitors/README.md)',
    )
    .option('--once', 'evaluate the monitors behind the catalog now, then exit')
    .option(
      '--nice <n>',
      "CPU priority to lower the process to, 0-19 (every thread; default 10; 0: unchanged), so the API's threads on the same host come first",
      integerOption(0, 19),
      10,
    )
    .action((opts: { once?: boolean; nice: number }) =>
      withDb(async (db, config) => {
        await prepareDatabase(db);
        const { monitorsCommand } = await import('../../modules/monitors/monitors.cli.ts');
        const stop = new AbortController();
        const onSignal = () => {
          log('monitors: stopping after the round in progress');
          stop.abort();
        };
        process.once('SIGINT', onSignal);
        process.once('SIGTERM', onSignal);
        await monitorsCommand(db, config, { once: opts.once === true, nice: opts.nice, signal: stop.signal }, log);
      }),
    );
}
