import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FormatRegistry, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { parityCoveredDialects } from '../../../test/helpers/databases.ts';
import type { App } from '../../app.ts';
import { loadGazetteer } from '../geo/gazetteer.ts';
import { placeFields } from '../places/places.schema.ts';
import { loadCategoryIndex } from '../taxonomy/taxonomy.ts';
import { SearchPageSchema, V1SearchResponseSchema } from './search.schema.ts';

const data = new URL('../../../../shared/data/', import.meta.url);
const extracts = ['osm/munich-center-2020.osm.pbf', 'osm/tokyo-center.osm.pbf', 'ratings/gmaps-scraper-europe-115.csv.gz'].map(
  (f) => new URL(f, data).pathname,
);

/**
 * The body matches the documented schema exactly: valid, and with no property the schema does not
 * describe (the routes write these bodies as JSON text, not through the schema's serializer).
 */
FormatRegistry.Set('date-time', (v) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(v) && !Number.isNaN(Date.parse(v)));

function assertSchema(schema: TSchema, body: unknown): void {
  const errors = [...Value.Errors(schema, body)].map((e) => `${e.path}: ${e.message}`);
  assert.deepEqual(errors, []);
  assert.deepEqual(Value.Clean(schema, structuredClone(body)), body, 'no undocumented properties');
}

function haversineM(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const r = (d: number) => (d * Math.PI) / 180;
  const a = Math.sin(r(lat2 - lat1) / 2) ** 2 + Math.cos(r(lat1)) * Math.cos(r(lat2)) * Math.sin(r(lon2 - lon1) / 2) ** 2;
  return 2 * 6_371_008.8 * Math.asin(Math.sqrt(a));
}

