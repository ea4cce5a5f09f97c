import type { Command } from 'commander';
import { bboxOption, countryOption, feedLimits, headerOption, httpReadOptions, integerOption, log, urlOption, withDb } from '../options.ts';
import { printPublisherImport, progressRenderer } from '../progress.ts';

/**
 * `leadatlas import overture|foursquare|osm --country XX` (docs/market.md): a country's places from one publisher,
 * found, read, kept inside its border and merged. The work is in `modules/importers/publishers/`; this file parses
 * the options and prints.
 */

interface PublisherCliOptions {
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

/** The options every publisher import takes. */
function publisherCommand(parent: Command, name: string, description: string): Command {
  return parent
    .command(name)
    .description(description)
    .option('--country <XX>', 'the country (ISO 3166-1 alpha-2) whose border keeps places', countryOption)
    .option('--base-url <url>', "the publisher's root, for a mirror (default: the public address, docs/market.md)", urlOption)
    .option('-d, --dataset <name>', 'the dataset the import is a snapshot of (default PUBLISHER-XX, e.g. overture-PT)')
    .option('--header <name: value>', 'a header sent with every request, e.g. "Authorization: Bearer …" (repeatable)', headerOption)
    .option('--allow-private-networks', 'let the URLs reach private and loopback addresses (a mirror on the local network)')
    .option('--batch-size <n>', 'places per transaction', integerOption(1, 100_000))
    .option('--no-conflate', 'do not merge the records with places of other sources now');
}

/** The subcommands of `import` (`importCommand`, whose options come before them) that read a publisher's release by country. */
export function registerPublisherImports(importCommand: Command): void {
  const release = async (publisher: 'overture' | 'foursquare', o: PublisherCliOptions) =>
    withDb(async (db) => {
      const bar = progressRenderer(publisher);
      const { prepareDatabase } = await import('../../bootstrap.ts');
      const service = await import('../../modules/importers/publishers/publisher-import.service.ts');
      await prepareDatabase(db);
      const run = publisher === 'overture' ? service.importOverture : service.importFoursquare;
      const result = await run(db, {
        http: httpReadOptions(o),
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
    .option('--bbox <minLon,minLat,maxLon,maxLat>', 'only the places inside this box', bboxOption)
    .option('--release <id>', 'latest, or a release of the catalog (2026-04-15.0)', 'latest')
    .action((o: PublisherCliOptions) => release('overture', o));

  publisherCommand(importCommand, 'foursquare', 'Foursquare OS Places of a country from the release folder release/dt=…/places/parquet/')
    .option('--bbox <minLon,minLat,maxLon,maxLat>', 'only the places inside this box', bboxOption)
    .option('--release <dt>', 'latest, or a release of the bucket (dt=2026-04-08)', 'latest')
    .action((o: PublisherCliOptions) => release('foursquare', o));

  publisherCommand(
    importCommand,
    'osm',
    "OpenStreetMap: the country's Geofabrik extract, then its replication feed from the extract's own sequence",
  )
    .option('--cache-dir <dir>', 'where the extract is downloaded to (resumed from after an interruption)', './var/downloads')
    .action((o: PublisherCliOptions) =>
      withDb(async (db, config) => {
        const { prepareDatabase } = await import('../../bootstrap.ts');
        const { importOsm } = await import('../../modules/importers/publishers/publisher-import.service.ts');
        await prepareDatabase(db);
        const bar = progressRenderer('osm');
        const result = await importOsm(db, {
          http: httpReadOptions(o),
          conflate: o.conflate,
          cacheDir: o.cacheDir,
          follow: feedLimits(config),
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
