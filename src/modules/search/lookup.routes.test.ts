import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FormatRegistry, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import { testPlaceRecord, writePlaces } from '../../../test/helpers/places.ts';
import type { App } from '../../app.ts';
import { LookupResponseSchema, V1SearchResponseSchema } from './search.schema.ts';

FormatRegistry.Set('date-time', (v) => !Number.isNaN(Date.parse(v)));

function assertSchema(schema: TSchema, body: unknown): void {
  assert.deepEqual(
    [...Value.Errors(schema, body)].map((e) => `${e.path}: ${e.message}`),
    [],
  );
  assert.deepEqual(Value.Clean(schema, structuredClone(body)), body, 'no undocumented properties');
}

/** Places as sources write them: a phone, a website, an email, a street and number, in Munich, Porto and London. */
const records = [
  testPlaceRecord('test', 'bayerischer-hof', {
    name: 'Hotel Bayerischer Hof',
    category: 'hotel',
    categories: ['hotel'],
    phone: '+49 89 21200',
    phone_e164: '+498921200',
    website: 'https://www.bayerischerhof.de/en/',
    website_domain: 'bayerischerhof.de',
    email: 'Info@BayerischerHof.de',
    street: 'Promenadeplatz',
    housenumber: '2-6',
    postcode: '80333',
  }),
  testPlaceRecord('test', 'same-domain', {
    name: 'Bayerischer Hof Spa',
    website: 'http://spa.bayerischerhof.de',
    website_domain: 'bayerischerhof.de',
  }),
  testPlaceRecord('test', 'hauptstrasse', { name: 'Bäckerei Sonne', street: 'Leopoldstraße', housenumber: '12a', postcode: '80802' }),
  testPlaceRecord('test', 'porto', {
    name: 'Café Majestic',
    phone: '222 003 887',
    phone_e164: '+351222003887',
    street: 'Rua de Santa Catarina',
    housenumber: '112',
    postcode: '4000-442',
    city: 'Porto',
    city_id: 2735943,
    country_code: 'PT',
    lat: 41.147,
    lon: -8.606,
  }),
  testPlaceRecord('test', 'overture-style', {
    name: 'Pearl Street Books',
    street: '1234 Pearl St',
    city: 'Boulder',
    city_id: 5574991,
    country_code: 'US',
    lat: 40.018,
    lon: -105.279,
  }),
  testPlaceRecord('test', 'enriched', {
    name: 'Schreinerei Holz',
    website: 'https://holz-muenchen.de',
    website_domain: 'holz-muenchen.de',
  }),
  testPlaceRecord('test', 'closed', { name: 'Altes Café', phone_e164: '+49891234567', phone: '089 1234567', closed: 1 }),
];

interface Lookup {
  total: number;
  data: Array<{ id: string; name: string }>;
  resolved: Record<string, { kind: string; places: number; e164?: string; domain?: string }>;
}

