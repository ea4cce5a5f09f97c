/**
 * A benchmark catalog of at least N places, resampled from the real data in ../shared/data.
 *
 * Every source file is imported through the real pipeline (readers, taxonomy, gazetteer, phone
 * normalisation) into the catalog file itself; those rows are the templates. Then resampled copies are
 * added until N places have coordinates: each copy keeps a template's name, categories, city, address
 * and phone format, with coordinates jittered by up to ~1 km and the phone's last digits changed, under a
 * new source id (so a new public id). The file lives under var/bench/ (never committed; the data's
 * licences forbid redistribution), named by a version and N, and is reused while it exists.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { importFiles, prepareDatabase } from '../../src/bootstrap.ts';
import { type Db, openDatabase } from '../../src/infra/db/database.ts';
import { searchDocument } from '../../src/infra/text.ts';
import { publicPlaceId } from '../../src/modules/places/place-record.ts';
import { cityFold } from '../../src/modules/places/place-text.ts';
import type { PlaceRow } from '../../src/modules/places/places.schema.ts';
import { mulberry32 } from './random.ts';

/** Bump when the generation changes, so stale cached catalogs are not reused. */
export const catalogVersion = 1;

export interface CatalogOptions {
  /** Places with coordinates the catalog must hold. */
  size: number;
  /** Where cached catalogs live (var/bench). */
  dir: string;
  /** ../shared/data */
  dataDir: string;
  log: (message: string) => void;
}

export interface Catalog {
  path: string;
  url: string;
  /** Rows imported from the real files. */
  realRows: number;
  /** Every row. */
  rows: number;
  built: boolean;
  seconds: number;
}

/** The real files, one per source and format (the merged OSM file stands for the nine extracts). */
export function sourceFiles(dataDir: string): string[] {
  const wanted = [
    'osm/osm-pois-all.osm.pbf',
    'ratings/yelp-fusion-4cities-2018.ndjson.gz',
    'ratings/yelp-open-dataset-business-sample5000.ndjson.gz',
    'ratings/zomato-restaurants-9551.csv.gz',
    'ratings/gmaps-scraper-europe-115.csv.gz',
    'ratings/gmaps-scraper-plano-tx-73.csv.gz',
    'places/overture-places-boulder-3545.ndjson.gz',
    'places/michelin-guide-2022-6510.csv.gz',
  ];
  return wanted.map((f) => resolve(dataDir, f)).filter((f) => existsSync(f));
}

export async function buildCatalog(options: CatalogOptions): Promise<Catalog> {
  mkdirSync(options.dir, { recursive: true });
  const path = resolve(options.dir, `catalog-v${catalogVersion}-${options.size}.db`);
  const started = performance.now();
  if (existsSync(path)) {
    const db = openDatabase(`sqlite:${path}`);
    // Migrations added since the catalog was built (new tables) apply in place.
    await prepareDatabase(db);
    const counts = await countRows(db);
    await db.close();
    return { path, url: `sqlite:${path}`, ...counts, built: false, seconds: (performance.now() - started) / 1000 };
  }
  for (const f of readdirSync(options.dir))
    if (f.startsWith(`catalog-v${catalogVersion}-${options.size}.db.tmp`)) rmSync(join(options.dir, f));
  const tmp = `${path}.tmp`;
  const db = openDatabase(`sqlite:${tmp}`);
  try {
    await prepareDatabase(db, options.log);
    const files = sourceFiles(options.dataDir);
    options.log(`importing ${files.length} real files`);
    for (const s of await importFiles(db, files))
      options.log(`  ${s.path.split('/').pop()}: ${s.imported_count} places (${s.skipped_count} skipped)`);
    const templates = (await db.kysely
      .selectFrom('places')
      .selectAll()
      .where('lat', 'is not', null)
      .where('lon', 'is not', null)
      .execute()) as PlaceRow[];
    const missing = Math.max(0, options.size - templates.length);
    options.log(`${templates.length} real places with coordinates; adding ${missing} resampled copies`);
    resample(db, templates, missing, options.log);
    db.sqlite!.exec('ANALYZE');
    const counts = await countRows(db);
    await db.close();
    renameSync(tmp, path);
    return { path, url: `sqlite:${path}`, ...counts, built: true, seconds: (performance.now() - started) / 1000 };
  } catch (err) {
    await db.close();
    throw err;
  }
}

