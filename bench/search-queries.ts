/**
 * Cost of the search read tasks themselves (no HTTP, no worker hop) on the benchmark catalog:
 *
 *   node --import tsx bench/search-queries.ts [path/to/catalog.db]
 *
 * Default catalog: var/bench/catalog-v1-1000000.db (built by bench/api.ts, see bench/lib/catalog.ts).
 * Migrates it first (the search indexes of migrations 0006/0007), then times, per query, the first page
 * with its exact total: once cold (count taken) and as the mean of 20 repeats (total from the count cache).
 * Workload: the 6 (city, type) pairs with the most places, each type with its subcategories, and words
 * from common to rare for the full-text search.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { openDatabase } from '../src/infra/db/database.ts';
import { migrateToLatest } from '../src/infra/db/migrate.ts';
import { noCriteria, type PlaceCriteria, type PlaceSort } from '../src/modules/search/query/criteria.ts';
import { createSearchReads } from '../src/modules/search/search.reads.ts';
import { loadCategoryIndex } from '../src/modules/taxonomy/taxonomy.ts';

/** The read tasks as a read-pool thread runs them (its count cache included). */
const { searchPage } = createSearchReads();

const path = resolve(process.argv[2] ?? resolve(import.meta.dirname, '../var/bench/catalog-v1-1000000.db'));
if (!existsSync(path)) throw new Error(`${path} does not exist: build it with bench/api.ts first`);
const db = openDatabase(`sqlite:${path}`);
await migrateToLatest(db);
const places = await db.kysely
  .selectFrom('places')
  .select((eb) => eb.fn.countAll<number>().as('n'))
  .executeTakeFirstOrThrow();
console.log(`${path}: ${places.n} places`);

const none: PlaceCriteria = noCriteria;
const index = loadCategoryIndex();

async function time(label: string, criteria: PlaceCriteria, sort: PlaceSort = 'relevance'): Promise<void> {
  let started = performance.now();
  const first = await searchPage(db, criteria, sort, null, 20);
  const cold = performance.now() - started;
  started = performance.now();
  for (let i = 0; i < 20; i++) await searchPage(db, criteria, sort, null, 20);
  const warm = (performance.now() - started) / 20;
  console.log(
    `${label.padEnd(48)} total ${String(first.total).padStart(7)}  first ${cold.toFixed(2).padStart(7)} ms  repeated ${warm.toFixed(2).padStart(6)} ms`,
  );
}

const pairs = await db.kysely
  .selectFrom('places')
  .select(['city_id', 'category', (eb) => eb.fn.countAll<number>().as('n')])
  .where('city_id', 'is not', null)
  .where('category', 'is not', null)
  .groupBy(['city_id', 'category'])
  .orderBy('n', 'desc')
  .limit(6)
  .execute();
const timed = new Set<string>();
for (const p of pairs) {
  const parent = index.get(p.category!)?.parent;
  for (const slug of parent ? [p.category!, parent] : [p.category!]) {
    if (timed.has(`${slug}@${p.city_id}`)) continue;
    timed.add(`${slug}@${p.city_id}`);
    const categories = index.subtree(slug);
    await time(`type=${slug} (${categories.length} categories) city=${p.city_id}`, { ...none, cityId: Number(p.city_id), categories });
  }
}
for (const word of ['restaurant', 'pizza', 'starbucks', 'apotheke', 'ratskeller', 'ラーメン']) {
  await time(`query=${word}`, { ...none, text: { words: [word], mode: 'substring' } });
}
await time('query=restaurant sort=name', { ...none, text: { words: ['restaurant'], mode: 'substring' } }, 'name');
await db.close();
