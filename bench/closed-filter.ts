/**
 * What leaving closed and retired places out of search costs (migration 0022: `closed_at` in the search
 * indexes; the closed ids for the text-index-only path, src/modules/places/places.repository.ts), on the
 * benchmark catalog:
 *
 *   node --import tsx bench/closed-filter.ts [--size N]      (default 200000 places)
 *
 * Builds (or reuses) var/bench/catalog-v1-N.db (bench/lib/catalog.ts) and migrates it. For each query, the
 * exact count and the first page, uncached (`countPlaces` + `findPlacesPage`), timed as the median of
 * rounds that alternate the default search (open places only) with `include_closed=true` (no filter: the
 * baseline, same run). First with no place closed, then with 1% and 10% of the places retired (inside a
 * transaction rolled back at the end, so the catalog is left as it was).
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openDatabase } from '../src/infra/db/database.ts';
import { migrateToLatest } from '../src/infra/db/migrate.ts';
import { noCriteria, type PlaceCriteria } from '../src/modules/search/query/criteria.ts';
import { countPlaces, findPlacesPage } from '../src/modules/search/query/place-query.repository.ts';
import { loadCategoryIndex } from '../src/modules/taxonomy/taxonomy.ts';
import { buildCatalog } from './lib/catalog.ts';

const { values } = parseArgs({ options: { size: { type: 'string', default: '200000' }, rounds: { type: 'string', default: '15' } } });
const size = Number(values.size);
const rounds = Number(values.rounds);
const root = resolve(import.meta.dirname, '..');
const catalog = await buildCatalog({ size, dir: resolve(root, 'var/bench'), dataDir: resolve(root, '../shared/data'), log: console.log });
const db = openDatabase(catalog.url);
await migrateToLatest(db);
const h = db.sqlite!;

const none: PlaceCriteria = noCriteria;
const index = loadCategoryIndex();
const pairs = await db.kysely
  .selectFrom('places')
  .select(['city_id', 'category', (eb) => eb.fn.countAll<number>().as('n')])
  .where('city_id', 'is not', null)
  .where('category', 'is not', null)
  .groupBy(['city_id', 'category'])
  .orderBy('n', 'desc')
  .limit(3)
  .execute();
const queries: Array<[string, PlaceCriteria]> = [
  ...pairs.map((p): [string, PlaceCriteria] => [
    `type=${p.category} city=${p.city_id}`,
    { ...none, cityId: Number(p.city_id), categories: index.subtree(p.category!) },
  ]),
  ...['restaurant', 'pizza', 'starbucks'].map((w): [string, PlaceCriteria] => [
    `query=${w}`,
    { ...none, text: { words: [w], mode: 'substring' } },
  ]),
  ['bbox Munich centre', { ...none, bbox: [11.55, 48.13, 11.6, 48.15] }],
];

async function once(criteria: PlaceCriteria): Promise<number> {
  const started = performance.now();
  await countPlaces(db, criteria);
  await findPlacesPage(db, criteria, 'relevance', null, 20);
  return performance.now() - started;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(label: string): Promise<void> {
  const closed = (h.prepare('SELECT count(*) AS n FROM places WHERE closed_at IS NOT NULL').get() as { n: number }).n;
  console.log(`\n${label}: ${closed} of ${catalog.rows} places closed or retired`);
  for (const [name, criteria] of queries) {
    const open: number[] = [];
    const all: number[] = [];
    await once(criteria);
    await once({ ...criteria, includeClosed: true });
    for (let i = 0; i < rounds; i++) {
      open.push(await once(criteria));
      all.push(await once({ ...criteria, includeClosed: true }));
    }
    const [o, a] = [median(open), median(all)];
    console.log(
      `  ${name.padEnd(44)} open only ${o.toFixed(2).padStart(8)} ms   include_closed ${a.toFixed(2).padStart(8)} ms   ratio ${(o / a).toFixed(2)}`,
    );
  }
}

console.log(`${catalog.path}: ${catalog.rows} places; ${new Date().toISOString()}`);
await measure('no place closed');
h.exec('BEGIN');
const retire = h.prepare(
  "UPDATE places SET closed_at = '2026-01-01T00:00:00.000Z', closed_reason = 'retired' WHERE id % ? = 0 AND closed_at IS NULL",
);
retire.run(100);
await measure('1% retired');
retire.run(10);
await measure('10% retired');
h.exec('ROLLBACK');
await db.close();
