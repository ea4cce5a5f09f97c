import type { Command } from 'commander';
import { prepareDatabase } from '../../bootstrap.ts';
import { limitHeapGrowth } from '../../infra/memory.ts';
import { expandImportArguments } from '../../modules/importers/dataset.ts';
import { isChangeFile, runImport } from '../../modules/importers/import.service.ts';
import { parseColumnMapping } from '../../modules/importers/readers/generic.ts';
import { bboxOption, countryOption, fractionOption, integerOption, withDb } from '../options.ts';
import { printImportSummary, progressRenderer } from '../progress.ts';
import { registerPublisherImports } from './import-publishers.ts';

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

async function everyChangeFile(files: string[]): Promise<boolean> {
  for (const file of files) if (!(await isChangeFile(file).catch(() => false))) return false;
  return true;
}

/**
 * `leadatlas import FILE…`: place files or Parquet URLs into the catalog; `import overture|foursquare|osm`, a
 * publisher's release by country (import-publishers.ts).
 */
export function registerImport(program: Command): void {
  // Options after `import overture` are the subcommand's, not `import`'s own `--country`.
  program.enablePositionalOptions();
  const importCommand = program
    .command('import')
    .enablePositionalOptions()
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
    .option('--batch-size <n>', 'places per transaction', integerOption(1, 100_000))
    .option('--no-conflate', 'do not merge the records with places of other sources now (the next import that does takes them)')
    .option(
      '--bbox <minLon,minLat,maxLon,maxLat>',
      'Parquet: import only the places inside this box (row groups outside it are not read)',
      bboxOption,
    )
    .option('--country <XX>', 'Parquet: import only the places of this country (ISO 3166-1 alpha-2)', countryOption)
    .option(
      '--min-confidence <c>',
      'Parquet: import only the places whose source confidence (Overture, 0 to 1) is at least c',
      fractionOption,
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
  registerPublisherImports(importCommand);
}
