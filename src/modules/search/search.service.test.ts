import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken } from '../../../test/helpers/accounts.ts';
import { copyTestSqlite, dialects, type openTestSqlite, type TestDatabase } from '../../../test/helpers/databases.ts';
import { writePlaces } from '../../../test/helpers/places.ts';
import { createReadPool } from '../../infra/db/read-pool.ts';
import { AppError } from '../../infra/errors.ts';
import { placesVersion } from '../places/place-changes.repository.ts';
import { contentHash, type PlaceRecord, publicPlaceId } from '../places/place-record.ts';
import { storedPlaceText } from '../places/place-text.ts';
import { countSearchPlaces, iterateSearchPlaces } from './bulk-reads.ts';
import { noCriteria, type PlaceCriteria } from './query/criteria.ts';
import { countPlaces, findPlacesPage } from './query/place-query.repository.ts';
import { fuzzyDistance, substringEditDistance } from './query/typos.ts';
import { createReadTasks, readTasksModule } from './read-tasks.ts';
import { getSearchForAccount } from './saved-searches.ts';
import { createSearchReads } from './search.reads.ts';
import { findSearchForAccount, insertSearch } from './search.repository.ts';
import { quickSearch, saveNewSearch } from './search.service.ts';
import { createSearch } from './search.ts';
import type { SavedSearch, SearchDeps } from './search.types.ts';

/** The read tasks as a read-pool thread runs them (its count cache included). */
const { countMatches, searchPage } = createSearchReads();

/** Places spread over a small grid in Munich (city 2867714) and one in Helsinki, named to exercise matching. */
const names = ['Ratskeller', 'Café Königin', 'Pizzeria Napoli', 'Augustiner Bräu', '寿司 銀座', 'Wirtshaus Zum Straßenbahner'];
function record(i: number, overrides: Partial<PlaceRecord> = {}): PlaceRecord {
  const base: Omit<PlaceRecord, 'content_hash'> = {
    public_id: publicPlaceId('test', `p${i}`),
    source: 'test',
    source_id: `p${i}`,
    name: `${names[i % names.length]} ${i}`,
    names: i % names.length === 0 ? JSON.stringify({ en: `Town Hall Cellar ${i}`, alt: ['Ratskeller München'] }) : null,
    category: i % 2 === 0 ? 'restaurant' : 'cafe',
    categories: [i % 2 === 0 ? 'restaurant' : 'cafe'],
    source_categories: null,
    phone: i % 3 === 0 ? '+49 89 1234' : null,
    phone_e164: null,
    website: null,
    website_domain: null,
    email: null,
    street: null,
    housenumber: null,
    postcode: null,
    address: null,
    region: null,
    city: 'München',
    city_id: 2867714,
    city_source: 'address',
    city_distance_m: null,
    country_code: 'DE',
    lat: 48.13 + (i % 10) * 0.001,
    lon: 11.57 + Math.floor(i / 10) * 0.001,
    rating: (i % 5) + 0.5,
    review_count: i,
    opening_hours: null,
    attributes: null,
    ...overrides,
  };
  return { ...base, content_hash: contentHash(base) };
}

async function seed(t: TestDatabase, count: number): Promise<void> {
  const records = Array.from({ length: count }, (_, i) => record(i));
  records.push(
    record(count, { city_id: 658225, city: 'Helsinki', country_code: 'FI', lat: 60.17, lon: 24.94, name: 'Ratskeller Helsinki' }),
  );
  await writePlaces(t.db, records);
}

const criteria = (over: Partial<PlaceCriteria>): PlaceCriteria => ({ ...noCriteria, ...over });

