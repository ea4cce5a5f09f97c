/**
 * What `open_now` costs on top of the same search (issue #26: p99 at most 1.5× the search without it), on the
 * benchmark catalog, SQLite and PostgreSQL, in one run:
 *
 *   npm run bench:open-now -- [--size N] [--rounds R] [--no-postgres] [--no-sqlite]     (default 200000 places, 60 rounds)
 *   npm run bench:open-now -- --engine [--size N] [--rounds R]     (the search engine's path, SQLite)
 *
 * Builds (or reuses) var/bench/catalog-v1-N.db (bench/lib/catalog.ts), copies it into a PostgreSQL schema
 * (bench/lib/postgres-catalog.ts, dropped at the end), runs the opening-hours pass on each (timed), then
 * for each query times the exact count and the first page, uncached (`countPlaces` + `findPlacesPage`, as
 * the read pool runs them), in rounds alternating the search with `open_now` (the instant of the run; and
 * `open_at` noon tomorrow, when the most schedules are open) and without it: the baseline measured in the
 * same run. Prints the median and p99 of each and their ratios.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { type Db, openDatabase } from '../src/infra/db/database.ts';
import { migrateToLatest } from '../src/infra/db/migrate.ts';
import { createReadPool } from '../src/infra/db/read-pool.ts';
import type { OpenAt } from '../src/modules/places/opening-hours.reads.ts';
import { rebuildOpeningHours } from '../src/modules/places/opening-hours.repository.ts';
import { indexQueryOf, MemorySearchEngine } from '../src/modules/search/engine/search-engine.ts';
import { noCriteria, type PlaceCriteria } from '../src/modules/search/query/criteria.ts';
import { countPlaces, findPlacesPage } from '../src/modules/search/query/place-query.repository.ts';
import { createReadTasks, readTasksModule } from '../src/modules/search/read-tasks.ts';
import { loadCategoryIndex } from '../src/modules/taxonomy/taxonomy.ts';
import { buildCatalog } from './lib/catalog.ts';
import { dropSchema, loadCatalogIntoPostgres } from './lib/postgres-catalog.ts';

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '200000' },
    rounds: { type: 'string', default: '60' },
    'no-postgres': { type: 'boolean', default: false },
    'no-sqlite': { type: 'boolean', default: false },
    /** Only the search engine's path (the in-memory index, as `SEARCH_ENGINE=memory` answers), on SQLite. */
    engine: { type: 'boolean', default: false },
  },
});
const size = Number(values.size);
const rounds = Number(values.rounds);
const root = resolve(import.meta.dirname, '..');
const adminUrl = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const catalog = await buildCatalog({ size, dir: resolve(root, 'var/bench'), dataDir: resolve(root, '../shared/data'), log: console.log });

const none = noCriteria;

async function queriesOf(db: Db): Promise<Array<[string, PlaceCriteria]>> {
  const index = loadCategoryIndex();
  // The (city, category) pairs with the most places that have hours: where open_now has the most to check.
  const pairs = await db.kysely
    .selectFrom('places')
    .select(['city_id', 'category', 'country_code', (eb) => eb.fn.countAll<number>().as('n')])
    .where('city_id', 'is not', null)
    .where('category', 'is not', null)
    .where('opening_hours', 'is not', null)
    .groupBy(['city_id', 'category', 'country_code'])
    .orderBy('n', 'desc')
    .limit(3)
    .execute();
  return [
    ...pairs.map((p): [string, PlaceCriteria] => [
      `type=${p.category} city=${p.city_id}`,
      { ...none, cityId: Number(p.city_id), categories: index.subtree(p.category!) },
    ]),
    [
      `type=${pairs[0]!.category} country=${pairs[0]!.country_code}`,
      { ...none, countryCode: pairs[0]!.country_code, categories: index.subtree(pairs[0]!.category!) },
    ],
    ['query=pizza', { ...none, text: { words: ['pizza'], mode: 'substring' } }],
    ['bbox Munich centre', { ...none, bbox: [11.55, 48.13, 11.6, 48.15] }],
  ];
}

async function once(db: Db, criteria: PlaceCriteria): Promise<number> {
  const started = performance.now();
  await countPlaces(db, criteria);
  await findPlacesPage(db, criteria, 'relevance', null, 20);
  return performance.now() - started;
}
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))]!;

async function measure(label: string, db: Db): Promise<void> {
  const now = Date.now();
  const started = performance.now();
  const pass = await rebuildOpeningHours(db, now, 42);
  console.log(
    `\n${label}: pass ${((performance.now() - started) / 1000).toFixed(1)} s: ${pass.places} places with hours, ${pass.schedules} schedules, ${pass.unparsed} unparsed, ${pass.intervals} interval rows`,
  );
  // open_now at the run's instant, and open_at noon tomorrow (local): when most schedules are open, the set is largest.
  const moments: Array<[string, OpenAt]> = [
    ['open_now', { clock: 'utc', at: Math.floor(now / 60_000) * 60 }],
    ['open_at noon', { clock: 'local', at: (Math.floor(now / 86_400_000) + 1) * 86_400 + 12 * 3600 }],
  ];
  for (const [moment, openAt] of moments)
    for (const [name, criteria] of await queriesOf(db)) {
      const open = { ...criteria, open: openAt };
      const withOpen: number[] = [];
      const without: number[] = [];
      await once(db, criteria);
      await once(db, open);
      for (let i = 0; i < rounds; i++) {
        withOpen.push(await once(db, open));
        without.push(await once(db, criteria));
      }
      const [total, openTotal] = [await countPlaces(db, criteria), await countPlaces(db, open)];
      const [m1, m0, p1, p0] = [quantile(withOpen, 0.5), quantile(without, 0.5), quantile(withOpen, 0.99), quantile(without, 0.99)];
      console.log(
        `  ${moment.padEnd(13)} ${name.padEnd(36)} ${String(openTotal).padStart(6)}/${String(total).padEnd(7)} median ${m1.toFixed(2).padStart(7)} vs ${m0.toFixed(2).padStart(7)} ms (${(m1 / m0).toFixed(2)}×)   p99 ${p1.toFixed(2).padStart(7)} vs ${p0.toFixed(2).padStart(7)} ms (${(p1 / p0).toFixed(2)}×)`,
      );
    }
}