async function countRows(db: Db): Promise<{ realRows: number; rows: number }> {
  const all = await db.kysely
    .selectFrom('places')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  const real = await db.kysely
    .selectFrom('places')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('source_id', 'not like', '%#r%')
    .executeTakeFirstOrThrow();
  return { rows: Number(all.n), realRows: Number(real.n) };
}

const columns = [
  'public_id',
  'source',
  'source_id',
  'name',
  'names',
  'category',
  'categories',
  'source_categories',
  'phone',
  'phone_e164',
  'website',
  'email',
  'street',
  'housenumber',
  'postcode',
  'address',
  'region',
  'city',
  'city_id',
  'city_source',
  'city_distance_m',
  'country_code',
  'lat',
  'lon',
  'rating',
  'review_count',
  'opening_hours',
  'attributes',
  'content_hash',
  'import_run_id',
  'first_seen_at',
  'updated_at',
  'search_document',
  'city_fold',
] as const;

/** Direct prepared statements in transactions of 10,000 rows: the FTS trigger still runs per row. */
function resample(db: Db, templates: PlaceRow[], count: number, log: (m: string) => void): void {
  const h = db.sqlite!;
  const insert = h.prepare(`INSERT INTO places (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
  const random = mulberry32(20261121);
  const now = new Date().toISOString();
  const writeChunk = h.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const t = templates[Math.floor(random() * templates.length)]!;
      const sourceId = `${t.source_id}#r${i}`;
      const digits = String(Math.floor(random() * 100)).padStart(2, '0');
      const row: Record<(typeof columns)[number], unknown> = {
        ...t,
        public_id: publicPlaceId(t.source, sourceId),
        source_id: sourceId,
        phone: t.phone === null ? null : replaceLastDigits(t.phone, digits),
        phone_e164: t.phone_e164 === null ? null : replaceLastDigits(t.phone_e164, digits),
        // ±0.01° (about 1 km) around the template, clamped to valid coordinates.
        lat: Math.max(-90, Math.min(90, t.lat! + (random() - 0.5) * 0.02)),
        lon: Math.max(-180, Math.min(180, t.lon! + (random() - 0.5) * 0.02)),
        import_run_id: null,
        first_seen_at: now,
        updated_at: now,
        search_document: searchDocument(t.name, t.names),
        city_fold: cityFold(t.city, t.city_source),
      };
      insert.run(...columns.map((c) => row[c]));
    }
  });
  const step = 10_000;
  for (let from = 0; from < count; from += step) {
    writeChunk(from, Math.min(count, from + step));
    if ((from / step) % 10 === 9) log(`  ${from + step} / ${count}`);
  }
}

/** The same format with other final digits: `+49 (0) 89 21 99 89 0` → `+49 (0) 89 21 99 84 7`. */
function replaceLastDigits(phone: string, digits: string): string {
  let out = '';
  let k = digits.length - 1;
  for (let i = phone.length - 1; i >= 0; i--) {
    const ch = phone[i]!;
    if (k >= 0 && ch >= '0' && ch <= '9') out = digits[k--] + out;
    else out = ch + out;
  }
  return out;
}

/** The catalog's (city, type) pairs with their places, largest first: the type+city searches a bench sends. */
export function typeCityPairs(db: Db, limit: number, minPlaces = 1) {
  return db.kysely
    .selectFrom('places')
    .innerJoin('cities', 'cities.id', 'places.city_id')
    .select(['cities.name as city', 'cities.country_code as country', 'places.category as type', (eb) => eb.fn.countAll<number>().as('n')])
    .where('places.category', 'is not', null)
    .groupBy(['cities.name', 'cities.country_code', 'places.category'])
    .having((eb) => eb.fn.countAll(), '>=', minPlaces)
    .orderBy('n', 'desc')
    .limit(limit)
    .execute();
}