for (const dialect of dialects) {
  describe(`search on ${dialect.name}`, () => {
    let t: TestDatabase;
    let deps: SearchDeps;
    before(async () => {
      t = await dialect.open('migrated');
      await seed(t, 240);
      deps = { ...createSearch(t.db, createReadPool({ db: t.db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule })) };
    });
    after(async () => t.dispose());

    test('counts exactly and pages by keyset to the end without repeating a place', async () => {
      const c = criteria({ cityId: 2867714, categories: ['restaurant'] });
      const seen: number[] = [];
      let after = null;
      let total = -1;
      for (;;) {
        const page = await searchPage(t.db, c, 'rating', after, 7);
        total = page.total;
        seen.push(...page.rows.map((r) => r.id));
        const ratings = page.rows.map((r) => r.rating ?? -1);
        for (let i = 1; i < ratings.length; i++) assert.ok(ratings[i - 1]! >= ratings[i]!);
        if (!page.next) break;
        after = page.next;
      }
      assert.equal(total, 120);
      assert.equal(seen.length, 120);
      assert.equal(new Set(seen).size, 120);
    });

    test('keeps totals exact when places change after a search was counted', async () => {
      const c = criteria({ text: { words: ['Kellerbar'], mode: 'substring' } });
      assert.equal((await searchPage(t.db, c, 'relevance', null, 5)).total, 0);
      const base = record(9000, { name: 'Kellerbar Nord' });
      await t.db.kysely
        .insertInto('places')
        .values({
          ...base,
          ...storedPlaceText(t.db).of(base),
          categories: JSON.stringify(base.categories),
          first_seen_at: 'x',
          updated_at: 'x',
        })
        .execute();
      assert.equal((await searchPage(t.db, c, 'relevance', null, 5)).total, 1);
      await t.db.kysely.deleteFrom('places').where('source_id', '=', 'p9000').execute();
      assert.equal((await searchPage(t.db, c, 'relevance', null, 5)).total, 0);
    });

    test('matches every name of a place, the display name and the localised and alternative ones', async () => {
      const byAlt = await searchPage(t.db, criteria({ text: { words: ['Town', 'Hall'], mode: 'substring' } }), 'name', null, 100);
      // Every sixth place has the alternative names (places 0, 6, … 240, the last one in Helsinki).
      assert.equal(byAlt.total, 41);
      const byName = await searchPage(t.db, criteria({ text: { words: ['ratskeller'], mode: 'substring' } }), 'name', null, 100);
      assert.equal(byName.total, 41);
    });

    test('folds case and accents in names and in the query alike', async () => {
      const total = async (word: string) =>
        (await searchPage(t.db, criteria({ text: { words: [word], mode: 'substring' } }), 'relevance', null, 5)).total;
      // Every sixth place, from the second, is a "Café Königin"; "Augustiner Bräu" from the fourth.
      for (const word of ['konigin', 'KÖNIGIN', 'Königin', 'cafe', 'CAFÉ']) assert.equal(await total(word), 40, word);
      assert.equal(await total('brau'), 40);
      // The alternative name "Ratskeller München" of every sixth place, from the first, and the Helsinki one.
      assert.equal(await total('munchen'), 41);
    });

    test('finds places near a point and inside a box', async () => {
      const near = await searchPage(t.db, criteria({ near: { lat: 48.13, lon: 11.57, radiusM: 140 } }), 'distance', null, 100);
      // Within 140 m of the grid corner: 0–1 steps north (111 m) and 0–1 steps east (74 m); the diagonal is 134 m.
      assert.deepEqual(
        near.rows.map((r) => `${r.lat}|${r.lon}`).sort(),
        ['48.13|11.57', '48.13|11.571', '48.131|11.57', '48.131|11.571'].sort(),
      );
      assert.ok(near.rows.every((r, i) => i === 0 || (r.distance_m ?? 0) >= (near.rows[i - 1]!.distance_m ?? 0)));
      const box = await searchPage(t.db, criteria({ bbox: [11.5695, 48.1295, 11.5715, 48.1315] }), 'name', null, 100);
      assert.equal(box.total, 4);
    });

    test('tolerates typos only as far as the word length allows', async () => {
      const deps0 = deps;
      const oneTypo = await quickSearch(deps0, { query: 'Ratskelelr', per_page: 5 }, { lang: null, location: 'body' });
      assert.equal(oneTypo.total, 41);
      const shortTypo = await quickSearch(deps0, { query: 'Napili', per_page: 5 }, { lang: null, location: 'body' });
      assert.equal(shortTypo.total, 40);
      const tooFar = await quickSearch(deps0, { query: 'Ratxxxller', per_page: 5 }, { lang: null, location: 'body' });
      assert.equal(tooFar.total, 0);
      // A 5-letter word with a typo in the middle: no piece long enough for the index, so only within a city.
      const shortWithCity = await quickSearch(deps0, { query: 'Caxfe', city: 'Helsinki', per_page: 5 }, { lang: null, location: 'body' });
      assert.equal(shortWithCity.total, 0);
      const shortInMunich = await quickSearch(deps0, { query: 'Cafx', city: 'München', per_page: 5 }, { lang: null, location: 'body' });
      assert.equal(shortInMunich.total, 40);
      const shortAlone = await quickSearch(deps0, { query: 'Cafx', per_page: 5 }, { lang: null, location: 'body' });
      assert.equal(shortAlone.total, 0);
    });

    test('lets an account load its own saved search and iterate all its places in id batches, and hides it from others', async () => {
      const owner = await createAccountWithToken(t.db);
      const other = await createAccountWithToken(t.db);
      const created = await saveNewSearch(
        deps,
        owner.accountId,
        { query: 'Ratskeler', sort: 'rating' },
        { perPage: 3, fields: [], lang: null },
      );
      const search: SavedSearch = await getSearchForAccount(t.db, owner.accountId, created.search.id);
      assert.equal(search.total, 41);
      assert.equal(search.criteria.text?.mode, 'fuzzy');
      const batches: number[][] = [];
      for await (const batch of iterateSearchPlaces(t.db, search, 10)) batches.push(batch.map((r) => r.id));
      const ids = batches.flat();
      assert.ok(batches.every((b) => b.length > 0 && b.length <= 10));
      assert.equal(ids.length, 41);
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => a - b),
      );
      assert.equal(await countSearchPlaces(t.db, search), 41);
      for (const [account, id] of [
        [other.accountId, created.search.id],
        [owner.accountId, 'srch_aaaaaaaaaaaaaaaa'],
        [owner.accountId, 'nonsense'],
      ] as const) {
        await assert.rejects(getSearchForAccount(t.db, account, id), (e: unknown) => e instanceof AppError && e.code === 'not_found');
      }
    });
  });
}

