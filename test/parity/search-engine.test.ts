import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { importFiles } from '../../src/bootstrap.ts';
import type { Db } from '../../src/infra/db/database.ts';
import { createReadPool, type ReadPool } from '../../src/infra/db/read-pool.ts';
import type { OpenAt } from '../../src/modules/places/opening-hours.reads.ts';
import { rebuildOpeningHours } from '../../src/modules/places/opening-hours.repository.ts';
import { prunePlaceChanges } from '../../src/modules/places/place-changes.repository.ts';
import { PlaceMaintenance } from '../../src/modules/places/place-maintenance.ts';
import { facetDimensions } from '../../src/modules/search/engine/bitmap-index.ts';
import { indexQueryOf, MemorySearchEngine, SqlSearchEngine } from '../../src/modules/search/engine/search-engine.ts';
import { noCriteria, type PlaceCriteria, type PlaceKey, type PlaceSort } from '../../src/modules/search/query/criteria.ts';
import { type ApiReadTasks, createReadTasks, readTasksModule } from '../../src/modules/search/read-tasks.ts';
import type { PlacePage } from '../../src/modules/search/search.reads.ts';
import { dialects, type TestDatabase } from '../helpers/databases.ts';
import { indexOnly } from '../helpers/index-only.ts';
import { testPlaceRecord, writePlaces } from '../helpers/places.ts';

type PlaceRecordRow = {
  id: number;
  category: string | null;
  city_id: number | null;
  country_code: string | null;
  phone: string | null;
  website: string | null;
  email: string | null;
  rating: number | null;
  review_count: number | null;
};

/**
 * The in-memory search engine against the SQL path on real data (OpenStreetMap extracts and Yelp's ratings),
 * on both dialects: for every kind of search the index holds (category lists, city, country, each contact
 * filter both ways, rating thresholds, closed places, each order the index holds (relevance, review_count, rating), every page by cursor), the same total,
 * the same places in the same order and the same next key; facets per value the same as SQL's GROUP BY;
 * then again after changes arrive through the change log (a second import, a retirement) and after a
 * rebuild forced by a pruned log. The searches the index does not hold (typo-tolerant text, exclusions) must be
 * handed to SQL; text itself is compared in `search-text.test.ts`, geography and the name order in
 * `search-geo.test.ts`. A sample of searches runs here; `SEARCH_PARITY_FULL=1` runs every one of them
 * on every extract.
 */

const full = process.env.SEARCH_PARITY_FULL === '1';
const data = new URL('../../../shared/data/', import.meta.url);
const path = (f: string) => new URL(f, data).pathname;
const first = full
  ? ['osm/osm-pois-all.osm.pbf', 'ratings/yelp-fusion-4cities-2018.ndjson.gz'].map(path)
  : ['osm/monaco-2026.osm.pbf'].map(path);

/** Criteria with nothing set: each search sets what it narrows by. */
const none = noCriteria;

async function topValues(db: Db, column: 'category' | 'city_id' | 'country_code', n: number): Promise<Array<string | number>> {
  const { rows } = await sql<{ v: string | number }>`SELECT ${sql.ref(column)} AS v FROM places WHERE ${sql.ref(column)} IS NOT NULL
    GROUP BY ${sql.ref(column)} ORDER BY count(*) DESC, ${sql.ref(column)} LIMIT ${n}`.execute(db.kysely);
  return rows.map((r) => (column === 'city_id' ? Number(r.v) : r.v));
}

