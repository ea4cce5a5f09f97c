import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { createAccountWithToken, type TestAccount } from '../helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';

/**
 * One behaviour on both dialects: the same real data imported into SQLite and PostgreSQL, the same
 * requests sent to both apps, and the answers compared exactly (statuses, totals, the places in order,
 * errors), except what each database generates on its own: search and export ids, cursors, request ids
 * and timestamps. The route suites check what each answer should be; this file checks that the two
 * dialects agree on everything else, ties and orderings included.
 */

const data = new URL('../../../shared/data/', import.meta.url);
const files = [
  // Nine cities' OpenStreetMap POIs: accents (München, Porto, Helsinki), Japanese names, mixed phones.
  'osm/osm-pois-all.osm.pbf',
  // Ratings and review counts, many of them equal (Yelp's ratings are 3.5 to 5 in half steps): ties to break.
  'ratings/yelp-fusion-4cities-2018.ndjson.gz',
  // Emails and websites for the contact filters.
  'places/overture-places-boulder-3545.ndjson.gz',
].map((f) => new URL(f, data).pathname);

// Enough allowance that a few thousand requests of one test file are never refused for it.
const env = {
  DB_READ_WORKERS: '1',
  RATE_LIMIT_TOKEN_PER_MINUTE: '1000000',
  QUOTA_REQUESTS_PER_DAY: '1000000',
  QUOTA_EXPORT_ROWS_PER_MONTH: '100000000',
};

interface Side {
  name: string;
  t: TestApp;
  user: TestAccount;
}

let sides: Side[] = [];

/** Values each database makes on its own, replaced by a marker (null stays null, so presence still counts). */
const generatedKeys = new Set([
  'search_id',
  'request_id',
  'next_cursor',
  'first_exported_at',
  'last_exported_at',
  'created_at',
  'updated_at',
]);

function normalise(value: unknown, key = ''): unknown {
  if (value === null) return null;
  if (generatedKeys.has(key)) return '<generated>';
  if (typeof value === 'string') {
    // Links carry the cursor, which names the search.
    return (
      value
        .replace(/([?&](?:cursor|search_id)=)[^&]+/g, '$1<generated>')
        .replace(/srch_[a-z2-7]{16}/g, 'srch_<generated>')
        .replace(/exp_[a-z2-7]+/g, 'exp_<generated>')
        // The import time of each place (`updated_at`) inside CSV and NDJSON text.
        .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>')
    );
  }
  if (Array.isArray(value)) return value.map((v) => normalise(v));
  if (typeof value === 'object')
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, normalise(v, k)]));
  return value;
}

interface Answer {
  status: number;
  type: string;
  disposition?: string;
  body: unknown;
}

function answer(res: LightMyRequestResponse): Answer {
  const type = String(res.headers['content-type'] ?? '');
  const body = /json/.test(type) && !/ndjson/.test(type) ? normalise(JSON.parse(res.body)) : normalise(res.body);
  const disposition = res.headers['content-disposition'];
  return { status: res.statusCode, type, ...(disposition === undefined ? {} : { disposition: String(disposition) }), body };
}

type Request = { method?: 'GET' | 'POST'; url: string; payload?: object; headers?: Record<string, string> };

function call(side: Side, request: Request): Promise<LightMyRequestResponse> {
  return side.t.app.inject({
    method: request.method ?? 'GET',
    url: request.url,
    headers: { authorization: side.user.authorization, ...request.headers },
    ...(request.payload === undefined ? {} : { payload: request.payload }),
  });
}

/** The answers of both dialects to a scenario (one or several requests), compared after normalising. */
async function same<T>(label: string, scenario: (side: Side) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (const side of sides) results.push(await scenario(side));
  const where = firstDifference(results[0], results[1]);
  if (where !== null) assert.fail(`${label}: postgres differs from sqlite at ${where}`);
  return results;
}

/** The path of the first difference between two JSON-like values, with both values there; null when equal. */
function firstDifference(a: unknown, b: unknown, path = '$'): string | null {
  if (Object.is(a, b)) return null;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) {
    if (typeof a === 'string' && typeof b === 'string') {
      let i = 0;
      while (i < a.length && a[i] === b[i]) i++;
      return `${path}[char ${i}]: sqlite ${JSON.stringify(a.slice(Math.max(0, i - 80), i + 80))} / postgres ${JSON.stringify(b.slice(Math.max(0, i - 80), i + 80))}`;
    }
    return `${path}: sqlite ${JSON.stringify(a)} / postgres ${JSON.stringify(b)}`;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d !== null) return d;
    }
    return a.length === b.length ? null : `${path}.length: sqlite ${a.length} / postgres ${b.length}`;
  }
  const ka = Object.keys(a as object);
  const kb = Object.keys(b as object);
  if (ka.join() !== kb.join()) return `${path} keys: sqlite ${ka.join()} / postgres ${kb.join()}`;
  for (const k of ka) {
    const d = firstDifference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
    if (d !== null) return d;
  }
  return null;
}