describe('full-text and geo indexes on SQLite', () => {
  let t: ReturnType<typeof openTestSqlite>;
  before(async () => {
    t = await copyTestSqlite('migrated');
    await seed(t, 12);
  });
  after(async () => t.dispose());

  test('follow updates and deletes of places (the triggers keep them in step with the stored search document)', async () => {
    const find = async (word: string) =>
      (await searchPage(t.db, criteria({ text: { words: [word], mode: 'substring' } }), 'name', null, 100)).total;
    assert.equal(await find('Napoli'), 2);
    const renamed = { name: 'Trattoria Roma', names: null, city: null, city_source: null };
    await t.db.kysely
      .updateTable('places')
      .set({ name: renamed.name, search_document: storedPlaceText(t.db).of(renamed).search_document })
      .where('source_id', '=', 'p2')
      .execute();
    assert.equal(await find('Napoli'), 1);
    assert.equal(await find('Trattoria'), 1);
    await t.db.kysely.deleteFrom('places').where('source_id', '=', 'p2').execute();
    assert.equal(await find('Trattoria'), 0);
    const inBox = async () => (await searchPage(t.db, criteria({ bbox: [0, 0, 1, 1] }), 'name', null, 100)).total;
    assert.equal(await inBox(), 0);
    await t.db.kysely.updateTable('places').set({ lat: 0.5, lon: 0.5 }).where('source_id', '=', 'p3').execute();
    assert.equal(await inBox(), 1);
  });

  test('answers a one-word search in one pass with the same total, order and cursor as counting and the two streams', async () => {
    // A name starting with a word that other names only contain, and one that is only that word, added after them (higher ids).
    await writePlaces(t.db, [record(900, { name: 'Keller Bar' }), record(901, { name: 'Keller' })]);
    const keys = new Set<number | string>();
    for (const word of ['ratskeller', 'keller', 'cellar', 'Königin', 'bräu', '寿司', 'zzzz']) {
      const c = criteria({ text: { words: [word], mode: 'substring' } });
      const onePass = await searchPage(t.db, c, 'relevance', null, 3);
      const rows = await findPlacesPage(t.db, c, 'relevance', null, 4);
      assert.equal(onePass.total, await countPlaces(t.db, c), word);
      assert.deepEqual(
        onePass.rows.map((r) => r.id),
        rows.slice(0, 3).map((r) => r.id),
        word,
      );
      const last = rows[2];
      assert.deepEqual(onePass.next, rows.length > 3 && last ? { key: last.sort_key, id: last.id } : null, word);
      for (const r of rows) keys.add(r.sort_key);
    }
    // Every relevance key occurred: a whole name, names starting with the word, and names only containing it.
    assert.deepEqual([...keys].sort(), [0, 1, 2]);
  });

  test('gives the same pages from the worker pool as inline', async () => {
    const pool = createReadPool({ db: t.db, workers: 1, tasks: createReadTasks(), tasksModule: readTasksModule });
    try {
      assert.equal(pool.threads, 1);
      const c = criteria({ cityId: 2867714, text: { words: ['caf'], mode: 'substring' } });
      assert.deepEqual(await pool.run('searchPage', c, 'name', null, 5), await searchPage(t.db, c, 'name', null, 5));
    } finally {
      await pool.close();
    }
  });

  test('answers 503 unavailable for reads beyond the queue, and still serves the rest', async () => {
    const pool = createReadPool({ db: t.db, workers: 1, tasks: createReadTasks(), tasksModule: readTasksModule });
    try {
      const c = criteria({ cityId: 2867714 });
      const expected = await countMatches(t.db, c);
      const results = await Promise.allSettled(Array.from({ length: 2100 }, () => pool.run('countMatches', c)));
      const rejected = results.filter((r) => r.status === 'rejected');
      assert.ok(rejected.length > 0 && rejected.length < 100, `${rejected.length} rejected`);
      for (const r of rejected)
        assert.ok(r.reason instanceof AppError && r.reason.code === 'unavailable' && r.reason.headers['retry-after'] === '1');
      for (const r of results) if (r.status === 'fulfilled') assert.equal(r.value, expected);
    } finally {
      await pool.close();
    }
  });

  test('cached answers are reused only while places do not change', async () => {
    const pool = createReadPool({
      db: t.db,
      workers: 1,
      tasks: createReadTasks(),
      tasksModule: readTasksModule,
      cache: { entries: 10, tasks: ['searchPage', 'countMatches'], version: () => placesVersion(t.db) },
    });
    try {
      const c = criteria({ cityId: 2867714, text: { words: ['Augustiner'], mode: 'substring' } });
      const first = await pool.run('searchPage', c, 'name', null, 50);
      // Concurrent identical calls share one computation.
      const again = await Promise.all([pool.run('searchPage', c, 'name', null, 50), pool.run('searchPage', c, 'name', null, 50)]);
      assert.deepEqual({ hits: pool.cacheStats!.hits, misses: pool.cacheStats!.misses }, { hits: 2, misses: 1 });
      for (const page of again) assert.deepEqual(page, first);
      // Another argument is another answer.
      assert.notEqual((await pool.run('searchPage', c, 'name', null, 1)).rows.length, first.rows.length);

      await writePlaces(t.db, [record(500, { name: 'Augustiner Keller' })]);
      const after = await pool.run('searchPage', c, 'name', null, 50);
      assert.equal(after.total, first.total + 1);
      assert.ok(after.rows.some((r) => r.name === 'Augustiner Keller'));
      assert.equal(pool.cacheStats!.misses, 3);
    } finally {
      await pool.close();
    }
  });

  test('saved searches written in one turn commit together, and a bad row fails only its own caller', async () => {
    const { accountId } = await createAccountWithToken(t.db);
    const row = (id: string) => ({
      public_id: id,
      account_id: accountId,
      params: '{}',
      criteria: JSON.stringify(criteria({ cityId: 2867714 })),
      resolution: '{"type":null,"city":null,"country":null}',
      sort: 'name',
      total: 1,
      created_at: new Date().toISOString(),
    });
    const ids = Array.from(
      { length: 20 },
      (_, i) => `srch_${'a'.repeat(14)}${String.fromCharCode(97 + Math.floor(i / 10))}${String.fromCharCode(97 + (i % 10))}`,
    );
    const results = await Promise.allSettled([...ids.map((id) => insertSearch(t.db, row(id))), insertSearch(t.db, row(ids[0]!))]);
    assert.deepEqual(
      results.map((r) => r.status),
      [...ids.map(() => 'fulfilled'), 'rejected'],
    );
    for (const id of ids) assert.ok(await findSearchForAccount(t.db, accountId, id), id);
  });
});