/** The searches of the sweep, from the values the catalog holds. */
async function searches(db: Db): Promise<PlaceCriteria[]> {
  const categories = (await topValues(db, 'category', full ? 60 : 6)) as string[];
  const cities = (await topValues(db, 'city_id', full ? 30 : 3)) as number[];
  const countries = (await topValues(db, 'country_code', full ? 10 : 2)) as string[];
  const out: PlaceCriteria[] = [];
  const filters: Array<Partial<PlaceCriteria>> = [
    {},
    { hasPhone: true },
    { hasPhone: false },
    { hasWebsite: true, hasEmail: false },
    { hasEmail: true },
    { hasSocial: true },
    { minRating: 4 },
    { minRating: 3.5, hasPhone: true },
    { includeClosed: true },
  ];
  // The sample: each filter on its own with a few values; the full sweep: every filter with every value and pair.
  for (const f of full ? filters : filters.filter((_, i) => i % 2 === 0)) {
    for (const c of categories) out.push({ ...none, ...f, categories: [c] });
    for (const city of cities) out.push({ ...none, ...f, cityId: city });
    for (const country of countries) out.push({ ...none, ...f, countryCode: country });
    for (const [i, c] of categories.entries())
      out.push({ ...none, ...f, categories: [c, categories[(i + 1) % categories.length]!], cityId: cities[i % cities.length]! });
    if (!full) continue;
    for (const c of categories) for (const city of cities) out.push({ ...none, ...f, categories: [c], cityId: city });
  }
  out.push({ ...none, categories: ['no-such-category'] }, { ...none, cityId: -1 }, { ...none, categories: [] });
  return out;
}

const tailLimit = 100;

/** A page row without the SQL path's sort key (the engine's rows carry none). */
const withoutKey = (row: PlacePage['rows'][number]) => {
  const { sort_key: _key, ...rest } = row as typeof row & { sort_key?: unknown };
  return rest;
};

