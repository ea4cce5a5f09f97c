import { Command, InvalidArgumentError } from 'commander';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { openDatabase, type Db } from '../infra/db/database.ts';
import { AppError } from '../infra/errors.ts';
import { importDemoDataIfEmpty, prepareDatabase } from '../bootstrap.ts';
import { catalogStats, printStats } from './stats.ts';
import { copyProgressRenderer, progressRenderer, printImportSummary } from './progress.ts';
import { isChangeFile, runImport } from '../modules/importers/import.service.ts';
import { expandImportArguments } from '../modules/importers/dataset.ts';
import { parseColumnMapping } from '../modules/importers/readers/generic.ts';
import { limitHeapGrowth } from '../infra/memory.ts';
import { rebuildOpeningHours, unparsedHours } from '../modules/places/opening-hours.repository.ts';
import { registerMarketCommands } from './market.ts';

const program = new Command()
  .name('leadatlas')
  .description(
    'LeadAtlas business-data API: serve, import and inspect the place catalog.\nConfiguration comes from environment variables (see README).',
  )
  .showHelpAfterError();

const log = (m: string) => console.error(m);

async function everyChangeFile(files: string[]): Promise<boolean> {
  for (const file of files) if (!(await isChangeFile(file).catch(() => false))) return false;
  return true;
}

async function withDb<T>(fn: (db: Db, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const db = openDatabase(config.DATABASE_URL);
  try {
    return await fn(db, config);
  } finally {
    await db.close();
  }
}

program
  .command('serve')
  .description('apply migrations, import the demo data into an empty catalog, and serve the API')
  .action(async () => {
    const config = loadConfig();
    const db = openDatabase(config.DATABASE_URL);
    await prepareDatabase(db, log);
    if (config.IMPORT_DEMO_DATA) {
      for (const s of await importDemoDataIfEmpty(db, config.DEMO_DATA_DIR, log)) printImportSummary(s);
    }
    // Loaded here, not at the top: the HTTP server's modules take start-up time that `import`, `stats`… never need.
    const { buildApp } = await import('../app.ts');
    // After the demo import (its worker holds the gazetteer, which would then be collected far more often).
    limitHeapGrowth();
    const app = await buildApp({ config, db });
    // On SIGTERM/SIGINT: stop accepting connections, let the requests in flight (streaming exports too)
    // finish for up to SHUTDOWN_TIMEOUT, cut what is left, then close the database and exit.
    let stopping = false;
    const shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      app.log.info({ signal, timeoutS: config.SHUTDOWN_TIMEOUT }, 'shutting down: no new connections, waiting for the requests in flight');
      const cut = setTimeout(() => {
        app.log.warn('shutdown timeout: closing the connections still open');
        app.server.closeAllConnections();
      }, config.SHUTDOWN_TIMEOUT * 1000);
      cut.unref();
      await app.close();
      clearTimeout(cut);
      await db.close();
      process.exit(0);
    };
    process.once('SIGINT', () => void shutdown('SIGINT'));
    process.once('SIGTERM', () => void shutdown('SIGTERM'));
    await app.listen({ host: config.HOST, port: config.PORT });
  });

program
  .command('migrate')
  .description('apply schema migrations and refresh reference data (categories, countries, cities)')
  .action(() => withDb((db) => prepareDatabase(db, log)));

interface ImportCliOptions {
  format?: string;
  encoding?: string;
  source?: string;
  dataset?: string;
  columns?: Record<string, string>;
  batchSize?: number;
  conflate: boolean;
  bbox?: [number, number, number, number];
  country?: string;
  minConfidence?: number;
  allowPrivateNetworks?: boolean;
}

function parseBbox(v: string): [number, number, number, number] {
  const n = v.split(',').map((x) => Number(x.trim()));
  const [minLon, minLat, maxLon, maxLat] = n as [number, number, number, number];
  const valid =
    n.length === 4 &&
    n.every(Number.isFinite) &&
    minLon >= -180 &&
    maxLon <= 180 &&
    minLat >= -90 &&
    maxLat <= 90 &&
    minLon <= maxLon &&
    minLat <= maxLat;
  if (!valid) throw new InvalidArgumentError('four numbers minLon,minLat,maxLon,maxLat within -180..180 and -90..90, min before max');
  return [minLon, minLat, maxLon, maxLat];
}

function parseCountry(v: string): string {
  if (!/^[A-Za-z]{2}$/.test(v)) throw new InvalidArgumentError('an ISO 3166-1 alpha-2 code such as DE or US');
  return v.toUpperCase();
}

function parseConfidence(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError('a number from 0 to 1');
  return n;
}