for (const dialect of dialects)
  describe(`lookup on ${dialect.name}`, () => {
    let t: TestApp;
    let app: App;
    let user: TestAccount;

    before(async () => {
      t = await buildTestApp({
        dialect: dialect.name,
        env: { SEARCH_ENGINE_POLL_MS: '20' },
        prepare: async (db) => {
          await writePlaces(db, records);
          // What the website crawler found: a phone and an email that count while the website is still the place's.
          await db.kysely
            .updateTable('places')
            .set({
              enrich_basis: 'https://holz-muenchen.de',
              found_phone: '+4989555111',
              found_email: 'werkstatt@holz-muenchen.de',
              found_contacts: JSON.stringify({
                site: 'https://holz-muenchen.de',
                emails: [
                  {
                    address: 'werkstatt@holz-muenchen.de',
                    page: 'https://holz-muenchen.de/kontakt',
                    fetched_at: '2026-11-01T00:00:00Z',
                    own_domain: true,
                    verdict: 'ok',
                  },
                ],
                phones: [{ e164: '+4989555111', page: 'https://holz-muenchen.de/kontakt', fetched_at: '2026-11-01T00:00:00Z' }],
                socials: [],
                contact_url: null,
              }),
            })
            .where('source_id', '=', 'enriched')
            .execute();
        },
      });
      app = t.app;
      user = await createAccountWithToken(t.db, { scopes: ['search', 'suppressions:write'] });
      // The read threads start on the first read (seconds under tsx on a busy machine): not inside a test's time budget.
      await app.inject({ method: 'GET', url: '/v1/search?query=warm', headers: { authorization: user.authorization } });
    });

    after(async () => {
      await t?.close();
    });

    const lookup = async (qs: string, who: TestAccount = user) => {
      const res = await app.inject({ method: 'GET', url: `/api/v2/lookup?${qs}`, headers: { authorization: who.authorization } });
      return res;
    };
    const names = (body: Lookup) => body.data.map((p) => p.name);

    test('finds a place by its phone written internationally, with 00, or nationally with its country', async () => {
      for (const phone of ['+49 89 21200', '0049 89 21200', '+49 (0) 89 212 00']) {
        const res = await lookup(`phone=${encodeURIComponent(phone)}`);
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json() as Lookup;
        assertSchema(LookupResponseSchema, body);
        assert.deepEqual(names(body), ['Hotel Bayerischer Hof'], phone);
        assert.deepEqual(body.resolved.phone, { kind: 'phone', input: phone, e164: '+498921200', places: 1 });
      }
      const national = (await lookup('phone=222%20003%20887&country=PT')).json() as Lookup;
      assert.deepEqual(names(national), ['Café Majestic']);
    });

    test('finds places by registrable domain, whatever the URL around it', async () => {
      for (const domain of ['www.bayerischerhof.de', 'https://bayerischerhof.de/', 'BAYERISCHERHOF.DE', 'shop.bayerischerhof.de/x?y=1']) {
        const body = (await lookup(`domain=${encodeURIComponent(domain)}`)).json() as Lookup;
        assert.deepEqual(names(body).sort(), ['Bayerischer Hof Spa', 'Hotel Bayerischer Hof'], domain);
        assert.equal(body.resolved.domain?.domain, 'bayerischerhof.de');
      }
    });

    test('finds a place by email, case ignored, then the places of its domain', async () => {
      const body = (await lookup('email=INFO%40BAYERISCHERHOF.DE')).json() as Lookup;
      assert.deepEqual(names(body), ['Hotel Bayerischer Hof', 'Bayerischer Hof Spa']);
    });

    test('counts what the website crawler found as the sources do, and only while it is still valid', async () => {
      assert.deepEqual(names((await lookup('phone=%2B49%2089%20555111')).json() as Lookup), ['Schreinerei Holz']);
      assert.deepEqual(names((await lookup('email=werkstatt%40holz-muenchen.de')).json() as Lookup), ['Schreinerei Holz']);
    });

    test('finds a place by street and number, abbreviations and folding understood', async () => {
      const cases: Array<[string, string]> = [
        ['Promenadeplatz 2, München', 'Hotel Bayerischer Hof'],
        ['Promenadepl. 2-6, 80333 München', 'Hotel Bayerischer Hof'],
        ['Leopoldstr. 12 a', 'Bäckerei Sonne'],
        ['LEOPOLDSTRASSE 12A, Munich', 'Bäckerei Sonne'],
        ['R. Santa Catarina, 112, Porto', 'Café Majestic'],
        ['Rua de Santa Catarina 112', 'Café Majestic'],
        ['1234 Pearl Street, Boulder', 'Pearl Street Books'],
      ];
      for (const [address, name] of cases) {
        const body = (await lookup(`address=${encodeURIComponent(address)}`)).json() as Lookup;
        assert.deepEqual(names(body), [name], address);
        assert.equal(body.resolved.address?.kind, 'address');
      }
    });

    test('several contacts given: the places carrying all of them', async () => {
      assert.deepEqual(names((await lookup('domain=bayerischerhof.de&phone=%2B498921200')).json() as Lookup), ['Hotel Bayerischer Hof']);
      assert.equal(((await lookup('domain=bayerischerhof.de&phone=%2B351222003887')).json() as Lookup).total, 0);
    });

    test('a closed place and an unknown contact find nothing', async () => {
      const closed = (await lookup('phone=%2B49891234567')).json() as Lookup;
      assert.equal(closed.total, 0);
      assert.equal(closed.resolved.phone?.places, 0);
      assert.equal(((await lookup('domain=nowhere.example')).json() as Lookup).total, 0);
    });

    test('bad input answers 400 naming the field; nothing given names the allowed fields', async () => {
      const cases: Array<[string, string]> = [
        ['phone=089%2021200', 'querystring.phone'],
        ['phone=12&country=DE', 'querystring.phone'],
        ['domain=not%20a%20domain', 'querystring.domain'],
        ['email=nobody', 'querystring.email'],
        ['address=Promenadeplatz', 'querystring.address'],
        ['phone=%2B498921200&country=Atlantis', 'querystring.country'],
        ['nickname=x', 'querystring.nickname'],
      ];
      for (const [qs, field] of cases) {
        const res = await lookup(qs);
        assert.equal(res.statusCode, 400, qs);
        assert.match(res.headers['content-type'] as string, /problem\+json/);
        assert.ok(JSON.stringify(res.json().errors).includes(field), `${qs}: ${res.body}`);
      }
      const none = await lookup('country=DE');
      assert.equal(none.statusCode, 400);
      assert.deepEqual(none.json().errors[0].allowed, ['phone', 'domain', 'email', 'address', 'country', 'per_page', 'fields']);
    });

    test('a suppressed phone, domain or email is never found by lookup', async () => {
      const other = await createAccountWithToken(t.db, { scopes: ['search', 'suppressions:write'] });
      const add = await app.inject({
        method: 'POST',
        url: '/api/v1/user-api/suppressions',
        headers: { authorization: other.authorization },
        payload: { entries: ['+49 89 21200', 'holz-muenchen.de'], country: 'DE' },
      });
      assert.equal(add.statusCode, 200, add.body);
      assert.equal(((await lookup('phone=%2B498921200', other)).json() as Lookup).total, 0);
      assert.deepEqual(names((await lookup('domain=bayerischerhof.de', other)).json() as Lookup), ['Bayerischer Hof Spa']);
      assert.equal(((await lookup('phone=%2B4989555111', other)).json() as Lookup).total, 0);
      // Another account's list changes nothing for this one.
      assert.equal(((await lookup('phone=%2B498921200')).json() as Lookup).total, 1);
    });

    test('follows the catalog: a place written after the index was built is found, a changed phone no longer', async () => {
      await writePlaces(t.db, [
        testPlaceRecord('test', 'new', { name: 'Neue Bar', phone_e164: '+4989777888', phone: '089 777888' }),
        testPlaceRecord('test', 'porto', { ...records[3], phone_e164: '+351222000000', phone: '222 000 000' }),
      ]);
      const deadline = Date.now() + 10_000;
      for (;;) {
        const found = (await lookup('phone=%2B4989777888')).json() as Lookup;
        const old = (await lookup('phone=%2B351222003887')).json() as Lookup;
        if ((found.total === 1 && old.total === 0) || Date.now() > deadline) {
          assert.deepEqual(names(found), ['Neue Bar']);
          assert.equal(old.total, 0);
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.deepEqual(names((await lookup('phone=%2B351222000000')).json() as Lookup), ['Café Majestic']);
    });

    test('the search box reads a phone, domain, email or address and answers the places carrying it first', async () => {
      const cases: Array<[string, string, string]> = [
        ['query=089%2021200&city=M%C3%BCnchen', 'Hotel Bayerischer Hof', 'phone'],
        ['query=%2B49%2089%2021200', 'Hotel Bayerischer Hof', 'phone'],
        ['query=089%2021200', 'Hotel Bayerischer Hof', 'phone'],
        ['query=https%3A%2F%2Fwww.bayerischerhof.de%2F', 'Hotel Bayerischer Hof', 'domain'],
        ['query=INFO%40BAYERISCHERHOF.DE', 'Hotel Bayerischer Hof', 'email'],
        ['query=Promenadeplatz%202%2C%20M%C3%BCnchen', 'Hotel Bayerischer Hof', 'address'],
      ];
      for (const [qs, name, kind] of cases) {
        const res = await app.inject({ method: 'GET', url: `/v1/search?${qs}`, headers: { authorization: user.authorization } });
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json();
        assertSchema(V1SearchResponseSchema, body);
        assert.equal(body.data[0]?.name, name, qs);
        assert.equal(body.resolved.query.kind, kind, qs);
      }
      // The rest of the text is searched by name after them.
      const mixed = await app.inject({
        method: 'POST',
        url: '/v1/search',
        headers: { authorization: user.authorization },
        payload: { query: 'Majestic +49 89 21200' },
      });
      assert.deepEqual(
        mixed.json().data.map((p: { name: string }) => p.name),
        ['Hotel Bayerischer Hof', 'Café Majestic'],
      );
      const saved = await app.inject({
        method: 'GET',
        url: '/api/v2/map/search?query=bayerischerhof.de',
        headers: { authorization: user.authorization },
      });
      assert.equal(saved.json().total, 2);
      assert.equal(saved.json().resolved.query.domain, 'bayerischerhof.de');
      // A contact nobody carries: the whole text by name, as before.
      const none = await app.inject({ method: 'GET', url: '/v1/search?query=Sonne%2012', headers: { authorization: user.authorization } });
      assert.equal(none.json().resolved.query?.places ?? 0, 0);
    });

    describeAuthSuite({ method: 'GET', url: '/api/v2/lookup?domain=bayerischerhof.de', scope: 'search' }, () => ({ app, db: t.db }));
  });