/** Every page of a search, following links.next to the end. */
async function allPages(side: Side, url: string, maxPages = Infinity): Promise<{ pages: Answer[]; raw: { search_id?: string } }> {
  const first = await call(side, { url });
  const pages = [answer(first)];
  const raw = first.statusCode === 200 ? (first.json() as { search_id?: string; links?: { next: string | null } }) : {};
  let next = (raw as { links?: { next: string | null } }).links?.next ?? null;
  while (next && pages.length < maxPages) {
    const res = await call(side, { url: next });
    assert.equal(res.statusCode, 200, `${side.name} ${next}: ${res.body}`);
    pages.push(answer(res));
    next = (res.json() as { links: { next: string | null } }).links.next;
  }
  return { pages, raw };
}

const searches = [
  // type + city, each sort; the default order is the review count, most first.
  'type=restaurant&city=M%C3%BCnchen',
  'type=restaurant&city=M%C3%BCnchen&sort=name',
  'type=restaurant&city=M%C3%BCnchen&sort=rating',
  'type=cafe&city=Porto&sort=review_count',
  'type=restaurant&city=San%20Francisco&sort=rating',
  'type=restaurant&city=Chicago&sort=review_count',
  'type=restaurant&city=Philadelphia&min_rating=4.5',
  'type=Tierarzt&city=Munich',
  'type=opticien&city=Helsinki&lang=fr',
  'city=Tokyo&type=restaurant&sort=name',
  // city alone, country, filters of every kind.
  'city=Munich&sort=name',
  'city=Helsinki&sort=name',
  'city=Munich&has_phone=true',
  'city=Munich&has_phone=false&sort=name',
  'city=Munich&has_website=true&sort=rating',
  'city=Boulder&has_email=true',
  'city=Boulder&has_email=false&has_website=true&sort=name',
  'country=MT&sort=name',
  'country=US&min_rating=4&sort=rating',
  'country=PT&type=restaurant',
  'city=Paris',
  'city=Paris&country=US',
  // Full text: exact names, accents folded both ways, case, typos, scripts, short words, kinds of business.
  'query=ratskeller',
  'query=Ratskelelr&city=Munich',
  'query=strasse',
  'query=Stra%C3%9Fe&city=Munich',
  'query=cafe&sort=name',
  'query=caf%C3%A9&city=Porto',
  'query=MUNCHEN',
  'query=s%C3%A3o',
  'query=%E3%83%A9%E3%83%BC%E3%83%A1%E3%83%B3',
  'query=%E5%AF%BF%E5%8F%B8',
  'query=%E5%AF%BF',
  'query=GR&city=Munich',
  'query=a&sort=rating',
  'query=pizza',
  'query=pizza%20Porto',
  'query=coffee%20shop&city=Boulder',
  'query=Zahnarzt',
  'query=dominos%20pizza',
  'query=Helsingin%20yliopisto',
  'query=Bulder',
  'query=Kaffe&city=Helsinki',
  'query=bar&sort=review_count',
  // Geography: near (nearest first by default), sorted, bounding boxes.
  'near=48.1374,11.5755&radius=500',
  'near=48.1374,11.5755&radius=800&sort=distance&type=restaurant',
  'near=48.1374,11.5755&radius=300&sort=name',
  'near=41.1496,-8.6109&radius=1000&sort=rating',
  'near=35.6812,139.7671&radius=1500&query=%E3%82%AB%E3%83%95%E3%82%A7',
  'bbox=11.57,48.135,11.58,48.14',
  'bbox=11.57,48.135,11.58,48.14&sort=name',
  'bbox=-105.3,40.0,-105.2,40.05&has_phone=true&sort=review_count',
  'bbox=24.93,60.16,24.96,60.18&query=ravintola',
];

/** DIALECT_PARITY_FULL=1: every search and every list of leads paged to its end, not only its first pages. */
const full = process.env.DIALECT_PARITY_FULL === '1';

/** Results this small are paged again seven at a time. */
const smallTotal = 150;

test('the comparison names the first difference: an order, a total, a character', () => {
  assert.equal(firstDifference({ data: [{ id: 'a' }, { id: 'b' }] }, { data: [{ id: 'a' }, { id: 'b' }] }), null);
  assert.equal(
    firstDifference({ data: [{ id: 'a' }, { id: 'b' }] }, { data: [{ id: 'b' }, { id: 'a' }] }),
    '$.data[0].id[char 0]: sqlite "a" / postgres "b"',
  );
  assert.equal(firstDifference({ total: 3 }, { total: 4 }), '$.total: sqlite 3 / postgres 4');
  assert.equal(firstDifference([1, 2], [1, 2, 3]), '$.length: sqlite 2 / postgres 3');
  assert.match(firstDifference('id,name\r\nx', 'id,name\r\ny')!, /^\$\[char 9\]/);
  assert.deepEqual(normalise({ search_id: 'srch_aaaaaaaaaaaaaaaa', links: { next: '/x?cursor=abc&per_page=7' }, total: 5 }), {
    search_id: '<generated>',
    links: { next: '/x?cursor=<generated>&per_page=7' },
    total: 5,
  });
});