// One dialect, on a catalog imported once (see docs/architecture.md, Testing): test/parity/dialects.test.ts sends
// these searches, filters, sorts, errors and /v1/search to SQLite and PostgreSQL on the same real data and compares
// the answers exactly; the engine's facets against SQL's GROUP BY on both dialects are in test/parity/search-engine.test.ts.
// DIALECT_PARITY_FULL=1 runs this suite on both dialects as well.
for (const dialect of parityCoveredDialects)
  describe(`search routes on ${dialect.name}`, () => {
    let t: TestApp;
    let app: App;
    let user: TestAccount;
    const munich = () => loadGazetteer().resolveCity('München', 'DE').chosen!;

    interface Page {
      search_id: string;
      total: number;
      per_page: number;
      sort: string;
      resolved: {
        type: { slug: string; name: string; includes: string[] } | null;
        city: { chosen: { id: number; name: string; country: string }; alternatives: Array<{ id: number; country: string }> } | null;
        country: { code: string } | null;
      };
      data: Array<Record<string, unknown>>;
      links: { self: string; next: string | null };
    }

    async function search(query: string, account: TestAccount = user) {
      return app.inject({ method: 'GET', url: `/api/v2/map/search?${query}`, headers: { authorization: account.authorization } });
    }

    async function page(query: string): Promise<Page> {
      const res = await search(query);
      assert.equal(res.statusCode, 200, res.body);
      assert.match(String(res.headers['content-type']), /^application\/json; charset=utf-8$/);
      const body = res.json() as Page;
      assertSchema(SearchPageSchema, body);
      return body;
    }

    function problem(res: Awaited<ReturnType<typeof search>>, status: number) {
      assert.equal(res.statusCode, status, res.body);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      const body = res.json() as {
        code: string;
        request_id: string;
        detail: string;
        errors?: Array<{ field: string; message: string; allowed?: unknown }>;
        candidates?: unknown[];
      };
      assert.equal(body.request_id, res.headers['x-request-id']);
      assert.doesNotMatch(res.body, /at .+\.ts:\d+|SELECT |sqlite/i, 'no stack traces or SQL');
      return body;
    }

    /** Every place of a search, following links.next to the end. */
    async function all(query: string): Promise<{ first: Page; places: Array<Record<string, unknown>>; pages: number }> {
      const first = await page(query);
      const places = [...first.data];
      let next = first.links.next;
      let pages = 1;
      while (next) {
        const res = await app.inject({ method: 'GET', url: next, headers: { authorization: user.authorization } });
        assert.equal(res.statusCode, 200, res.body);
        const p = res.json() as Page;
        assert.equal(p.search_id, first.search_id);
        assert.equal(p.total, first.total);
        places.push(...p.data);
        next = p.links.next;
        pages++;
      }
      return { first, places, pages };
    }

    before(async () => {
      // One read worker: the tests go through the worker pool, as production does.
      t = await buildTestApp({ dialect: dialect.name, files: extracts, env: { DB_READ_WORKERS: '1' } });
      app = t.app;
      user = await createAccountWithToken(t.db, { scopes: ['search'] });
    });

    after(async () => {
      await t.close();
    });

    describe('GET /api/v2/map/search', () => {
      test('finds the restaurants of a city with the exact total, the chosen city and the category subtree', async () => {
        const subtree = loadCategoryIndex().subtree('restaurant');
        const expected = await t.db.kysely
          .selectFrom('places')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('city_id', '=', munich().id)
          .where('category', 'in', subtree)
          // Open places only: the extract has restaurants marked disused or vacant.
          .where('closed_at', 'is', null)
          .executeTakeFirstOrThrow();
        const p = await page('type=restaurant&city=München');
        assert.ok(Number(expected.n) > 20);
        assert.equal(p.total, Number(expected.n));
        assert.match(p.search_id, /^srch_[a-z2-7]{16}$/);
        assert.equal(p.resolved.type?.slug, 'restaurant');
        assert.deepEqual(p.resolved.type?.includes, subtree);
        assert.equal(p.resolved.city?.chosen.id, munich().id);
        assert.equal(p.data.length, 20);
        for (const place of p.data) assert.ok(subtree.includes(String(place.category)), String(place.category));
        for (const field of placeFields) assert.ok(field in p.data[0]!, field);
      });

      test('understands a type in another language and a city by its exonym', async () => {
        const german = await page('type=Tierarzt&city=Munich');
        assert.equal(german.resolved.type?.slug, 'veterinary');
        assert.ok(german.total > 0);
        for (const place of german.data) assert.equal(place.category, 'veterinary');
        const french = await page('type=opticien&city=M%C3%BCnchen');
        assert.equal(french.resolved.type?.slug, 'optician');
        assert.ok(french.total > 0);
        const local = await page('type=veterinary&city=M%C3%BCnchen');
        assert.equal(local.total, german.total);
      });

      test('names the Accept-Language name of the resolved type', async () => {
        const res = await app.inject({
          method: 'GET',
          url: '/api/v2/map/search?type=veterinary&city=Munich',
          headers: { authorization: user.authorization, 'accept-language': 'de-DE,de;q=0.9' },
        });
        assert.equal(res.statusCode, 200);
        assert.equal((res.json() as Page).resolved.type?.name, loadCategoryIndex().name('veterinary', 'de'));
      });

      test('resolves an ambiguous city to the most populous one and lists the alternatives, or to the one in the given country', async () => {
        const paris = await page('city=Paris');
        assert.equal(paris.resolved.city?.chosen.country, 'FR');
        assert.ok(paris.resolved.city!.alternatives.some((c) => c.country === 'US'));
        const texas = await page('city=Paris&country=US');
        assert.equal(texas.resolved.city?.chosen.country, 'US');
        assert.equal(texas.resolved.country?.code, 'US');
        assert.equal(texas.resolved.city?.chosen.id, loadGazetteer().resolveCity('Paris', 'US').chosen!.id);
      });

      test('answers 400 with the closest candidates for an unknown city', async () => {
        const body = problem(await search('city=Munchn'), 400);
        assert.equal(body.code, 'unknown_value');
        assert.equal(body.errors?.[0]?.field, 'querystring.city');
        assert.ok(
          (body.candidates as Array<{ name: string }>).some((c) => c.name === 'Munich'),
          JSON.stringify(body.candidates),
        );
      });

      test('answers 400 with the closest candidates for an unknown type', async () => {
        const body = problem(await search('type=restorant&city=Munich'), 400);
        assert.equal(body.code, 'unknown_value');
        assert.equal(body.errors?.[0]?.field, 'querystring.type');
        assert.ok((body.candidates as Array<{ slug: string }>).some((c) => c.slug === 'restaurant'));
      });

      test('answers 400 for an unknown country', async () => {
        const body = problem(await search('city=Paris&country=Atlantis'), 400);
        assert.equal(body.errors?.[0]?.field, 'querystring.country');
      });

      test('pages to the end with keyset cursors: every place once, as many as the total, in order', async () => {
        const { first, places, pages } = await all('city=Munich&sort=name&per_page=100');
        assert.ok(first.total > 1000);
        assert.equal(places.length, first.total);
        assert.equal(pages, Math.ceil(first.total / 100));
        assert.equal(new Set(places.map((p) => p.id)).size, places.length);
        for (let i = 1; i < places.length; i++)
          assert.ok(
            String(places[i - 1]!.name) <= String(places[i]!.name),
            `${String(places[i - 1]!.name)} before ${String(places[i]!.name)}`,
          );
      });

      test('sorts by rating and review count, highest first', async () => {
        for (const sort of ['rating', 'review_count'] as const) {
          const { places, first } = await all(`query=a&sort=${sort}&per_page=50&fields=id,${sort}`);
          assert.equal(places.length, first.total);
          const values = places.map((p) => (p[sort] as number | null) ?? -1);
          for (let i = 1; i < values.length; i++) assert.ok(values[i - 1]! >= values[i]!, `${sort} ${values[i - 1]} then ${values[i]}`);
          assert.ok(values[0]! > 0);
        }
      });

      test('filters on minimum rating', async () => {
        const { places, first } = await all('query=a&min_rating=4.5&per_page=100&fields=rating');
        assert.ok(first.total > 0);
        const rated = await t.db.kysely
          .selectFrom('places')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('rating', '>=', 4.5)
          .where('closed_at', 'is', null)
          .executeTakeFirstOrThrow();
        assert.ok(first.total <= Number(rated.n));
        for (const p of places) assert.ok((p.rating as number) >= 4.5);
      });

      test('filters on having a phone, a website and an email, and on not having them', async () => {
        const everything = await page(`city=Munich&per_page=1`);
        for (const field of ['phone', 'website', 'email'] as const) {
          const yes = await all(`city=Munich&has_${field}=true&per_page=100&fields=${field}`);
          const no = await all(`city=Munich&has_${field}=false&per_page=100&fields=${field}`);
          assert.ok(yes.first.total > 0, field);
          assert.equal(yes.first.total + no.first.total, everything.total, field);
          for (const p of yes.places) assert.ok(typeof p[field] === 'string' && p[field] !== '', field);
          for (const p of no.places) assert.ok(p[field] === null || p[field] === '', field);
        }
      });

      test('finds places near a point within the radius, nearest first with their distance', async () => {
        const [lat, lon] = [48.1374, 11.5755];
        const { places, first } = await all(`near=${lat},${lon}&radius=300&sort=distance&per_page=100&fields=lat,lon`);
        assert.ok(first.total > 10);
        let previous = 0;
        for (const p of places) {
          const d = haversineM(lat, lon, p.lat as number, p.lon as number);
          assert.ok(d <= 300.5, `${d} m`);
          assert.ok(Math.abs((p.distance_m as number) - d) <= 1);
          assert.ok((p.distance_m as number) >= previous);
          previous = p.distance_m as number;
        }
        const wider = await page(`near=${lat},${lon}&radius=600&per_page=1`);
        assert.ok(wider.total > first.total);
      });

      test('finds places inside a bounding box', async () => {
        const box = [11.57, 48.135, 11.58, 48.14];
        const { places, first } = await all(`bbox=${box.join(',')}&per_page=100&fields=lat,lon`);
        const expected = await t.db.kysely
          .selectFrom('places')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('lon', '>=', box[0]!)
          .where('lat', '>=', box[1]!)
          .where('lon', '<=', box[2]!)
          .where('lat', '<=', box[3]!)
          .where('closed_at', 'is', null)
          .executeTakeFirstOrThrow();
        assert.equal(first.total, Number(expected.n));
        assert.ok(first.total > 0);
        for (const p of places)
          assert.ok(
            (p.lon as number) >= box[0]! && (p.lat as number) >= box[1]! && (p.lon as number) <= box[2]! && (p.lat as number) <= box[3]!,
          );
      });

      test('matches free text on names regardless of case and accents, in any script, and with typos', async () => {
        const exact = await page('query=ratskeller&city=Munich&fields=name');
        assert.ok(exact.data.some((p) => p.name === 'Ratskeller'));
        const typo = await page('query=Ratskelelr&city=Munich&fields=name');
        assert.ok(
          typo.data.some((p) => p.name === 'Ratskeller'),
          JSON.stringify(typo.data),
        );
        const [accented] = await t.db.kysely
          .selectFrom('places')
          .select('name')
          .where('name', 'like', '%ä%')
          .where('source', '=', 'osm')
          .limit(1)
          .execute();
        const word = accented!.name.split(/\s+/).find((w) => w.includes('ä'))!;
        const folded = await page(`query=${encodeURIComponent(word.replaceAll('ä', 'a').toUpperCase())}&per_page=100&fields=name`);
        assert.ok(
          folded.data.some((p) => p.name === accented!.name),
          `${word} → ${accented!.name}`,
        );
        const ramen = await page(`query=${encodeURIComponent('ラーメン')}&per_page=100&fields=name`);
        const expected = await t.db.kysely
          .selectFrom('places')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('name', 'like', '%ラーメン%')
          .where('closed_at', 'is', null)
          .executeTakeFirstOrThrow();
        assert.ok(ramen.total >= Number(expected.n) && Number(expected.n) > 0);
        for (const p of ramen.data) assert.ok(String(p.name).length > 0);
      });

      test('narrows each place to the fields asked for', async () => {
        const p = await page('city=Munich&fields=name,phone,rating&per_page=5');
        for (const place of p.data) assert.deepEqual(Object.keys(place).sort(), ['name', 'phone', 'rating']);
      });

      test('rejects unknown fields with the allowed list', async () => {
        const body = problem(await search('city=Munich&fields=name,fax'), 400);
        assert.equal(body.errors?.[0]?.field, 'querystring.fields');
        assert.deepEqual(body.errors?.[0]?.allowed, placeFields);
      });

      test('rejects per_page outside 1–100 with the allowed range', async () => {
        for (const n of [0, 101]) {
          const body = problem(await search(`city=Munich&per_page=${n}`), 400);
          assert.equal(body.errors?.[0]?.field, 'querystring.per_page');
          assert.deepEqual(body.errors?.[0]?.allowed, { minimum: 1, maximum: 100 });
        }
      });

      test('rejects unknown parameters and a sort it does not know, naming what is allowed', async () => {
        const body = problem(await search('city=Munich&colour=red&sort=popularity'), 400);
        const fields = body.errors!.map((e) => e.field).sort();
        assert.deepEqual(fields, ['querystring.colour', 'querystring.sort']);
        assert.deepEqual(body.errors!.find((e) => e.field === 'querystring.sort')!.allowed, [
          'relevance',
          'rating',
          'review_count',
          'distance',
          'name',
          'lead_score',
        ]);
      });

      test('rejects sort=distance without near, a radius without near, and a search without criteria', async () => {
        assert.equal(problem(await search('city=Munich&sort=distance'), 400).errors?.[0]?.field, 'querystring.sort');
        assert.equal(problem(await search('city=Munich&radius=100'), 400).errors?.[0]?.field, 'querystring.radius');
        assert.equal(problem(await search('per_page=5'), 400).errors?.[0]?.field, 'querystring');
      });

      test('rejects a bounding box in the wrong order or out of range, and a malformed point', async () => {
        assert.match(problem(await search('bbox=11.6,48.1,11.5,48.2'), 400).detail, /ordered minLon,minLat,maxLon,maxLat/);
        assert.equal(problem(await search('bbox=11.5,48.1,11.6'), 400).errors?.[0]?.field, 'querystring.bbox');
        assert.equal(problem(await search('bbox=190,48.1,191,48.2'), 400).errors?.[0]?.field, 'querystring.bbox');
        assert.equal(problem(await search('near=91,11'), 400).errors?.[0]?.field, 'querystring.near');
        assert.equal(problem(await search('near=north'), 400).errors?.[0]?.field, 'querystring.near');
      });

      test('rejects a cursor it did not issue, and search parameters sent with a cursor', async () => {
        assert.equal(problem(await search('cursor=bm90LWEtY3Vyc29y'), 400).errors?.[0]?.field, 'querystring.cursor');
        const first = await page('city=Munich&per_page=2');
        const cursor = new URL(first.links.next!, 'http://x').searchParams.get('cursor')!;
        assert.equal(problem(await search(`cursor=${cursor}&city=Munich`), 400).errors?.[0]?.field, 'querystring.city');
      });

      test('saves every search for the caller: another account cannot continue it', async () => {
        const first = await page('city=Munich&per_page=2');
        const other = await createAccountWithToken(t.db, { scopes: ['search'] });
        const res = await app.inject({ method: 'GET', url: first.links.next!, headers: { authorization: other.authorization } });
        assert.equal(problem(res, 404).code, 'not_found');
        const row = await t.db.kysely
          .selectFrom('searches' as never)
          .selectAll()
          .where('public_id' as never, '=', first.search_id as never)
          .executeTakeFirstOrThrow();
        assert.equal(Number((row as { account_id: number }).account_id), user.accountId);
        assert.equal((row as { total: number }).total, first.total);
      });
    });

    describe('GET /api/v2/map/facets', () => {
      const get = (url: string) => app.inject({ method: 'GET', url, headers: { authorization: user.authorization } });

      test('counts the restaurants with a phone per city of Germany exactly, most first', async () => {
        const subtree = loadCategoryIndex().subtree('restaurant');
        const expected = await t.db.kysely
          .selectFrom('places')
          .select(['city_id', (eb) => eb.fn.countAll<number>().as('n')])
          .where('country_code', '=', 'DE')
          .where('category', 'in', subtree)
          .where('closed_at', 'is', null)
          .where('phone', 'is not', null)
          .where('phone', '!=', '')
          .where('city_id', 'is not', null)
          .groupBy('city_id')
          .execute();
        const res = await get('/api/v2/map/facets?type=restaurant&country=DE&has_phone=true&by=city');
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json() as {
          by: string;
          total: number;
          values: Array<{ value: number; count: number; name?: string; country?: string }>;
        };
        assert.equal(body.by, 'city');
        assert.ok(body.values.length > 0);
        // Each city with its name and country, from the gazetteer.
        assert.ok(
          body.values.some((v) => v.name === 'Munich' || v.name === 'München'),
          JSON.stringify(body.values.slice(0, 3)),
        );
        assert.ok(body.values.every((v) => typeof v.name === 'string' && v.country === 'DE'));
        assert.deepEqual(
          new Map(body.values.map((v) => [v.value, v.count])),
          new Map(expected.map((r) => [Number(r.city_id), Number(r.n)])),
        );
        assert.equal(
          body.total,
          expected.reduce((a, r) => a + Number(r.n), 0),
        );
        assert.deepEqual(
          body.values.map((v) => v.count),
          body.values.map((v) => v.count).sort((a, b) => b - a),
        );
      });

      test('answers 400 problem+json naming the allowed values of a bad `by`, and a missing criterion', async () => {
        const res = await get('/api/v2/map/facets?country=DE&by=colour');
        assert.equal(res.statusCode, 400);
        assert.match(res.headers['content-type'] as string, /application\/problem\+json/);
        for (const value of ['category', 'city', 'country', 'has_phone', 'has_email', 'has_website'])
          assert.match(res.body, new RegExp(value));
        const none = await get('/api/v2/map/facets?by=city');
        assert.equal(none.statusCode, 400);
        assert.match(none.body, /at least one of/);
      });
    });

    describe('/v1/search', () => {
      const json = (payload: string) =>
        ({ 'content-type': 'application/json', authorization: user.authorization }) as Record<string, string> & { payload?: string };

      test('answers total and data for a JSON body on GET', async () => {
        const res = await app.inject({
          method: 'GET',
          url: '/v1/search',
          headers: json(''),
          payload: JSON.stringify({ query: 'Ratskeller', city: 'München' }),
        });
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json() as { total: number; data: Array<{ name: string; phone: string | null; rating: number | null }> };
        assert.match(String(res.headers['content-type']), /^application\/json; charset=utf-8$/);
        assertSchema(V1SearchResponseSchema, body);
        assert.ok(body.total >= 1);
        assert.equal(body.data.length, Math.min(body.total, 20));
        assert.ok(body.data.some((p) => p.name === 'Ratskeller' && p.phone !== null));
        for (const p of body.data) assert.ok('rating' in p && 'phone' in p);
      });

      test('answers the same for query parameters and for POST', async () => {
        const viaQuery = await app.inject({
          method: 'GET',
          url: '/v1/search?query=Ratskeller&city=M%C3%BCnchen',
          headers: { authorization: user.authorization },
        });
        const viaPost = await app.inject({
          method: 'POST',
          url: '/v1/search',
          headers: json(''),
          payload: { query: 'Ratskeller', city: 'München' },
        });
        assert.equal(viaQuery.statusCode, 200, viaQuery.body);
        assert.equal(viaPost.statusCode, 200, viaPost.body);
        assert.deepEqual(viaQuery.json(), viaPost.json());
      });

      test('tolerates a typo, folds diacritics and finds non-Latin names', async () => {
        const typo = await app.inject({
          method: 'POST',
          url: '/v1/search',
          headers: json(''),
          payload: { query: 'Ratskelelr', city: 'Munich' },
        });
        assert.ok((typo.json() as { data: Array<{ name: string }> }).data.some((p) => p.name === 'Ratskeller'));
        const city = await app.inject({
          method: 'POST',
          url: '/v1/search',
          headers: json(''),
          payload: { query: 'ratskeller', city: 'Munchen' },
        });
        assert.ok((city.json() as { total: number }).total >= 1, city.body);
        const [tokyoName] = await t.db.kysely.selectFrom('places').select('name').where('name', 'like', '%寿司%').limit(1).execute();
        const jp = await app.inject({ method: 'POST', url: '/v1/search', headers: json(''), payload: { query: '寿司' } });
        assert.ok(
          (jp.json() as { data: Array<{ name: string }> }).data.some((p) => p.name.includes('寿司')),
          tokyoName?.name,
        );
      });

      test('answers 400 saying what was expected for a missing or malformed body', async () => {
        const missing = problem(await app.inject({ method: 'POST', url: '/v1/search', headers: json('') }), 400);
        assert.match(missing.detail + JSON.stringify(missing.errors), /body/i);
        const empty = problem(await app.inject({ method: 'GET', url: '/v1/search', headers: { authorization: user.authorization } }), 400);
        assert.match(empty.detail, /query, city, type/);
        const malformed = problem(await app.inject({ method: 'GET', url: '/v1/search', headers: json(''), payload: '{"query": ' }), 400);
        assert.equal(malformed.errors?.[0]?.field, 'body');
        const malformedPost = problem(
          await app.inject({ method: 'POST', url: '/v1/search', headers: json(''), payload: '{"query": ' }),
          400,
        );
        assert.equal(malformedPost.code, 'validation_failed');
        const unknown = problem(await app.inject({ method: 'GET', url: '/v1/search', headers: json(''), payload: '{"q": "x"}' }), 400);
        assert.equal(unknown.errors?.[0]?.field, 'body.q');
        const notJson = problem(
          await app.inject({
            method: 'GET',
            url: '/v1/search',
            headers: { authorization: user.authorization, 'content-type': 'text/plain' },
            payload: 'query=x',
          }),
          415,
        );
        assert.equal(notJson.code, 'unsupported_media_type');
      });
    });

    describe('over a real socket', () => {
      test('serves a search, its next page and a GET with a JSON body to fetch', async () => {
        // The suite's own app on a socket (closed with it in `after`): a second server would build its read
        // thread and search index again for the same catalog.
        await app.listen({ port: 0, host: '127.0.0.1' });
        const address = app.server.address() as { port: number };
        const base = `http://127.0.0.1:${address.port}`;
        const headers = { authorization: user.authorization };
        const res = await fetch(`${base}/api/v2/map/search?type=cafe&city=Munich&per_page=3`, { headers });
        assert.equal(res.status, 200);
        const first = (await res.json()) as Page;
        assert.equal(first.data.length, 3);
        const next = await fetch(`${base}${first.links.next}`, { headers });
        assert.equal(next.status, 200);
        const second = (await next.json()) as Page;
        assert.equal(second.total, first.total);
        assert.notDeepEqual(
          second.data.map((p) => p.id),
          first.data.map((p) => p.id),
        );
        // fetch refuses a body on GET; node:http sends one.
        const { request } = await import('node:http');
        const body = JSON.stringify({ query: 'ratskeller', city: 'München' });
        const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
          const req = request(
            `${base}/v1/search`,
            { method: 'GET', headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
            (r) => {
              let text = '';
              r.setEncoding('utf8')
                .on('data', (c: string) => (text += c))
                .on('end', () => resolve({ status: r.statusCode ?? 0, text }));
            },
          );
          req.on('error', reject);
          req.end(body);
        });
        assert.equal(answer.status, 200, answer.text);
        assert.ok((JSON.parse(answer.text) as { total: number }).total >= 1);
      });
    });

    describeAuthSuite(
      {
        method: 'GET',
        url: '/api/v2/map/search?type=cafe&city=Munich&per_page=1',
        scope: 'search',
        foreignResource: async ({ app: a, owner }) => {
          const res = await a.inject({
            method: 'GET',
            url: '/api/v2/map/search?city=Munich&per_page=1',
            headers: { authorization: owner.authorization },
          });
          return { url: (res.json() as Page).links.next! };
        },
      },
      () => ({ app, db: t.db }),
    );
    describeAuthSuite({ method: 'GET', url: '/v1/search?query=ratskeller', scope: 'search' }, () => ({ app, db: t.db }));
    describeAuthSuite(
      {
        method: 'POST',
        url: '/v1/search',
        scope: 'search',
        payload: { query: 'ratskeller' },
        headers: { 'content-type': 'application/json' },
      },
      () => ({ app, db: t.db }),
    );
  });
