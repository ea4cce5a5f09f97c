import { InvalidArgumentError, type Command } from 'commander';
import type { Config } from '../config.ts';
import type { Db } from '../infra/db/database.ts';
import type { HttpReadOptions } from '../modules/importers/importer.types.ts';
import type { MarketSummary } from '../modules/importers/publishers/market.service.ts';
import type { PublisherImport } from '../modules/importers/publishers/publisher-import.service.ts';
import { printImportSummary, progressRenderer } from './progress.ts';

/**
 * `leadatlas import overture|foursquare|osm --country XX` and `leadatlas market XX` (docs/market.md): a
 * country from its publishers, found, read, kept inside its border and merged. The work is in
 * `modules/importers/publishers/`; this file parses the options and prints.
 */

type WithDb = <T>(fn: (db: Db, config: Config) => Promise<T>) => Promise<T>;

const log = (m: string) => console.error(m);

function parseCountry(v: string): string {
  if (!/^[A-Za-z]{2}$/.test(v)) throw new InvalidArgumentError('an ISO 3166-1 alpha-2 code such as PT or DE');
  return v.toUpperCase();
}

function parseBox(v: string): [number, number, number, number] {
  const n = v.split(',').map((x) => Number(x.trim()));
  const [minLon, minLat, maxLon, maxLat] = n as [number, number, number, number];
  if (
    n.length !== 4 ||
    !n.every(Number.isFinite) ||
    minLon < -180 ||
    maxLon > 180 ||
    minLat < -90 ||
    maxLat > 90 ||
    minLon > maxLon ||
    minLat > maxLat
  )
    throw new InvalidArgumentError('four numbers minLon,minLat,maxLon,maxLat within -180..180 and -90..90, min before max');
  return [minLon, minLat, maxLon, maxLat];
}

function parseUrl(v: string): string {
  if (!/^https?:\/\/[^/]/i.test(v)) throw new InvalidArgumentError('an http(s) URL');
  return v.endsWith('/') ? v : `${v}/`;
}