describe('the same answers from SQLite and PostgreSQL on the same real data', () => {
  before(async () => {
    // Both imports at once: PostgreSQL's share of the work runs in its own server processes.
    const built = await Promise.allSettled([
      buildTestApp({ dialect: 'sqlite', files, env }),
      buildTestApp({ dialect: 'postgres', files, env }),
    ]);
    const apps = built.flatMap((b) => (b.status === 'fulfilled' ? [b.value] : []));
    const failed = built.find((b): b is PromiseRejectedResult => b.status === 'rejected');
    if (failed) {
      await Promise.all(apps.map((t) => t.close()));
      throw failed.reason;
    }
    sides = await Promise.all(
      apps.map(async (t, i) => ({ name: i === 0 ? 'sqlite' : 'postgres', t, user: await createAccountWithToken(t.db) })),
    );
  });

  after(async () => {
    await Promise.all(sides.map((s) => s.t.close()));
  });

  test('both catalogs hold the same places', async () => {
    await same('catalog', async (side) => {
      const rows = await side.t.db.kysely
        .selectFrom('places')
        .select(['public_id', 'name', 'category', 'city_id', 'rating', 'review_count'])
        .orderBy('public_id')
        .execute();
      assert.ok(rows.length > 20_000, `${side.name}: ${rows.length} places`);
      return rows.map((r) => ({
        ...r,
        city_id: r.city_id === null ? null : Number(r.city_id),
        rating: r.rating === null ? null : Number(r.rating),
        review_count: r.review_count === null ? null : Number(r.review_count),
      }));
    });
  });

  test('searches with every filter, sort and full text, paged by cursor (to the end with DIALECT_PARITY_FULL=1)', async () => {
    // Every query is tried, and the test fails naming each one whose answers differ. By default the large
    // results are compared on their first 300 places: three pages of 100 follow the cursor twice past a page
    // boundary in each order, and the small results page to the end below, 7 at a time, where ties meet
    // page boundaries many times over. DIALECT_PARITY_FULL=1 pages every result to its end.
    const maxPages = full ? Infinity : 3;
    const failures: string[] = [];
    for (const query of searches) {
      try {
        const [sqlite] = await same(
          query,
          async (side) => (await allPages(side, `/api/v2/map/search?${query}&per_page=100`, maxPages)).pages,
        );
        const first = sqlite![0]!;
        assert.equal(first.status, 200, `${query}: ${JSON.stringify(first.body)}`);
        // A small result again seven at a time: the cursor followed many times, ties across page boundaries.
        if ((first.body as { total: number }).total <= smallTotal) {
          await same(`${query} (7 a page)`, async (side) => (await allPages(side, `/api/v2/map/search?${query}&per_page=7`)).pages);
        }
      } catch (error) {
        failures.push((error as Error).message);
      }
    }
    assert.deepEqual(failures, []);
  });

  test('names in the language asked for, and the fields asked for', async () => {
    const requests: Request[] = [
      { url: '/api/v2/map/search?type=veterinary&city=Munich&lang=de' },
      { url: '/api/v2/map/search?type=restaurant&city=Helsinki', headers: { 'accept-language': 'fi-FI,fi;q=0.9' } },
      { url: '/api/v2/map/search?city=Porto&fields=name,phone,rating,lat,lon&sort=name&per_page=100' },
      { url: '/api/v2/map/search?near=60.1699,24.9384&radius=400&fields=name&per_page=100' },
    ];
    for (const r of requests) {
      const [sqlite] = await same(`${r.url} ${JSON.stringify(r.headers ?? {})}`, async (side) => answer(await call(side, r)));
      assert.equal(sqlite!.status, 200, JSON.stringify(sqlite!.body));
    }
  });

  test('the simple search (/v1/search) by query parameters, GET body and POST', async () => {
    const requests: Request[] = [
      { url: '/v1/search?query=Ratskeller&city=M%C3%BCnchen' },
      { url: '/v1/search?query=Ratskelelr&city=Munich' },
      { url: '/v1/search?query=%E5%AF%BF%E5%8F%B8' },
      { url: '/v1/search?type=restaurant&city=Porto&per_page=50' },
      { url: '/v1/search?query=pizza&country=US&per_page=100' },
      { method: 'POST', url: '/v1/search', payload: { query: 'café', city: 'Helsinki' } },
      { method: 'POST', url: '/v1/search', payload: { query: 'Kafe', city: 'Helsinki' } },
      { method: 'GET', url: '/v1/search', payload: { query: 'strasse' }, headers: { 'content-type': 'application/json' } },
      { method: 'POST', url: '/v1/search', payload: { query: 'x', colour: 'red' } },
    ];
    for (const r of requests)
      await same(`${r.method ?? 'GET'} ${r.url} ${JSON.stringify(r.payload ?? '')}`, async (side) => answer(await call(side, r)));
  });

  test('the same errors for bad input', async () => {
    const urls = [
      '/api/v2/map/search?city=Munchn',
      '/api/v2/map/search?type=restorant&city=Munich',
      '/api/v2/map/search?city=Paris&country=Atlantis',
      '/api/v2/map/search?city=Munich&per_page=0',
      '/api/v2/map/search?city=Munich&fields=name,fax',
      '/api/v2/map/search?city=Munich&sort=distance',
      '/api/v2/map/search?bbox=11.6,48.1,11.5,48.2',
      '/api/v2/map/search?near=91,11',
      '/api/v2/map/search?cursor=bm90LWEtY3Vyc29y',
      '/api/v2/map/search?per_page=5',
      '/api/v2/map/export?search_id=srch_aaaaaaaaaaaaaaaa&format=csv',
      '/api/v2/map/export?search_id=search-1',
      '/api/v1/user-api/places?per_page=101',
      '/api/v1/user-api/places?cursor=bm90LWEtY3Vyc29y',
      '/api/v2/categories?parent=spaceport',
      '/api/v2/countries?limit=5',
    ];
    for (const url of urls) {
      const [sqlite] = await same(url, async (side) => answer(await call(side, { url })));
      assert.ok(sqlite!.status >= 400 && sqlite!.status < 500, `${url}: ${sqlite!.status}`);
    }
  });

  test('reference lists: categories and countries with their counts, in several languages', async () => {
    for (const url of [
      '/api/v2/categories',
      '/api/v2/categories?lang=de',
      '/api/v2/categories?parent=shop',
      '/api/v2/countries',
      '/api/v2/countries?lang=fr',
    ]) {
      const [sqlite] = await same(url, async (side) => answer(await call(side, { url })));
      assert.equal(sqlite!.status, 200);
    }
  });

  test('exports of the same searches, in csv, json and ndjson, and the leads they leave', async () => {
    const exported = [
      'type=restaurant&city=M%C3%BCnchen',
      'city=Boulder&has_email=true&sort=name',
      'query=caf%C3%A9&city=Porto',
      'type=restaurant&city=San%20Francisco&sort=rating',
      'near=35.6812,139.7671&radius=1000',
    ];
    const formats = ['csv', 'json', 'ndjson'];
    for (const query of exported) {
      await same(`exports of ${query}`, async (side) => {
        const search = await call(side, { url: `/api/v2/map/search?${query}&per_page=1` });
        assert.equal(search.statusCode, 200, search.body);
        const searchId = (search.json() as { search_id: string }).search_id;
        // Each format of the same saved search: the text formats carry every place in export order.
        const answers: Answer[] = [];
        for (const format of formats)
          answers.push(answer(await call(side, { url: `/api/v2/map/export?search_id=${searchId}&format=${format}` })));
        return answers;
      });
    }
    const leadQueries = [
      'per_page=100',
      'per_page=13&category=restaurant',
      'per_page=100&city=m%C3%BCnchen',
      'per_page=100&city=SAN%20FRANCISCO',
      'per_page=100&country=jp',
      'per_page=100&has_phone=false',
      'per_page=100&has_website=true&min_rating=4',
      'per_page=25&page=3',
      'fields=name,phone&per_page=100',
    ];
    // Each list of leads followed by its cursor for a few pages (the last query reads one page by number):
    // every filter and page size past several page boundaries; DIALECT_PARITY_FULL=1 reads each to its end.
    const maxLeadPages = full ? Infinity : 6;
    for (const q of leadQueries) {
      await same(`leads ${q}`, async (side) => {
        const pages: Answer[] = [];
        let url: string | null = `/api/v1/user-api/places?${q}`;
        while (url && pages.length < maxLeadPages) {
          const res = await call(side, { url });
          assert.equal(res.statusCode, 200, res.body);
          pages.push(answer(res));
          const cursor = (res.json() as { next_cursor: string | null }).next_cursor;
          url = cursor && !q.includes('page=3') ? `/api/v1/user-api/places?${q}&cursor=${cursor}` : null;
        }
        return pages;
      });
    }
    await same('lead categories', async (side) => answer(await call(side, { url: '/api/v1/user-api/categories' })));
  });
});