program
  .command('import')
  .description(
    'import place files (.osm.pbf, Parquet, NDJSON, CSV; gzip or plain) or Parquet URLs, detecting the format unless --format is given',
  )
  .argument(
    '<files...>',
    'files, http(s) URLs of Parquet files, or quoted patterns ("part-*.parquet"); with --dataset, the parts of one release',
  )
  .option('-f, --format <format>', 'format name (see `leadatlas formats`)')
  .option('-e, --encoding <encoding>', 'text encoding of CSV/NDJSON files (detected when omitted)')
  .option('-s, --source <source>', "source name stored with the places (defaults to the format's)")
  .option(
    '-d, --dataset <name>',
    'the dataset the file is a snapshot of (default: the file name without its suffixes, porto.osm.pbf → porto); re-importing a dataset retires its places the file no longer holds; for a change file (.osc), the OpenStreetMap dataset it updates (default: the only one)',
  )
  .option(
    '--columns <mapping>',
    'generic csv/ndjson: field=column pairs, e.g. "name=Business Name,phone=Tel" (see docs/importing.md)',
    parseColumnMapping,
  )
  .option('--batch-size <n>', 'places per transaction', (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > 100000) throw new InvalidArgumentError('a whole number from 1 to 100000');
    return n;
  })
  .option('--no-conflate', 'do not merge the records with places of other sources now (the next import that does takes them)')
  .option(
    '--bbox <minLon,minLat,maxLon,maxLat>',
    'Parquet: import only the places inside this box (row groups outside it are not read)',
    parseBbox,
  )
  .option('--country <XX>', 'Parquet: import only the places of this country (ISO 3166-1 alpha-2)', parseCountry)
  .option(
    '--min-confidence <c>',
    'Parquet: import only the places whose source confidence (Overture, 0 to 1) is at least c',
    parseConfidence,
  )
  .option('--allow-private-networks', 'let an http(s) URL reach private and loopback addresses (a mirror on the local network)')
  .action((files: string[], opts: ImportCliOptions) =>
    withDb(async (db) => {
      const parts = await expandImportArguments(files);
      await prepareDatabase(db);
      // A Parquet row group is decoded whole, a burst of short-lived objects: without the cap V8 lets the
      // worker's old generation grow to several times what it holds (peak RSS ~1 GB instead of ~0.5 GB).
      limitHeapGrowth();
      const { allowPrivateNetworks, ...importOptions } = opts;
      const http = { allowPrivate: allowPrivateNetworks === true };
      // --dataset with several files: the parts of one release, imported as one snapshot (change files
      // instead update the dataset in turn); without it each file is a dataset of its own.
      const oneSnapshot = opts.dataset !== undefined && parts.length > 1 && !(await everyChangeFile(parts));
      for (const group of oneSnapshot ? [parts] : parts.map((p) => [p])) {
        const summary = await runImport(db, null, group, { ...importOptions, http, onProgress: progressRenderer(group[0]!) });
        printImportSummary(summary);
      }
    }),
  );

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
    (v) => {
      const n = Number(v);
      if (!Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('a whole number from 1');
      return n;
    },
  )
  .option('-d, --dataset <name>', 'the imported OpenStreetMap dataset the feed updates (default: the only one)')
  .option('-s, --source <source>', 'source name of its places (default osm)')
  .option('--allow-private-networks', 'let the feed URL reach private and loopback addresses (a mirror on the local network)')
  .action((url: string, opts: { once?: boolean; from?: number; dataset?: string; source?: string; allowPrivateNetworks?: boolean }) =>
    withDb(async (db, config) => {
      await prepareDatabase(db);
      const { followFeed } = await import('../modules/importers/follow.service.ts');
      const stop = new AbortController();
      process.once('SIGINT', () => stop.abort());
      process.once('SIGTERM', () => stop.abort());
      const summary = await followFeed(db, url, {
        allowPrivate: opts.allowPrivateNetworks === true,
        timeoutMs: config.FOLLOW_TIMEOUT_MS,
        maxFileBytes: config.FOLLOW_MAX_FILE_BYTES,
        pollSeconds: config.FOLLOW_POLL_SECONDS,
        retryBaseMs: config.FOLLOW_RETRY_BASE_MS,
        signal: stop.signal,
        log,
        ...(opts.once ? { once: true } : {}),
        ...(opts.from !== undefined ? { from: opts.from } : {}),
        ...(opts.dataset !== undefined ? { dataset: opts.dataset } : {}),
        ...(opts.source !== undefined ? { source: opts.source } : {}),
      });
      log(`${summary.dataset}: ${summary.applied} change files applied, at ${summary.sequence}`);
    }),
  );