describe('edit distance', () => {
  test('measures the fewest edits to any part of the text', () => {
    assert.equal(substringEditDistance('keller', 'ratskeller am markt', 2), 0);
    assert.equal(substringEditDistance('kelelr', 'ratskeller', 2), 1, 'two neighbouring letters swapped are one edit');
    assert.equal(substringEditDistance('klelre', 'ratskeller', 2), 2);
    assert.equal(substringEditDistance('kellr', 'ratskeller', 2), 1);
    assert.equal(substringEditDistance('xyzzy', 'ratskeller', 2), 3);
  });

  test('folds case, accents and ß before comparing, and allows one typo from 4 letters, none below', () => {
    assert.equal(fuzzyDistance(['strassenbahner'], 'Wirtshaus Zum Straßenbahner', null), 0);
    assert.equal(fuzzyDistance(['KONIGIN'], 'Café Königin', null), 0);
    assert.equal(fuzzyDistance(['kafe'], 'Café Königin', null), 1);
    assert.equal(fuzzyDistance(['bar'], 'Café Königin', null), null);
    assert.equal(fuzzyDistance(['kafx'], 'Café Königin', null), null);
    assert.equal(fuzzyDistance(['rathaus'], 'Ratskeller', JSON.stringify({ de: 'Ratskeller im Rathaus' })), 0);
  });
});

