/**
 * What searches cost as the search service runs them (names resolved, a first page with its exact total,
 * typo and city fallbacks), on a catalog, without HTTP and without the read cache:
 *
 *   npm run bench:search-cost -- [path/to/catalog.db] [--per-class 200]
 *
 * Default catalog: var/bench/catalog-v1-1000000.db (bench/api.ts builds it). Migrates it first. The mix is
 * drawn from the catalog's imported rows, the same for the same catalog: a place's name with its city, the
 * same with one typo, one word of a name alone, a kind of business with a city (type=), and a kind of business
 * as free text with a city. Each query runs once (distinct queries, so no count is cached); prints mean, p50
 * and p95 per class. To compare two versions, run each tree's copy of this file on a copy of the same catalog.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { openDatabase } from '../src/infra/db/database.ts';
import { migrateToLatest } from '../src/infra/db/migrate.ts';
import { createReadPool } from '../src/infra/db/read-pool.ts';
import { createReadTasks, readTasksModule } from '../src/modules/search/read-tasks.ts';
import { quickSearch } from '../src/modules/search/search.service.ts';
import { createSearch } from '../src/modules/search/search.ts';
import type { SearchInput } from '../src/modules/search/search.types.ts';
import { argValue } from './lib/args.ts';
import { typoOf } from './lib/self-retrieval.ts';

const path = resolve(
  process.argv[2] && !process.argv[2].startsWith('--')
    ? process.argv[2]
    : resolve(import.meta.dirname, '../var/bench/catalog-v1-1000000.db'),
);
const perClass = Number(argValue('--per-class', '200'));
if (!existsSync(path)) throw new Error(`${path} does not exist: build it with bench/api.ts first`);
const db = openDatabase(`sqlite:${path}`);
let started = performance.now();
await migrateToLatest(db);
console.log(`${path}: migrated in ${((performance.now() - started) / 1000).toFixed(1)} s`);
const deps = createSearch(db, createReadPool({ db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule }));

// Imported rows only (the resampled copies repeat their names), spread over the whole id range.
const rows = await db.kysely
  .selectFrom('places')
  .select(['id', 'name', 'city', 'category'])
  .where('source_id', 'not like', '%#r%')
  .where('city', 'is not', null)
  .orderBy('id')
  .execute();
const step = Math.max(1, Math.floor(rows.length / perClass));
const sample = rows.filter((_, i) => i % step === 0).slice(0, perClass);
const words = [...new Set(rows.flatMap((r) => r.name.split(/[^\p{L}\p{N}]+/u)).filter((w) => [...w].length >= 5 && /^\p{L}+$/u.test(w)))];
const pairs = await db.kysely
  .selectFrom('places')
  .select(['city', 'category', (eb) => eb.fn.countAll<number>().as('n')])
  .where('source_id', 'not like', '%#r%')
  .where('category', 'is not', null)
  .where('city', 'is not', null)
  .groupBy(['city', 'category'])
  .orderBy('n', 'desc')
  .limit(perClass)
  .execute();
const kinds = ['restaurant', 'cafe', 'dentist', 'hotel', 'pharmacy', 'hairdresser', 'bakery', 'supermarket', 'bar', 'pizza'];

const classes: Array<[string, SearchInput[]]> = [
  ['name + city', sample.map((r) => ({ query: r.name, city: r.city! }))],
  [
    'name with a typo + city',
    sample.flatMap((r) => {
      const t = typoOf(r.name, `cost:${r.id}`);
      return t ? [{ query: t.query, city: r.city! }] : [];
    }),
  ],
  [
    'one word of a name alone',
    Array.from({ length: Math.min(perClass, words.length) }, (_, i) => ({ query: words[(i * 7919) % words.length]! })),
  ],
  ['type + city', pairs.map((p) => ({ type: p.category!, city: p.city! }))],
  ['kind of business as text + city', pairs.map((p, i) => ({ query: kinds[i % kinds.length]!, city: p.city! }))],
];

for (const [label, inputs] of classes) {
  const seen = new Set<string>();
  const times: number[] = [];
  let errors = 0;
  for (const input of inputs) {
    const key = JSON.stringify(input);
    if (seen.has(key)) continue;
    seen.add(key);
    started = performance.now();
    try {
      await quickSearch(deps, { ...input, per_page: 20 }, { lang: null, location: 'querystring' });
    } catch {
      errors++;
    }
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!.toFixed(1);
  const mean = (times.reduce((a, b) => a + b, 0) / times.length).toFixed(1);
  console.log(
    `${label.padEnd(34)} ${String(times.length).padStart(4)} queries  mean ${mean.padStart(6)} ms  p50 ${q(0.5).padStart(6)}  p95 ${q(0.95).padStart(7)}  max ${q(1).padStart(7)}${errors ? `  (${errors} answered 400)` : ''}`,
  );
}
await db.close();