program
  .command('monitors')
  .description(
    'evaluate the monitors after each change of the catalog, in this process, until stopped: the evaluator of `serve` on its own, for installations that set MONITOR_EVALUATOR=off on their servers (see src/modules/monitors/README.md)',
  )
  .option('--once', 'evaluate the monitors behind the catalog now, then exit')
  .option(
    '--nice <n>',
    "CPU priority to lower the process to, 0-19 (every thread; default 10; 0: unchanged), so the API's threads on the same host come first",
    (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0 || n > 19) throw new InvalidArgumentError('a whole number from 0 to 19');
      return n;
    },
    10,
  )
  .action((opts: { once?: boolean; nice: number }) =>
    withDb(async (db, config) => {
      await prepareDatabase(db);
      const { monitorsCommand } = await import('../modules/monitors/monitors.cli.ts');
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

program
  .command('enrich')
  .description(
    "find emails, phones and social profiles on places' own websites: the sites never crawled, or crawled longer ago than ENRICH_REFRESH_DAYS (see README, Enrichment)",
  )
  .option('--country <code>', 'only places of this country (ISO 3166-1 alpha-2)')
  .option('--source <source>', 'only places of this source (osm, overture…)')
  .option('--search <id>', 'only the places of this saved search (srch_…)')
  .option('--limit <n>', 'crawl at most this many sites', (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('a whole number from 1');
    return n;
  })
  .option('--watch', 'keep going: crawl the queue as sites fall due and new places come, until SIGTERM (a service beside `serve`)')
  .option('--nice <n>', 'CPU priority to lower the process to, 0–19 (default ENRICH_NICE, 10; 0: unchanged)', (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0 || n > 19) throw new InvalidArgumentError('a whole number from 0 to 19');
    return n;
  })
  .action((opts: { country?: string; source?: string; search?: string; limit?: number; watch?: boolean; nice?: number }) =>
    withDb(async (db, config) => {
      const { applyEnrichPriority, enrichCommand, enrichWatchCommand } = await import('../modules/enrichment/enrichment.cli.ts');
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

program
  .command('formats')
  .description('list the import formats and how each is detected')
  .action(async () => {
    const { readerFactories } = await import('../modules/importers/readers/index.ts');
    const { osmChangeFormat } = await import('../modules/importers/osm-change.service.ts');
    for (const f of readerFactories) console.log(`${f.format.padEnd(18)} ${f.description}`);
    console.log(
      `${osmChangeFormat.padEnd(18)} OpenStreetMap change file (.osc, .osc.gz): creates, modifies and retires the places of an imported OSM dataset`,
    );
  });

program
  .command('stats')
  .description('places per country and per category')
  .option('--json', 'print JSON')
  .option('--top <n>', 'categories to list', (v) => Number(v), 25)
  .action((opts: { json?: boolean; top: number }) =>
    withDb(async (db) => {
      await prepareDatabase(db);
      const stats = await catalogStats(db, opts.top);
      if (opts.json) console.log(JSON.stringify(stats, null, 2));
      else printStats(stats);
    }),
  );

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

const dbCommand = program.command('db').description('move a whole installation between databases, or back it up');

dbCommand
  .command('copy')
  .description(
    'copy the catalog, accounts, tokens, searches, exports, leads and usage from one database to another (resumable, checked by counts and checksums)',
  )
  .requiredOption('--from <url>', 'source DATABASE_URL (sqlite:PATH or postgres://…)')
  .requiredOption('--to <url>', 'target DATABASE_URL; migrated first')
  .option(
    '--batch-size <n>',
    'rows per transaction',
    (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1 || n > 100000) throw new InvalidArgumentError('a whole number from 1 to 100000');
      return n;
    },
    1000,
  )
  .action(async (opts: { from: string; to: string; batchSize: number }) => {
    const { copyDatabase } = await import('../infra/db/copy.ts');
    const from = openDatabase(loadConfig({ DATABASE_URL: opts.from }).DATABASE_URL);
    const to = openDatabase(loadConfig({ DATABASE_URL: opts.to }).DATABASE_URL);
    try {
      await prepareDatabase(from);
      await prepareDatabase(to, log);
      const report = await copyDatabase(from, to, { batchSize: opts.batchSize, onProgress: copyProgressRenderer() });
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
      const { backupDatabase } = await import('../infra/db/backup.ts');
      const result = await backupDatabase(db)(file);
      console.error(`backup checked and written: ${result.path} (${result.pages} pages, ${result.bytes} bytes)`);
    }),
  );

registerMarketCommands(program, withDb);

// The account and token commands (and their password hashing) load only when the command line may be one of
// them: less start-up for every other command. Commander's own options go before the command name.
const ownCommands = new Set(program.commands.map((c) => c.name()));
const commandName = process.argv.slice(2).find((a) => !a.startsWith('-'));
if (commandName === undefined || !ownCommands.has(commandName)) {
  const { registerAuthCommands } = await import('../modules/auth/auth.cli.ts');
  registerAuthCommands(program, withDb);
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(78);
  }
  if (error instanceof Error && error.name === 'CopyMismatch') {
    console.error(`leadatlas: the copy does not match its source: ${error.message}`);
    process.exit(1);
  }
  if (error instanceof Error && error.name === 'ReplicationError') {
    console.error(`leadatlas follow: stopped, the catalog is as the last whole change file left it: ${error.message}`);
    process.exit(3);
  }
  if (error instanceof AppError) {
    console.error(`leadatlas: ${error.message}`);
    for (const e of error.extras.errors ?? [])
      console.error(`  ${e.field}: ${e.message}${e.allowed ? ` (allowed: ${JSON.stringify(e.allowed)})` : ''}`);
    process.exit(2);
  }
  throw error;
}