for (const dialect of dialects) {
  describe(`boxes on ${dialect.name}`, () => {
    let t: TestDatabase;
    // Points on and beside the edges of SQLite's 0.1° latitude bands, in both hemispheres, at the poles and the antimeridian.
    const lats = [-90, -45.0500001, -45.05, -0.1, -0.0999999, -0.05, 0, 0.05, 0.1, 12.3456789, 48.1, 48.0999999, 89.95, 90];
    const lons = [-180, -11.5, 0, 11.5, 179.9999999, 180];
    const points = lats.flatMap((lat) => lons.map((lon) => ({ lat, lon })));
    before(async () => {
      t = await dialect.open('migrated');
      await writePlaces(
        t.db,
        points.map((p, i) => record(i, { ...p, source_id: `box${i}`, public_id: publicPlaceId('test', `box${i}`) })),
      );
    });
    after(async () => t.dispose());

    test('finds exactly the places inside a box, narrow or tall, in either hemisphere', async () => {
      const boxes: Array<[number, number, number, number]> = [
        [-180, -90, 180, 90], // the world: one range of bands
        [-11.5, -0.1, 11.5, 0.1], // a few listed bands around the equator
        [-12, -45.05, 12, -45.05], // a box of zero height on a band's edge
        [11.5, 48.0999999, 11.5, 48.1],
        [0, -90, 0, -80], // tall and thin: more bands than are listed
        [179.9, 89.9, 180, 90],
        [-180, 12.3456789, 180, 12.3456789],
      ];
      for (const [minLon, minLat, maxLon, maxLat] of boxes) {
        const expected = points.filter((p) => p.lat >= minLat && p.lat <= maxLat && p.lon >= minLon && p.lon <= maxLon).length;
        const found = await searchPage(t.db, criteria({ bbox: [minLon, minLat, maxLon, maxLat] }), 'name', null, 1000);
        assert.equal(found.total, expected, `box ${[minLon, minLat, maxLon, maxLat]}`);
        assert.equal(found.rows.length, expected);
        assert.ok(expected > 0, 'every box holds some of the points');
      }
    });

    if (dialect.name === 'sqlite') {
      test('reads a city-sized box through the latitude-band index', async () => {
        const h = t.db.sqlite!;
        const plan = (sql: string, ...params: number[]) =>
          (h.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join('; ');
        // The repository's condition, with the bands bound as JS numbers are (as floats).
        const listed = plan(
          'SELECT id FROM places WHERE cast((lat + 90) * 10 as integer) IN (?, ?) AND lon BETWEEN ? AND ?',
          1381,
          1382,
          11.5,
          11.6,
        );
        assert.match(listed, /USING (COVERING )?INDEX places_geo_band_idx \(<expr>=\? AND lon>\? AND lon<\?\)/);
        const ranged = plan(
          'SELECT id FROM places WHERE cast((lat + 90) * 10 as integer) BETWEEN ? AND ? AND lon BETWEEN ? AND ?',
          0,
          1800,
          -180,
          180,
        );
        assert.match(ranged, /USING (COVERING )?INDEX places_geo_band_idx \(<expr>>\? AND <expr><\?\)/);
      });
    }
  });
}
