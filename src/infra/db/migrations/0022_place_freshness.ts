import { type Kysely, sql } from 'kysely';

/**
 * Datasets, retirement and freshness of places.
 *
 * `import_runs.dataset`: the named snapshot a run imported (`porto` for `porto.osm.pbf`), and
 * `retired_count`, the places of that dataset the run retired when it completed.
 *
 * `places`:
 * - `seen_run_id`: the last import run whose file held the place (every run that reads it sets it, changed
 *   or not). When a run of a dataset completes, the places whose seen run is an older run of the same
 *   dataset and source are retired, set-wise. Indexed: that statement reads the places of the older runs
 *   only, and a re-import moves each place's entry from an old run's range to the new run's (both in
 *   file order).
 * - `closed`: 0/1, the source itself says the place is closed (part of the imported record and its hash).
 * - `closed_at`, `closed_reason`: when and why the place left search and export: `closed` (the source
 *   says so) or `retired` (gone from its dataset); both null while open.
 *
 * Search leaves closed places out (`closed_at IS NULL`) unless asked. The indexes that answer counts and
 * first pages from their entries alone (0006, 0008: city or country, category, review count; 0001:
 * category) get `closed_at` after the category, so the filter is part of the index seek and the order
 * by review count still comes from the index: the hot searches cost what they did, whatever the number
 * of closed places. A search that includes closed places reads the same entries (and sorts them by
 * review count). A partial index lists the closed places alone: the full-text-only search (which reads
 * no `places` row) leaves them out by id.
 *
 * Backfill: a place was last seen by the run that last wrote it; a run's dataset is derived from its file
 * name as the importer derives it (a frozen copy of that rule below: a migration never imports
 * application code).
 */

/** `porto-2020.osm.pbf` → `porto-2020`; `/data/yelp.ndjson.gz` → `yelp`. */
function datasetOfPath(path: string): string {
  let name = path.split(/[\\/]/).pop() ?? path;
  name = name.replace(/\.(gz|gzip|bz2|zst)$/i, '');
  for (;;) {
    const next = name.replace(/\.(osm|pbf|ndjson|jsonl|geojsonseq|geojson|json|csv|tsv|txt)$/i, '');
    if (next === name || next === '') break;
    name = next;
  }
  return name;
}

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('import_runs')
    .addColumn('dataset', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema
    .alterTable('import_runs')
    .addColumn('retired_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  const runs = await db.selectFrom('import_runs').select(['id', 'path']).execute();
  for (const run of runs) {
    await db
      .updateTable('import_runs')
      .set({ dataset: datasetOfPath(String(run.path)) })
      .where('id', '=', run.id)
      .execute();
  }

  await db.schema.alterTable('places').addColumn('seen_run_id', 'bigint').execute();
  await db.schema
    .alterTable('places')
    .addColumn('closed', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('places').addColumn('closed_at', 'text').execute();
  await db.schema.alterTable('places').addColumn('closed_reason', 'text').execute();
  await sql`UPDATE places SET seen_run_id = import_run_id`.execute(db);
  await db.schema.createIndex('places_seen_run_idx').on('places').column('seen_run_id').execute();
  await sql`CREATE INDEX places_closed_idx ON places (closed_at) WHERE closed_at IS NOT NULL`.execute(db);
  for (const [name, create] of searchIndexes) {
    await sql.raw(`DROP INDEX ${name}`).execute(db);
    await sql.raw(create.withClosed).execute(db);
  }
}

/** The search indexes, as they were (0001, 0006, 0008) and with `closed_at` after the category. */
const searchIndexes: Array<[string, { before: string; withClosed: string }]> = [
  [
    'places_city_category_reviews_idx',
    {
      before: 'CREATE INDEX places_city_category_reviews_idx ON places (city_id, category, (coalesce(review_count, -1)))',
      withClosed: 'CREATE INDEX places_city_category_reviews_idx ON places (city_id, category, closed_at, (coalesce(review_count, -1)))',
    },
  ],
  [
    'places_country_category_reviews_idx',
    {
      before: 'CREATE INDEX places_country_category_reviews_idx ON places (country_code, category, (coalesce(review_count, -1)))',
      withClosed:
        'CREATE INDEX places_country_category_reviews_idx ON places (country_code, category, closed_at, (coalesce(review_count, -1)))',
    },
  ],
  [
    'places_category_idx',
    {
      before: 'CREATE INDEX places_category_idx ON places (category)',
      withClosed: 'CREATE INDEX places_category_idx ON places (category, closed_at)',
    },
  ],
];

export async function down(db: Kysely<any>): Promise<void> {
  for (const [name, create] of searchIndexes) {
    await sql.raw(`DROP INDEX ${name}`).execute(db);
    await sql.raw(create.before).execute(db);
  }
  await sql`DROP INDEX IF EXISTS places_closed_idx`.execute(db);
  await sql`DROP INDEX IF EXISTS places_seen_run_idx`.execute(db);
  for (const column of ['closed_reason', 'closed_at', 'closed', 'seen_run_id'])
    await db.schema.alterTable('places').dropColumn(column).execute();
  for (const column of ['retired_count', 'dataset']) await db.schema.alterTable('import_runs').dropColumn(column).execute();
}
