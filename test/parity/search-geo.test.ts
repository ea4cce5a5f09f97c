import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { importFiles } from '../../src/bootstrap.ts';
import type { Db } from '../../src/infra/db/database.ts';
import { createReadPool, type ReadPool } from '../../src/infra/db/read-pool.ts';
import { facetDimensions } from '../../src/modules/search/engine/bitmap-index.ts';
import { indexQueryOf, MemorySearchEngine, SqlSearchEngine } from '../../src/modules/search/engine/search-engine.ts';
import { type MultiPolygonCoordinates, polygonBbox } from '../../src/modules/search/polygon.ts';
import { noCriteria, type PlaceCriteria, type PlaceKey, type PlaceSort } from '../../src/modules/search/query/criteria.ts';
import { type ApiReadTasks, createReadTasks, readTasksModule } from '../../src/modules/search/read-tasks.ts';
import type { PlacePage } from '../../src/modules/search/search.reads.ts';
import { dialects, type TestDatabase } from '../helpers/databases.ts';
import { indexOnly } from '../helpers/index-only.ts';
import { testPlaceRecord, writePlaces } from '../helpers/places.ts';

/**
 * Geography and the name order through the in-memory index against SQL on real data (OpenStreetMap's Monaco and
 * central Tokyo: Latin, accented and Japanese names), on both dialects: radius, bounding box, drawn areas (a
 * polygon, one with a hole, a MultiPolygon of both cities), a box that would cross the antimeridian (nothing, as
 * in SQL), each alone and with other filters; `sort=distance`, relevance with a point (the same order), `sort=name`
 * for every size of result (the whole catalog too) and the orders of the bitmaps; every page by cursor; the same
 * totals, places, order, next keys and distances. The engine may not hand any of them to SQL. Then again after
 * places are renamed, moved and added through the change log, and after the rebuild that follows.
 */

const data = new URL('../../../shared/data/', import.meta.url);
const files = ['osm/monaco-2026.osm.pbf', 'osm/tokyo-center.osm.pbf'].map((f) => new URL(f, data).pathname);
const none = noCriteria;
/** SEARCH_PARITY_FULL=1: after the changes, every search of the sweep again, not half of them. */
const full = process.env.SEARCH_PARITY_FULL === '1';

const monaco = { lat: 43.7384, lon: 7.4246 };
const tokyo = { lat: 35.6812, lon: 139.7671 };

const ring = (lon: number, lat: number, d: number): number[][] => [
  [lon - d, lat - d],
  [lon + d, lat - d * 0.5],
  [lon + d * 0.8, lat + d],
  [lon - d * 0.6, lat + d * 0.7],
  [lon - d, lat - d],
];
const square = (lon: number, lat: number, d: number): number[][] => [
  [lon - d, lat - d],
  [lon + d, lat - d],
  [lon + d, lat + d],
  [lon - d, lat + d],
  [lon - d, lat - d],
];

/** A drawn area as the search service sets it: its box and the polygon. */
const drawn = (polygon: MultiPolygonCoordinates): Partial<PlaceCriteria> => ({ bbox: polygonBbox(polygon), polygon });

async function topCategories(db: Db, n: number): Promise<string[]> {
  const { rows } = await sql<{ v: string }>`SELECT category AS v FROM places WHERE category IS NOT NULL
    GROUP BY category ORDER BY count(*) DESC, category LIMIT ${n}`.execute(db.kysely);
  return rows.map((r) => r.v);
}