/** `Name: value`, repeatable: headers sent with every request to the publisher. */
function collectHeader(v: string, previous: Record<string, string> = {}): Record<string, string> {
  const m = /^([A-Za-z0-9!#$%&'*+.^_`|~-]+):\s*(.*)$/.exec(v);
  if (!m || /[\r\n]/.test(m[2]!)) throw new InvalidArgumentError('"Name: value", e.g. "Authorization: Bearer TOKEN"');
  return { ...previous, [m[1]!.toLowerCase()]: m[2]! };
}

function parseBatch(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 100000) throw new InvalidArgumentError('a whole number from 1 to 100000');
  return n;
}

interface SourceCliOptions {
  country?: string;
  bbox?: [number, number, number, number];
  release?: string;
  baseUrl?: string;
  dataset?: string;
  header?: Record<string, string>;
  allowPrivateNetworks?: boolean;
  batchSize?: number;
  conflate: boolean;
  cacheDir: string;
}

const httpOf = (o: { header?: Record<string, string>; allowPrivateNetworks?: boolean }): HttpReadOptions => ({
  allowPrivate: o.allowPrivateNetworks === true,
  ...(o.header ? { headers: o.header } : {}),
});

const followOf = (config: Config) => ({
  timeoutMs: config.FOLLOW_TIMEOUT_MS,
  maxFileBytes: config.FOLLOW_MAX_FILE_BYTES,
  retryBaseMs: config.FOLLOW_RETRY_BASE_MS,
});

const share = (n: number, of: number) => (of > 0 ? `${((100 * n) / of).toFixed(1)} %` : '-');

export function printPublisherImport(r: PublisherImport): void {
  if (r.summary) printImportSummary(r.summary);
  const flagged = Object.entries(r.summary?.skipped_reasons ?? {})
    .filter(([k]) => k.startsWith('flagged '))
    .map(([k, n]) => `${k.slice(8)} ${n}`);
  console.error(
    `${r.publisher} ${r.release} (dataset ${r.dataset}): ${r.parts.read} of ${r.parts.total} files read; kept ${r.kept} (closed ${r.closed}), ` +
      `outside the border ${r.outsideBorder}${flagged.length > 0 ? `, flagged and not imported: ${flagged.join(', ')}` : ''}` +
      (r.followed ? `; feed ${r.followed.applied} change files applied, at ${r.followed.sequence}` : ''),
  );
}

function printMarket(s: MarketSummary): void {
  console.log(`\n${s.country}: places per source and after merging (phone, website, email)`);
  const row = (label: string, c: MarketSummary['merged']) =>
    console.log(
      `  ${label.padEnd(12)} ${String(c.places).padStart(9)}   phone ${share(c.phone, c.places).padStart(7)}   website ${share(c.website, c.places).padStart(7)}   email ${share(c.email, c.places).padStart(7)}`,
    );
  for (const [source, c] of Object.entries(s.bySource)) row(source, c);
  row('merged', s.merged);
}

/** The options every publisher import takes. */
function publisherCommand(parent: Command, name: string, description: string): Command {
  return parent
    .command(name)
    .description(description)
    .option('--country <XX>', 'the country (ISO 3166-1 alpha-2) whose border keeps places', parseCountry)
    .option('--base-url <url>', "the publisher's root, for a mirror (default: the public address, docs/market.md)", parseUrl)
    .option('-d, --dataset <name>', 'the dataset the import is a snapshot of (default PUBLISHER-XX, e.g. overture-PT)')
    .option('--header <name: value>', 'a header sent with every request, e.g. "Authorization: Bearer …" (repeatable)', collectHeader)
    .option('--allow-private-networks', 'let the URLs reach private and loopback addresses (a mirror on the local network)')
    .option('--batch-size <n>', 'places per transaction', parseBatch)
    .option('--no-conflate', 'do not merge the records with places of other sources now');
}

export function registerMarketCommands(program: Command, withDb: WithDb): void {
  // Options after `import overture` are the subcommand's, not `import`'s own `--country`.
  program.enablePositionalOptions();
  const importCommand = program.commands.find((c) => c.name() === 'import')!;
  importCommand.enablePositionalOptions();
  registerPublisherImports(importCommand, withDb);
  registerMarket(program, withDb);
}

function registerPublisherImports(importCommand: Command, withDb: WithDb): void {
  const release = async (publisher: 'overture' | 'foursquare', o: SourceCliOptions) =>
    withDb(async (db) => {
      const bar = progressRenderer(publisher);
      const { prepareDatabase } = await import('../bootstrap.ts');
      const service = await import('../modules/importers/publishers/publisher-import.service.ts');
      await prepareDatabase(db);
      const run = publisher === 'overture' ? service.importOverture : service.importFoursquare;
      const result = await run(db, {
        http: httpOf(o),
        conflate: o.conflate,
        log,
        ...(o.country ? { country: o.country } : {}),
        ...(o.bbox ? { bbox: o.bbox } : {}),
        ...(o.release ? { release: o.release } : {}),
        ...(o.baseUrl ? { baseUrl: o.baseUrl } : {}),
        ...(o.dataset ? { dataset: o.dataset } : {}),
        ...(o.batchSize ? { batchSize: o.batchSize } : {}),
        ...(bar ? { onProgress: bar } : {}),
      });
      printPublisherImport(result);
    });

  publisherCommand(
    importCommand,
    'overture',
    "Overture's places of a country: its release found through the STAC catalog, only the files and row groups that meet the country read",
  )
    .option('--bbox <minLon,minLat,maxLon,maxLat>', 'only the places inside this box', parseBox)
    .option('--release <id>', 'latest, or a release of the catalog (2026-04-15.0)', 'latest')
    .action((o: SourceCliOptions) => release('overture', o));

  publisherCommand(importCommand, 'foursquare', 'Foursquare OS Places of a country from the release folder release/dt=…/places/parquet/')
    .option('--bbox <minLon,minLat,maxLon,maxLat>', 'only the places inside this box', parseBox)
    .option('--release <dt>', 'latest, or a release of the bucket (dt=2026-04-08)', 'latest')
    .action((o: SourceCliOptions) => release('foursquare', o));

  publisherCommand(
    importCommand,
    'osm',
    "OpenStreetMap: the country's Geofabrik extract, then its replication feed from the extract's own sequence",
  )
    .option('--cache-dir <dir>', 'where the extract is downloaded to (resumed from after an interruption)', './var/downloads')
    .action((o: SourceCliOptions) =>
      withDb(async (db, config) => {
        const { prepareDatabase } = await import('../bootstrap.ts');
        const { importOsm } = await import('../modules/importers/publishers/publisher-import.service.ts');
        await prepareDatabase(db);
        const bar = progressRenderer('osm');
        const result = await importOsm(db, {
          http: httpOf(o),
          conflate: o.conflate,
          cacheDir: o.cacheDir,
          follow: followOf(config),
          log,
          ...(o.country ? { country: o.country } : {}),
          ...(o.baseUrl ? { baseUrl: o.baseUrl } : {}),
          ...(o.dataset ? { dataset: o.dataset } : {}),
          ...(o.batchSize ? { batchSize: o.batchSize } : {}),
          ...(bar ? { onProgress: bar } : {}),
        });
        printPublisherImport(result);
      }),
    );
}

interface MarketCliOptions {
  baseUrl?: string;
  geofabrikUrl?: string;
  overtureUrl?: string;
  foursquareUrl?: string;
  overtureRelease?: string;
  foursquareRelease?: string;
  header?: Record<string, string>;
  allowPrivateNetworks?: boolean;
  cacheDir: string;
  batchSize?: number;
  enrich?: boolean;
  json?: boolean;
}

function registerMarket(program: Command, withDb: WithDb): void {
  program
    .command('market')
    .description(
      'load a country from OpenStreetMap, Overture and Foursquare in one command: each found, read, kept inside the border, imported as a dataset and merged; one summary (docs/market.md)',
    )
    .argument('<country>', 'ISO 3166-1 alpha-2 code, e.g. PT', parseCountry)
    .option('--base-url <url>', 'a mirror of the three: geofabrik/, overture/ and foursquare/ under it (docs/market.md)', parseUrl)
    .option('--geofabrik-url <url>', "Geofabrik's root (default https://download.geofabrik.de/)", parseUrl)
    .option('--overture-url <url>', "Overture's STAC catalog (default https://stac.overturemaps.org/)", parseUrl)
    .option('--foursquare-url <url>', "Foursquare's bucket (default https://fsq-os-places-us-east-1.s3.amazonaws.com/)", parseUrl)
    .option('--overture-release <id>', 'latest, or a release of the catalog')
    .option('--foursquare-release <dt>', 'latest, or a release of the bucket (dt=…)')
    .option('--header <name: value>', 'a header sent with every request (repeatable)', collectHeader)
    .option('--allow-private-networks', 'let the URLs reach private and loopback addresses (a mirror on the local network)')
    .option('--cache-dir <dir>', 'where the OpenStreetMap extract is downloaded to', './var/downloads')
    .option('--batch-size <n>', 'places per transaction', parseBatch)
    .option('--enrich', "then look for contacts on the country's places' own websites (leadatlas enrich --country XX)")
    .option('--json', 'print the summary as JSON on stdout')
    .action((country: string, o: MarketCliOptions) =>
      withDb(async (db, config) => {
        const { prepareDatabase } = await import('../bootstrap.ts');
        const { loadMarket, MIRROR_LAYOUT } = await import('../modules/importers/publishers/market.service.ts');
        await prepareDatabase(db);
        const root = (publisher: keyof typeof MIRROR_LAYOUT, own: string | undefined) =>
          own ?? (o.baseUrl ? new URL(MIRROR_LAYOUT[publisher], o.baseUrl).href : undefined);
        const source = (baseUrl: string | undefined, releaseId: string | undefined) => ({
          ...(baseUrl ? { baseUrl } : {}),
          ...(releaseId ? { release: releaseId } : {}),
        });
        const bars = new Map<string, ReturnType<typeof progressRenderer>>();
        const summary = await loadMarket(db, {
          country,
          http: httpOf(o),
          sources: {
            osm: source(root('osm', o.geofabrikUrl), undefined),
            overture: source(root('overture', o.overtureUrl), o.overtureRelease),
            foursquare: source(root('foursquare', o.foursquareUrl), o.foursquareRelease),
          },
          osm: { cacheDir: o.cacheDir, follow: followOf(config) },
          log,
          ...(o.batchSize ? { batchSize: o.batchSize } : {}),
          onProgress: (publisher, p) => {
            if (!bars.has(publisher)) bars.set(publisher, progressRenderer(publisher));
            bars.get(publisher)?.(p);
          },
        });
        for (const r of summary.imports) printPublisherImport(r);
        if (o.enrich) {
          const { enrichCommand } = await import('../modules/enrichment/enrichment.cli.ts');
          await enrichCommand(db, config, { country }, log);
          const { countryCoverage } = await import('../modules/places/coverage.repository.ts');
          Object.assign(summary, await countryCoverage(db, country, Object.keys(summary.bySource), { found: true }));
        }
        if (o.json) console.log(JSON.stringify({ ...summary, imports: summary.imports.map(({ summary: _, ...r }) => r) }, null, 2));
        else printMarket(summary);
      }),
    );
}
