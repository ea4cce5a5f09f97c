import type { Command } from 'commander';
import { prepareDatabase } from '../../bootstrap.ts';
import { CommandFailure, feedLimits, integerOption, log, withDb } from '../options.ts';

/** `leadatlas follow URL`: an OpenStreetMap dataset kept up to date from a replication feed. */
export function registerFollow(program: Command): void {
  program
    .command('follow')
    .description(
      'keep an OpenStreetMap dataset up to date from a replication feed (state.txt and NNN/NNN/NNN.osc.gz, minutely, hourly or daily): applies each change file in order and records where it is; runs until stopped (see docs/importing-osm.md, "Following a feed")',
    )
    .argument('<url>', 'the replication directory, e.g. https://download.geofabrik.de/europe/monaco-updates/')
    .option('--once', 'apply the change files the feed has now, then exit')
    .option(
      '--from <n>',
      'the first change file to apply when the dataset follows no feed yet (default: the next one the feed publishes)',
      integerOption(1),
    )
    .option('-d, --dataset <name>', 'the imported OpenStreetMap dataset the feed updates (default: the only one)')
    .option('-s, --source <source>', 'source name of its places (default osm)')
    .option('--allow-private-networks', 'let the feed URL reach private and loopback addresses (a mirror on the local network)')
    .action((url: string, opts: { once?: boolean; from?: number; dataset?: string; source?: string; allowPrivateNetworks?: boolean }) =>
      withDb(async (db, config) => {
        await prepareDatabase(db);
        const { followFeed } = await import('../../modules/importers/follow.service.ts');
        const { ReplicationError } = await import('../../modules/importers/replication.ts');
        const stop = new AbortController();
        process.once('SIGINT', () => stop.abort());
        process.once('SIGTERM', () => stop.abort());
        const summary = await followFeed(db, url, {
          allowPrivate: opts.allowPrivateNetworks === true,
          ...feedLimits(config),
          pollSeconds: config.FOLLOW_POLL_SECONDS,
          signal: stop.signal,
          log,
          ...(opts.once ? { once: true } : {}),
          ...(opts.from !== undefined ? { from: opts.from } : {}),
          ...(opts.dataset !== undefined ? { dataset: opts.dataset } : {}),
          ...(opts.source !== undefined ? { source: opts.source } : {}),
        }).catch((error: unknown) => {
          if (error instanceof ReplicationError)
            throw new CommandFailure(
              `leadatlas follow: stopped, the catalog is as the last whole change file left it: ${error.message}`,
              3,
            );
          throw error;
        });
        log(`${summary.dataset}: ${summary.applied} change files applied, at ${summary.sequence}`);
      }),
    );
}