for (const dialect of dialects) {
  describe(`the search engine against SQL on real data (${dialect.name})`, { timeout: full ? 3_600_000 : 240_000 }, () => {
    let t: TestDatabase;
    let reads: ReadPool<ApiReadTasks>;
    let memory: MemorySearchEngine;
    /** An engine that may not hand any search to SQL (`indexOnly`), for the open filter. */
    let guarded: MemorySearchEngine;
    let sqlEngine: SqlSearchEngine;

    before(async () => {
      t = await dialect.open('prepared');
      await importFiles(t.db, first);
      // OpenStreetMap has no ratings: the sample gets some, with ties (the full sweep has Yelp's).
      if (!full) await sql`UPDATE places SET rating = (id % 9) * 0.5 + 1, review_count = id % 37 WHERE id % 3 <> 0`.execute(t.db.kysely);
      // The opening-hours pass as a server's engine runs it in the background (a short window keeps it quick).
      await rebuildOpeningHours(t.db, Date.now(), 2);
      reads = createReadPool({ db: t.db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule });
      // A small tail limit, so that the import below moves more places than it: searchable before the rebuild.
      memory = new MemorySearchEngine({ db: t.db, reads, tailLimit: () => tailLimit }, 60_000);
      sqlEngine = new SqlSearchEngine({ db: t.db, reads });
      guarded = new MemorySearchEngine({ db: t.db, reads: indexOnly(reads) }, 60_000);
      await Promise.all([memory.start(), guarded.start()]);
      const state = memory.state();
      assert.equal(state.engine === 'memory' && state.status, 'ready');
    });
    after(async () => {
      await memory?.close();
      await guarded?.close();
      await reads?.close();
      await t?.dispose();
    });

    /**
     * Every page of each search in each order the index holds (a few pages in the sample), then its facets. After
     * changes (`half`), the sample compares every other search: each filter with each kind of value still, since
     * the sweep was compared whole on the built index and what is new is the places; the full sweep, all of them.
     */
    async function compareAll(label: string, half = false): Promise<number> {
      const all = (await searches(t.db)).filter((_, i) => !half || full || i % 2 === 0);
      let compared = 0;
      for (const criteria of all) {
        assert.ok(indexQueryOf(criteria, 'relevance'), 'the index holds this search');
        for (const sort of ['relevance', 'review_count', 'rating'] as PlaceSort[]) {
          let after: PlaceKey | null = null;
          for (let page = 0; page < (full ? 1000 : 2); page++) {
            const [m, s]: [PlacePage, PlacePage] = await Promise.all([
              memory.searchPage(criteria, sort, after, 20, 10_000),
              sqlEngine.searchPage(criteria, sort, after, 20, 10_000),
            ]);
            const what = `${label}: ${JSON.stringify(criteria)} ${sort} page ${page}`;
            assert.equal(m.total, s.total, what);
            assert.deepEqual(
              m.rows.map((r) => r.id),
              s.rows.map((r) => r.id),
              what,
            );
            // The rows themselves too: the engine's come from its row cache once seen, which must follow changes.
            assert.deepEqual(m.rows.map(withoutKey), s.rows.map(withoutKey), what);
            assert.deepEqual(m.next, s.next === null ? null : { key: Number(s.next.key), id: s.next.id }, what);
            compared++;
            if (!s.next) break;
            after = s.next;
          }
        }
        assert.equal(await memory.countMatches(criteria), await sqlEngine.countMatches(criteria));
      }
      for (const criteria of all.filter((_, i) => i % (full ? 1 : 10) === 0)) {
        for (const by of facetDimensions) {
          assert.deepEqual(
            await memory.facets(criteria, by),
            await sqlEngine.facets(criteria, by),
            `${label}: facets by ${by} of ${JSON.stringify(criteria)}`,
          );
        }
      }
      return compared;
    }

    /** The moments of the open filter's sweep: now, and local and UTC times of tomorrow when many or few places are open. */
    function moments(): OpenAt[] {
      const tomorrow = (Math.floor(Date.now() / 86_400_000) + 1) * 86_400;
      return [
        { clock: 'utc', at: Math.floor(Date.now() / 60_000) * 60 },
        { clock: 'local', at: tomorrow + 12 * 3600 },
        { clock: 'local', at: tomorrow + 19 * 3600 + 30 * 60 },
        { clock: 'local', at: tomorrow + 3 * 3600 },
        { clock: 'utc', at: tomorrow + 9 * 3600 },
      ];
    }

    /**
     * Open now / open at through the index against SQL: the same totals, pages and facets, and the count of
     * unparsed hours, with the engine's SQL fallback forbidden (a search it handed to SQL fails here). Answers
     * how many searches the filter narrowed (fewer matches than without it) and how many it left non-empty.
     */
    async function compareOpen(label: string, when: OpenAt[] = moments()): Promise<{ narrowed: number; found: number }> {
      {
        let narrowed = 0;
        let found = 0;
        const all = (await searches(t.db)).filter((c) => c.minRating === null);
        for (const at of when)
          for (const [i, base] of all.entries()) {
            const criteria: PlaceCriteria = { ...base, open: at };
            const what = `${label}: ${JSON.stringify(criteria)}`;
            assert.ok(indexQueryOf(criteria, 'relevance'), `the index holds ${what}`);
            let after: PlaceKey | null = null;
            for (let page = 0; page < 3; page++) {
              const [m, q]: [PlacePage, PlacePage] = await Promise.all([
                guarded.searchPage(criteria, 'relevance', after, 20, 10_000),
                sqlEngine.searchPage(criteria, 'relevance', after, 20, 10_000),
              ]);
              assert.equal(m.total, q.total, `${what} page ${page}`);
              assert.deepEqual(
                m.rows.map((r) => r.id),
                q.rows.map((r) => r.id),
                `${what} page ${page}`,
              );
              if (!q.next) break;
              after = q.next;
            }
            const [open, without] = [await guarded.countMatches(criteria), await sqlEngine.countMatches(base)];
            if (open < without) narrowed++;
            if (open > 0) found++;
            const unparsed: PlaceCriteria = { ...criteria, open: { ...at, unparsed: true } };
            assert.equal(await guarded.countMatches(unparsed), await sqlEngine.countMatches(unparsed), `unparsed of ${what}`);
            if (i % 7 === 0)
              for (const by of facetDimensions)
                assert.deepEqual(await guarded.facets(criteria, by), await sqlEngine.facets(criteria, by), `facets by ${by} of ${what}`);
          }
        return { narrowed, found };
      }
    }

    /** The moments compared once the index has followed changes: now (UTC), tomorrow evening (local), tomorrow morning (UTC). */
    const afterChanges = (): OpenAt[] => (full ? moments() : moments().filter((_, i) => i % 2 === 0));

    test('answers every kind of search the index holds as SQL does: totals, pages, cursors and facets', async () => {
      assert.ok((await compareAll('built')) > 100);
    });

    test('answers open_now and open_at from the index as SQL does, the unparsed counted alike', async () => {
      const { narrowed, found } = await compareOpen('built');
      // An engine that ignored the filter would match as many places as without it: the sweep would fail.
      assert.ok(narrowed > 20, `the open filter narrowed ${narrowed} searches`);
      assert.ok(found > 10, `${found} searches found open places`);
    });

    test('after an import and a retirement, the change log brings the index to the same answers', async () => {
      const before = memory.state();
      // New places through the import's writer, copies of existing ones under another source (same
      // categories, cities and contacts), some with more reviews than any: they land in the tail.
      const { rows } = await sql<PlaceRecordRow>`SELECT * FROM places WHERE id % 5 = 0`.execute(t.db.kysely);
      await writePlaces(
        t.db,
        rows.map((r, i) =>
          testPlaceRecord('parity', `copy-${r.id}`, {
            category: r.category,
            categories: r.category ? [r.category] : [],
            city_id: r.city_id,
            country_code: r.country_code,
            phone: i % 3 === 0 ? r.phone : null,
            website: r.website,
            email: r.email,
            rating: r.rating,
            review_count: i % 4 === 0 ? 100_000 + i : r.review_count,
            closed: i % 11 === 0 ? 1 : 0,
          }),
        ),
      );
      // Retire a tenth of the first import's places as a later snapshot would.
      await sql`UPDATE places SET closed_reason = 'retired', closed_at = '2026-01-01T00:00:00.000Z' WHERE id % 10 = 3 AND closed_at IS NULL`.execute(
        t.db.kysely,
      );
      await memory.catchUp();
      const now = memory.state();
      assert.ok(now.engine === 'memory' && before.engine === 'memory' && now.version! > before.version!);
      assert.equal(now.engine === 'memory' && now.builtMs, before.engine === 'memory' && before.builtMs, 'no rebuild');
      assert.ok(
        now.engine === 'memory' && now.tail > tailLimit,
        `more places moved (${now.engine === 'memory' && now.tail}) than the tail limit`,
      );
      await compareAll('after changes, from the tail', true);
      // The next round puts the moved places back in order.
      await memory.catchUp();
      const compacted = memory.state();
      assert.ok(compacted.engine === 'memory' && compacted.tail === 0 && compacted.builtMs !== now.builtMs, 'rebuilt on the next round');
      await compareAll('after the rebuild that follows', true);
      // The last pass still answers the open filter, on both paths; then a new pass, which the engine follows.
      await guarded.catchUp();
      // Every moment of the sweep was compared on the built index above; after the changes what is new is the
      // data the passes hold, so the sample compares it at one moment of each clock and the evening (the full
      // sweep at every moment).
      await compareOpen('after changes, the previous pass', afterChanges());
      const count = async (state: string) =>
        Number((await sql<{ n: number }>`SELECT count(*) AS n FROM place_hours WHERE state = ${state}`.execute(t.db.kysely)).rows[0]!.n);
      const [ok, unparsed] = [await count('ok'), await count('unparsed')];
      // Hours given to places that had none: some always open, some in words the parser does not take.
      await sql`UPDATE places SET opening_hours = CASE WHEN id % 8 = 1 THEN '24/7' ELSE 'ask at the bar' END
        WHERE id % 4 = 1 AND opening_hours IS NULL`.execute(t.db.kysely);
      await guarded.catchUp();
      // The pass as a server's place maintenance runs it; each engine follows it after the check.
      await new PlaceMaintenance({ db: t.db, hoursWindowDays: 2 }).keepHoursCurrent();
      await memory.followHours();
      await guarded.followHours();
      assert.ok((await count('ok')) > ok && (await count('unparsed')) > unparsed, 'the new pass holds the new hours');
      await compareOpen('after changes, a new pass', afterChanges());
    });

    test('a page shows a place as the change the index applied left it, not as an earlier page read it', async () => {
      // An engine of its own: what the tests before left to do (a rebuild due) must not clear its rows for it.
      const engine = new MemorySearchEngine({ db: t.db, reads }, 60_000);
      await engine.start();
      try {
        const criteria: PlaceCriteria = { ...none, cityId: (await topValues(t.db, 'city_id', 1))[0] as number };
        const first = await engine.searchPage(criteria, 'relevance', null, 5, 10_000);
        assert.ok(first.rows.length > 0);
        assert.equal((await engine.searchPage(criteria, 'relevance', null, 5, 10_000)).rows[0], first.rows[0], 'kept, not read again');
        const place = first.rows[0]!;
        const built = engine.state();
        await sql`UPDATE places SET name = ${`${place.name} (renamed)`}, website = 'https://renamed.example' WHERE id = ${place.id}`.execute(
          t.db.kysely,
        );
        await engine.catchUp();
        const now = engine.state();
        assert.ok(
          now.engine === 'memory' && built.engine === 'memory' && now.builtMs === built.builtMs,
          'applied from the log, no rebuild',
        );
        const [m, s] = await Promise.all([
          engine.searchPage(criteria, 'relevance', null, 5, 10_000),
          sqlEngine.searchPage(criteria, 'relevance', null, 5, 10_000),
        ]);
        assert.equal(m.rows[0]!.name, `${place.name} (renamed)`);
        assert.equal(m.rows[0]!.website, 'https://renamed.example');
        assert.deepEqual(m.rows.map(withoutKey), s.rows.map(withoutKey));
      } finally {
        await engine.close();
      }
    });

    test('follows the catalog by itself: a change is searchable within a second', async () => {
      const polling = new MemorySearchEngine({ db: t.db, reads }, 50);
      await polling.start();
      try {
        const criteria: PlaceCriteria = { ...none, categories: ['parity-followed'] };
        assert.equal(await polling.countMatches(criteria), 0);
        const written = Date.now();
        await writePlaces(t.db, [testPlaceRecord('parity', 'followed', { category: 'parity-followed', review_count: 3 })]);
        while ((await polling.countMatches(criteria)) === 0) {
          assert.ok(Date.now() - written < 1000, 'searchable within a second');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      } finally {
        await polling.close();
      }
    });

    test('an index behind a pruned change log rebuilds, and answers as SQL does', async () => {
      await sql`UPDATE places SET review_count = coalesce(review_count, 0) + 7 WHERE id % 13 = 1`.execute(t.db.kysely);
      const later = new Date(Date.now() + 3 * 24 * 60 * 60 * 1000);
      await prunePlaceChanges(t.db, new Date(later.getTime() - 2 * 24 * 60 * 60 * 1000));
      await prunePlaceChanges(t.db, later);
      const built = memory.state();
      await sql`UPDATE places SET rating = 4.5 WHERE id % 17 = 2`.execute(t.db.kysely);
      await memory.catchUp();
      const now = memory.state();
      assert.ok(now.engine === 'memory' && built.engine === 'memory');
      assert.notEqual(now.builtMs, built.builtMs, 'rebuilt');
      await compareAll('after a rebuild', true);
    });

    test('hands SQL the searches the index does not hold: typo-tolerant text, exclusions', async () => {
      const city = (await topValues(t.db, 'city_id', 1))[0] as number;
      const cases: Array<[PlaceCriteria, PlaceSort]> = [
        [{ ...none, cityId: city, text: { words: ['cafe'], mode: 'fuzzy' } }, 'relevance'],
        [{ ...none, cityId: city, exclude: { accountId: 1, exported: 0, suppressed: null } }, 'relevance'],
      ];
      // Any criterion the index does not know is never ignored: SQL answers it.
      assert.equal(indexQueryOf({ ...none, cityId: city, later: true } as PlaceCriteria, 'relevance'), null);
      assert.ok(indexQueryOf({ ...none, cityId: city, open: null, includeClosed: false }, 'relevance'));
      for (const [criteria, sort] of cases) {
        assert.equal(indexQueryOf(criteria, sort), null, JSON.stringify(criteria));
        const [m, s] = await Promise.all([
          memory.searchPage(criteria, sort, null, 20, 10_000),
          sqlEngine.searchPage(criteria, sort, null, 20, 10_000),
        ]);
        assert.ok(s.total > 0, `${JSON.stringify(criteria)} finds places`);
        assert.equal(m.total, s.total);
        assert.deepEqual(
          m.rows.map((r) => r.id),
          s.rows.map((r) => r.id),
        );
      }
    });
  });
}