/**
 * The search engine's path (`MemorySearchEngine`, what a server answers with by default): the index built
 * from the catalog and its opening hours, then per query, with the open filter and without it alternated
 * (ms): the exact count alone (the index's work) and a search (the count and the first page, 20 rows read by
 * id). The first count at a moment not seen before pays for reading that moment's open schedules and making
 * its bitmap ("first"): once a minute for `open_now`, once per asked time for `open_at`, shared by every
 * search at that moment.
 */
async function measureEngine(db: Db): Promise<void> {
  const now = Date.now();
  const started = performance.now();
  // How long the event loop waits while the pass runs: what a server's requests wait for during a pass in the background.
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const pass = await rebuildOpeningHours(db, now, 42);
  delay.disable();
  console.log(
    `\nengine (SQLite): pass ${((performance.now() - started) / 1000).toFixed(1)} s: ${pass.places} places with hours, ${pass.schedules} schedules, ${pass.unparsed} unparsed; event-loop delay meanwhile p99 ${(delay.percentile(99) / 1e6).toFixed(0)} ms, max ${(delay.max / 1e6).toFixed(0)} ms`,
  );
  const reads = createReadPool({ db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule });
  const engine = new MemorySearchEngine({ db, reads }, 3_600_000);
  const built = performance.now();
  await engine.start();
  console.log(`index built with the hours in ${((performance.now() - built) / 1000).toFixed(1)} s, ${engine.indexBytes()} bytes`);
  // A count alone is the index's work (bitmaps, no row read); a search is the count and the first page, whose
  // 20 rows are read by id in the read pool as a server reads them.
  const count = async (criteria: PlaceCriteria) => {
    const t0 = performance.now();
    await engine.countMatches(criteria);
    return performance.now() - t0;
  };
  const search = async (criteria: PlaceCriteria) => {
    const t0 = performance.now();
    await Promise.all([engine.countMatches(criteria), engine.searchPage(criteria, 'relevance', null, 20, 10_000)]);
    return performance.now() - t0;
  };
  const moments: Array<[string, () => OpenAt]> = [
    ['open_now', () => ({ clock: 'utc', at: Math.floor(Date.now() / 60_000) * 60 })],
    ['open_at noon', () => ({ clock: 'local', at: (Math.floor(now / 86_400_000) + 1) * 86_400 + 12 * 3600 })],
  ];
  const queries = (await queriesOf(db)).filter(([, c]) => indexQueryOf(c, 'relevance'));
  const ms = (x: number) => x.toFixed(2).padStart(6);
  try {
    for (const [moment, at] of moments)
      for (const [name, criteria] of queries) {
        const first = await count({ ...criteria, open: at() });
        const times = { count: [[], []] as number[][], search: [[], []] as number[][] };
        for (const kind of ['count', 'search'] as const) {
          const run = kind === 'count' ? count : search;
          await run(criteria);
          for (let i = 0; i < rounds; i++) {
            times[kind][0]!.push(await run({ ...criteria, open: at() }));
            times[kind][1]!.push(await run(criteria));
          }
        }
        const [total, openTotal] = [await engine.countMatches(criteria), await engine.countMatches({ ...criteria, open: at() })];
        const cells = (['count', 'search'] as const).map((kind) => {
          const [w, wo] = times[kind] as [number[], number[]];
          const [m1, m0, p1, p0] = [quantile(w, 0.5), quantile(wo, 0.5), quantile(w, 0.99), quantile(wo, 0.99)];
          return `${kind} median ${ms(m1)} vs ${ms(m0)} (${(m1 / m0).toFixed(2)}×) p99 ${ms(p1)} vs ${ms(p0)} (${(p1 / p0).toFixed(2)}×)`;
        });
        console.log(
          `  ${moment.padEnd(13)} ${name.padEnd(32)} ${String(openTotal).padStart(6)}/${String(total).padEnd(7)} first ${ms(first)} | ${cells.join(' | ')}`,
        );
      }
  } finally {
    await engine.close();
    await reads.close();
  }
}

console.log(
  `${catalog.path}: ${catalog.rows} places; ${new Date().toISOString()}; ${rounds} rounds; load ${readFileSync('/proc/loadavg', 'utf8').trim()}`,
);
if (values.engine) {
  const sqlite = openDatabase(catalog.url);
  await migrateToLatest(sqlite);
  await measureEngine(sqlite);
  await sqlite.close();
  process.exit(0);
}
if (!values['no-sqlite']) {
  const sqlite = openDatabase(catalog.url);
  await migrateToLatest(sqlite);
  await measure('SQLite', sqlite);
  await sqlite.close();
}
if (!values['no-postgres']) {
  const schema = `bench_open_now_${process.pid}`;
  const { url, seconds } = await loadCatalogIntoPostgres(catalog.path, adminUrl, schema, console.log);
  console.log(`\ncopied into PostgreSQL in ${seconds.toFixed(0)} s`);
  const pg = openDatabase(url);
  try {
    await measure('PostgreSQL', pg);
  } finally {
    await pg.close();
    await dropSchema(adminUrl, schema);
  }
}
