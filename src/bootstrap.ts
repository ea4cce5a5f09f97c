import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Db } from './infra/db/database.ts';
import { migrateToLatest } from './infra/db/migrate.ts';
import { syncGeo } from './modules/geo/geo.ts';
import { type ImportOptions, type ImportSummary, runImport } from './modules/importers/import.service.ts';
import { syncTaxonomy } from './modules/taxonomy/taxonomy.ts';

type Log = (message: string) => void;

/** Schema migrations, then reference data (taxonomy, countries, cities) where its package version changed. */
export async function prepareDatabase(db: Db, log: Log = () => {}): Promise<void> {
  const migrated = await migrateToLatest(db);
  for (const r of migrated.results ?? []) log(`migration ${r.migrationName}: ${r.status}`);
  const taxonomy = await syncTaxonomy(db);
  if (taxonomy.changed) log(`categories: ${taxonomy.rows} rows from ${taxonomy.version}`);
  const geo = await syncGeo(db);
  if (geo.changed) log(`countries and cities: ${geo.rows} rows from ${geo.version}`);
}

export { loadEnricher } from './modules/importers/enricher.ts';

export async function importFiles(db: Db, paths: string[], options: ImportOptions = {}): Promise<ImportSummary[]> {
  const summaries: ImportSummary[] = [];
  // Reading and enriching run on a worker thread while this one writes.
  for (const path of paths) summaries.push(await runImport(db, null, path, options));
  return summaries;
}

/** The merged file holds the POIs of every extract beside it: importing it alone gives the same places, faster. */
const mergedDemoFile = 'osm-pois-all.osm.pbf';

/** On first start (an empty catalog) imports the bundled OpenStreetMap data. */
export async function importDemoDataIfEmpty(db: Db, dir: string, log: Log = () => {}): Promise<ImportSummary[]> {
  const any = await db.kysely.selectFrom('places').select('id').limit(1).executeTakeFirst();
  if (any) return [];
  const all = (await readdir(dir)).filter((f) => f.endsWith('.osm.pbf')).sort();
  const files = all.includes(mergedDemoFile) ? [mergedDemoFile] : all;
  log(`empty catalog: importing ${files.join(', ')} from ${dir}`);
  return importFiles(
    db,
    files.map((f) => join(dir, f)),
  );
}
