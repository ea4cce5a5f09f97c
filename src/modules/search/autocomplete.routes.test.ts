import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import { testPlaceRecord, writePlaces } from '../../../test/helpers/places.ts';
import type { App } from '../../app.ts';
import { type AutocompleteResponse, AutocompleteResponseSchema } from './autocomplete.schema.ts';

function assertSchema(schema: TSchema, body: unknown): void {
  assert.deepEqual(
    [...Value.Errors(schema, body)].map((e) => `${e.path}: ${e.message}`),
    [],
  );
  assert.deepEqual(Value.Clean(schema, structuredClone(body)), body, 'no undocumented properties');
}

const boulder = { city: 'Boulder', city_id: 5574991, country_code: 'US', lat: 40.018, lon: -105.279 };
const koeln = { city: 'Köln', city_id: 2886242, country_code: 'DE', lat: 50.94, lon: 6.96 };
const tokyo = { city: 'Tokyo', city_id: 1850147, country_code: 'JP', lat: 35.69, lon: 139.7 };

/** A chain in two countries, names sharing a prefix, accents, an unspaced script, a closed place, two cities. */
const records = [
  ...[1, 2, 3].map((i) =>
    testPlaceRecord('test', `sb-de-${i}`, { name: 'Starbucks', category: 'cafe', categories: ['cafe'], review_count: i }),
  ),
  ...[1, 2].map((i) => testPlaceRecord('test', `sb-us-${i}`, { name: 'STARBUCKS', category: 'cafe', categories: ['cafe'], ...boulder })),
  ...[1, 2, 3, 4].map((i) => testPlaceRecord('test', `sl-${i}`, { name: 'Starlight Bar', category: 'bar', categories: ['bar'], ...koeln })),
  testPlaceRecord('test', 'star-kebab', { name: 'Star Kebab' }),
  testPlaceRecord('test', 'stern', { name: 'Café Stern', category: 'cafe', categories: ['cafe'] }),
  testPlaceRecord('test', 'napoli', { name: 'Pizzeria Napoli', category: 'restaurant_italian', categories: ['restaurant_italian'] }),
  testPlaceRecord('test', 'doutor', { name: 'ドトール新宿店', category: 'cafe', categories: ['cafe'], ...tokyo }),
  testPlaceRecord('test', 'zahn', { name: 'Praxis Weiß', category: 'dentist', categories: ['dentist'] }),
  ...[1, 2, 3, 4, 5, 6].map((i) => testPlaceRecord('test', `closed-${i}`, { name: 'Stardust Closed', closed: 1 })),
];