async function searches(db: Db): Promise<Array<[PlaceCriteria, PlaceSort[]]>> {
  const [first, second] = await topCategories(db, 2);
  const areas: Array<Partial<PlaceCriteria>> = [
    { near: { ...monaco, radiusM: 300 } },
    { near: { ...monaco, radiusM: 1500 } },
    { near: { ...tokyo, radiusM: 2500 } },
    { near: { lat: 43.75, lon: 7.44, radiusM: 20_000 } },
    { bbox: [7.41, 43.725, 7.44, 43.75] },
    { bbox: [139.7, 35.65, 139.76, 35.7] },
    // West edge east of the east edge (a box over the antimeridian): nothing, on both paths.
    { bbox: [179.5, -10, -179.5, 10] },
    { bbox: [7.43, 43.73, 7.42, 43.74] },
    drawn([[ring(7.424, 43.737, 0.01)]]),
    drawn([[square(139.73, 35.675, 0.03), square(139.73, 35.675, 0.01)]]),
    drawn([[ring(7.424, 43.737, 0.006)], [square(139.72, 35.67, 0.02)]]),
    { near: { ...monaco, radiusM: 1000 }, bbox: [7.42, 43.73, 7.45, 43.76] },
    {},
  ];
  const filters: Array<Partial<PlaceCriteria>> = [
    {},
    { categories: [first!] },
    { categories: [first!, second!], hasPhone: false },
    { minRating: 3, includeClosed: true },
    // Text with an area: its relevance (the text's tiers, even with `near`), the name and distance orders over the text index's matches.
    { text: { words: ['cafe'], mode: 'substring' } },
  ];
  const out: Array<[PlaceCriteria, PlaceSort[]]> = [];
  for (const area of areas)
    for (const filter of filters) {
      const criteria = { ...none, ...area, ...filter };
      const sorts: PlaceSort[] = ['relevance', 'name', 'review_count', 'rating'];
      if (criteria.near) sorts.push('distance');
      out.push([criteria, sorts]);
    }
  return out;
}

/** The same distance within a rounding of the last bits (the engine's math library against the database's). */
const close = (a: number | string | null | undefined, b: number | string | null | undefined) =>
  typeof a === 'number' && typeof b === 'number' ? Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b)) : a === b;

function assertSamePage(m: PlacePage, s: PlacePage, what: string): void {
  assert.equal(m.total, s.total, what);
  assert.deepEqual(
    m.rows.map((r) => r.id),
    s.rows.map((r) => r.id),
    what,
  );
  for (const [i, row] of m.rows.entries()) {
    const { distance_m: dm, sort_key: _k, ...rest } = row as typeof row & { sort_key?: unknown };
    const { distance_m: ds, sort_key: _s, ...restSql } = s.rows[i]! as typeof row & { sort_key?: unknown };
    assert.deepEqual(rest, restSql, what);
    assert.ok(close(dm, ds), `${what}: distance ${dm} against ${ds}`);
  }
  assert.equal(m.next === null, s.next === null, what);
  if (m.next && s.next) {
    assert.equal(m.next.id, s.next.id, what);
    assert.ok(close(m.next.key, typeof m.next.key === 'number' ? Number(s.next.key) : s.next.key), `${what}: next key`);
  }
}