for (const dialect of dialects)
  describe(`autocomplete on ${dialect.name}`, () => {
    let t: TestApp;
    let app: App;
    let user: TestAccount;

    before(async () => {
      t = await buildTestApp({ dialect: dialect.name, env: { SEARCH_ENGINE_POLL_MS: '20' }, prepare: (db) => writePlaces(db, records) });
      app = t.app;
      user = await createAccountWithToken(t.db, { scopes: ['search'] });
    });

    after(async () => {
      await t?.close();
    });

    const suggest = async (qs: string, headers: Record<string, string> = {}) =>
      app.inject({ method: 'GET', url: `/api/v2/autocomplete?${qs}`, headers: { authorization: user.authorization, ...headers } });
    const ok = async (qs: string, headers: Record<string, string> = {}) => {
      const res = await suggest(qs, headers);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json() as AutocompleteResponse;
      assertSchema(AutocompleteResponseSchema, body);
      return body;
    };

    test('suggests names by a prefix of any word, most places first, counting open places only', async () => {
      const body = await ok('q=sta');
      assert.deepEqual(
        body.data.map((s) => [s.value, s.count]),
        [
          ['Starbucks', 5],
          ['Starlight Bar', 4],
          ['Star Kebab', 1],
        ],
      );
      assert.equal(body.kind, 'name');
      // The most reviewed place of the name.
      const [best] = await t.db.kysely.selectFrom('places').select('public_id').where('source_id', '=', 'sb-de-3').execute();
      assert.equal(body.data[0]!.place_id, best!.public_id);
      assert.deepEqual(
        (await ok('q=bar')).data.map((s) => s.value),
        ['Starlight Bar'],
      );
      assert.deepEqual(
        (await ok('q=pizzeria%20na')).data.map((s) => s.value),
        ['Pizzeria Napoli'],
      );
      assert.deepEqual(
        (await ok('q=napo')).data.map((s) => s.value),
        ['Pizzeria Napoli'],
      );
      assert.deepEqual((await ok('q=stardust')).data, [], 'closed places are not suggested');
    });

    test('folds case, accents and scripts, and finds unspaced names from inside', async () => {
      assert.deepEqual(
        (await ok('q=CAFE%20ST')).data.map((s) => s.value),
        ['Café Stern'],
      );
      assert.deepEqual(
        (await ok(`q=${encodeURIComponent('weiss')}`)).data.map((s) => s.value),
        ['Praxis Weiß'],
      );
      assert.deepEqual(
        (await ok(`q=${encodeURIComponent('ドトール')}`)).data.map((s) => s.value),
        ['ドトール新宿店'],
      );
      assert.deepEqual(
        (await ok(`q=${encodeURIComponent('新宿')}`)).data.map((s) => s.value),
        ['ドトール新宿店'],
      );
    });

    test('limits names to a country and counts them there', async () => {
      const us = await ok('q=star&country=US');
      assert.deepEqual(
        us.data.map((s) => [s.value, s.count]),
        [['STARBUCKS', 2]],
      );
      assert.equal(us.country, 'US');
      assert.equal((await ok('q=star&country=Germany')).data.find((s) => s.value === 'Starbucks')?.count, 3);
      assert.deepEqual(
        (await ok('q=sta&limit=1')).data.map((s) => s.value),
        ['Starbucks'],
      );
    });

    test('suggests categories in every language with their slug and the places of their subtree', async () => {
      const en = await ok('q=restaur&kind=category');
      const restaurant = en.data.find((s) => s.slug === 'restaurant');
      assert.ok(restaurant, JSON.stringify(en.data));
      assert.equal(restaurant.count, 2, 'the kebab shop and the Italian restaurant below it');
      assert.equal(en.data[0]!.slug, 'restaurant', 'the category with most places first');
      const de = await ok('q=zahnar&kind=category', { 'accept-language': 'de-DE,de;q=0.9' });
      const dentist = de.data.find((s) => s.slug === 'dentist');
      assert.ok(dentist, JSON.stringify(de.data));
      assert.equal(dentist.lang, 'de');
      assert.equal(dentist.count, 1);
      for (const q of ['кафе', '喫茶', '카페']) {
        const other = await ok(`q=${encodeURIComponent(q)}&kind=category`);
        assert.ok(
          other.data.some((s) => s.slug === 'cafe' && s.count === 7),
          JSON.stringify(other.data),
        );
      }
      const inUs = await ok('q=caf&kind=category&country=US');
      assert.equal(inUs.data.find((s) => s.slug === 'cafe')?.count, 2);
    });

    test('suggests cities with places by their own name and their exonyms', async () => {
      const body = await ok('q=cologne&kind=city');
      assert.deepEqual(
        body.data.map((s) => [s.value, s.city_id, s.country, s.count, s.matched]),
        [['Köln', 2886242, 'DE', 4, 'cologne']],
      );
      const own = await ok('q=kol&kind=city');
      assert.equal(own.data[0]!.value, 'Köln');
      assert.equal(own.data[0]!.matched, undefined);
      assert.equal((await ok(`q=${encodeURIComponent('ケルン')}&kind=city`)).data[0]!.matched, 'ケルン');
      const munchen = await ok(`q=${encodeURIComponent('Münch')}&kind=city`);
      assert.deepEqual(
        munchen.data.map((s) => [s.value, s.matched]),
        [['Munich', 'munchen']],
      );
      const m = await ok('q=m&kind=city&country=DE');
      assert.equal(m.data[0]!.value, 'Munich');
      assert.equal(m.data[0]!.count, 3 + 1 + 1 + 1 + 1);
      assert.deepEqual((await ok('q=kol&kind=city&country=US')).data, []);
    });

    test('follows the catalog: a new name is suggested within seconds', async () => {
      assert.deepEqual((await ok('q=starfruit')).data, []);
      await writePlaces(t.db, [testPlaceRecord('test', 'starfruit', { name: 'Starfruit Deli' })]);
      const deadline = Date.now() + 10_000;
      let found: AutocompleteResponse['data'] = [];
      while (Date.now() < deadline && found.length === 0) {
        await new Promise((r) => setTimeout(r, 50));
        found = (await ok('q=starfruit')).data;
      }
      assert.deepEqual(
        found.map((s) => [s.value, s.count]),
        [['Starfruit Deli', 1]],
      );
    });

    test('answers 400 naming the field for a missing q, an unknown kind, a bad country and a limit out of range', async () => {
      const problem = async (qs: string) => {
        const res = await suggest(qs);
        assert.equal(res.statusCode, 400, res.body);
        assert.match(String(res.headers['content-type']), /application\/problem\+json/);
        return res.json() as { errors: Array<{ field: string; allowed?: unknown }> };
      };
      assert.equal((await problem('kind=name')).errors[0]!.field, 'querystring.q');
      assert.equal((await problem('q=%21%21')).errors[0]!.field, 'querystring.q');
      const kind = (await problem('q=sta&kind=street')).errors[0]!;
      assert.equal(kind.field, 'querystring.kind');
      assert.deepEqual(kind.allowed, ['name', 'category', 'city']);
      assert.equal((await problem('q=sta&country=Atlantis')).errors[0]!.field, 'querystring.country');
      for (const limit of ['0', '51', 'ten']) assert.equal((await problem(`q=sta&limit=${limit}`)).errors[0]!.field, 'querystring.limit');
      assert.equal((await problem('q=sta&per_page=3')).errors[0]!.field, 'querystring.per_page');
    });

    describeAuthSuite({ method: 'GET', url: '/api/v2/autocomplete?q=sta', scope: 'search' }, () => ({ app, db: t.db }));
  });