for (const dialect of dialects) {
  describe(`geography and the name order through the index against SQL (${dialect.name})`, { timeout: 240_000 }, () => {
    let t: TestDatabase;
    let reads: ReadPool<ApiReadTasks>;
    let engine: MemorySearchEngine;
    let sqlEngine: SqlSearchEngine;

    before(async () => {
      t = await dialect.open('prepared');
      await importFiles(t.db, files);
      // OpenStreetMap has no ratings: some, with ties, so that the bitmaps' orders have something to order.
      await sql`UPDATE places SET rating = (id % 9) * 0.5 + 1, review_count = id % 37 WHERE id % 3 <> 0`.execute(t.db.kysely);
      // Names that only a code point order sorts right: a letter past the BMP against one just below it, and equal names.
      await sql`UPDATE places SET name = CASE WHEN id % 50 = 1 THEN ${'\u{1F355} Pizza'} WHEN id % 50 = 2 THEN ${'\uFF30izza'} ELSE 'Café' END
        WHERE id % 50 IN (1, 2, 3)`.execute(t.db.kysely);
      reads = createReadPool({ db: t.db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule });
      // No rebuild while changes arrive (a large tail limit): the changed places are answered as loose slots.
      engine = new MemorySearchEngine({ db: t.db, reads: indexOnly(reads), tailLimit: () => 1_000_000 }, 60_000);
      sqlEngine = new SqlSearchEngine({ db: t.db, reads });
      await engine.start();
    });
    after(async () => {
      await engine?.close();
      await reads?.close();
      await t?.dispose();
    });

    /** Every search of the sweep, or (`half`) every other one: each area and each filter, not every pair of them. */
    async function compareAll(label: string, half = false): Promise<{ pages: number; found: number }> {
      let pages = 0;
      let found = 0;
      for (const [criteria, sorts] of (await searches(t.db)).filter((_, i) => !half || full || i % 2 === 0)) {
        for (const sort of sorts) {
          assert.ok(indexQueryOf(criteria, sort), `the index holds ${JSON.stringify(criteria)} ${sort}`);
          let at: PlaceKey | null = null;
          for (let page = 0; page < 3; page++) {
            const what = `${label}: ${JSON.stringify(criteria)} ${sort} page ${page}`;
            const [m, s]: [PlacePage, PlacePage] = await Promise.all([
              engine.searchPage(criteria, sort, at, 20, 10_000),
              sqlEngine.searchPage(criteria, sort, at, 20, 10_000),
            ]);
            assertSamePage(m, s, what);
            pages++;
            if (page === 0 && s.total > 0) found++;
            if (!s.next) break;
            at = s.next;
          }
        }
        assert.equal(await engine.countMatches(criteria), await sqlEngine.countMatches(criteria), JSON.stringify(criteria));
        // SQL counts a drawn area's facets over its box; the engine's are exact: compared without a polygon.
        if (!criteria.polygon && pages % 5 === 0)
          for (const by of facetDimensions)
            assert.deepEqual(
              await engine.facets(criteria, by),
              await sqlEngine.facets(criteria, by),
              `facets by ${by} of ${JSON.stringify(criteria)}`,
            );
      }
      return { pages, found };
    }

    test('answers radius, box and drawn-area searches, by distance and by name, as SQL does, page after page', async () => {
      const { pages, found } = await compareAll('built');
      assert.ok(pages > 250, `${pages} pages compared`);
      assert.ok(found > 30, `${found} searches found places`);
    });

    test('follows renamed, moved and new places through the change log, then after the rebuild', async () => {
      const built = engine.state();
      await sql`UPDATE places SET name = 'Aaa ' || name WHERE id % 7 = 0`.execute(t.db.kysely);
      // Monaco's places a few hundred metres east, Tokyo's into Monaco: in and out of every area above.
      await sql`UPDATE places SET lon = lon + 0.004 WHERE id % 11 = 0 AND lon < 10`.execute(t.db.kysely);
      await sql`UPDATE places SET lat = 43.7384 + (id % 100) * 0.0001, lon = 7.4246 WHERE id % 13 = 0 AND lon > 100`.execute(t.db.kysely);
      const { rows } = await sql<{
        id: number;
        lat: number;
        lon: number;
        category: string | null;
      }>`SELECT id, lat, lon, category FROM places
        WHERE id % 17 = 0 AND lat IS NOT NULL`.execute(t.db.kysely);
      await writePlaces(
        t.db,
        rows.map((r, i) =>
          testPlaceRecord('parity', `near-${r.id}`, {
            name: i % 2 === 0 ? `Zz copy ${r.id}` : `Café ${i % 5}`,
            category: r.category,
            categories: r.category ? [r.category] : [],
            city_id: null,
            country_code: null,
            lat: r.lat + 0.0002,
            lon: r.lon,
            review_count: i,
          }),
        ),
      );
      await engine.catchUp();
      const now = engine.state();
      assert.ok(now.engine === 'memory' && built.engine === 'memory' && now.builtMs === built.builtMs, 'applied from the log');
      // Every pair of area and filter was compared on the built index; after the changes, what is new is the
      // places (renamed, moved in and out of every area, added), which half the pairs reach as well: every
      // area and every filter, in every order. SEARCH_PARITY_FULL=1 compares every pair again.
      await compareAll('after changes, loose slots', true);
      await engine.rebuild();
      await compareAll('after the rebuild', true);
    });

    test('orders the whole catalog by name, with filters, as SQL does, across pages', async () => {
      const [first] = await topCategories(t.db, 1);
      for (const criteria of [none, { ...none, hasPhone: true }, { ...none, categories: [first!] }, { ...none, includeClosed: true }]) {
        let at: PlaceKey | null = null;
        for (let page = 0; page < 6; page++) {
          const [m, s]: [PlacePage, PlacePage] = await Promise.all([
            engine.searchPage(criteria, 'name', at, 50, 10_000),
            sqlEngine.searchPage(criteria, 'name', at, 50, 10_000),
          ]);
          assertSamePage(m, s, `${JSON.stringify(criteria)} name page ${page}`);
          if (!s.next) break;
          at = s.next;
        }
      }
    });
  });
}
