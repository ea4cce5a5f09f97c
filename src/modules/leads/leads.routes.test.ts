import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import { munichExtract, saveSearch, type TestCity, topRestaurantCity } from '../../../test/helpers/exports.ts';
import type { App } from '../../app.ts';
import type { Lead, LeadCategories, LeadsPage } from './leads.schema.ts';

for (const dialect of dialects)
  describe(`the account's leads on the Munich OpenStreetMap extract on ${dialect.name}`, () => {
    let t: TestApp;
    let app: App;
    let city: TestCity;

    before(async () => {
      t = await buildTestApp({ dialect: dialect.name, files: [munichExtract] });
      app = t.app;
      city = await topRestaurantCity(t.db);
      await app.ready();
    });
    after(async () => {
      await t.close();
    });

    const get = (account: TestAccount, url: string) =>
      app.inject({ method: 'GET', url, headers: { authorization: account.authorization } });

    /** Exports a search of `category` in the city and returns the exported place ids, in export order. */
    async function exportCategory(account: TestAccount, category: string): Promise<string[]> {
      const searchId = await saveSearch(t.db, account.accountId, city, category);
      const res = await get(account, `/api/v2/map/export?search_id=${searchId}&format=ndjson&fields=id`);
      assert.equal(res.statusCode, 200, res.body);
      return res.body
        .trimEnd()
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l).id as string);
    }

    async function allPages(account: TestAccount, query: string): Promise<{ leads: Lead[]; totals: number[] }> {
      const leads: Lead[] = [];
      const totals: number[] = [];
      let cursor: string | null = null;
      do {
        const res = await get(account, `/api/v1/user-api/places?${query}${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(res.statusCode, 200, res.body);
        const page = res.json<LeadsPage>();
        leads.push(...page.data);
        totals.push(page.total);
        cursor = page.next_cursor;
      } while (cursor !== null);
      return { leads, totals };
    }

    test('lists exported places newest first, and pages by cursor to the end with an exact total and no repeats', async () => {
      const account = await createAccountWithToken(t.db);
      const restaurants = await exportCategory(account, 'restaurant');
      const cafes = await exportCategory(account, 'cafe');
      assert.ok(restaurants.length > 20 && cafes.length > 20, `${restaurants.length} restaurants, ${cafes.length} cafes`);

      const { leads, totals } = await allPages(account, 'per_page=7');
      const ids = leads.map((l) => l.id);
      assert.equal(new Set(ids).size, ids.length, 'no lead twice');
      assert.deepEqual([...ids].sort(), [...restaurants, ...cafes].sort());
      assert.ok(totals.every((n) => n === restaurants.length + cafes.length));
      assert.deepEqual(new Set(ids.slice(0, cafes.length)), new Set(cafes), 'the later export comes first');
      for (let i = 1; i < leads.length; i++) assert.ok(leads[i - 1]!.lead.last_exported_at >= leads[i]!.lead.last_exported_at);
      assert.equal(leads.find((l) => l.id === cafes[0])?.category, 'cafe');
    });

    test('page numbers give the same order as the cursor', async () => {
      const account = await createAccountWithToken(t.db);
      await exportCategory(account, 'restaurant');
      const { leads } = await allPages(account, 'per_page=9');
      const byPage: string[] = [];
      for (let page = 1; ; page++) {
        const res = await get(account, `/api/v1/user-api/places?per_page=9&page=${page}`);
        const body = res.json<LeadsPage>();
        assert.equal(body.page, page);
        byPage.push(...body.data.map((l) => l.id!));
        if (body.next_cursor === null) break;
      }
      assert.deepEqual(
        byPage,
        leads.map((l) => l.id),
      );
    });

    test('re-exporting a place keeps one lead with its first export time and moves its last export time', async () => {
      const account = await createAccountWithToken(t.db);
      const first = await exportCategory(account, 'restaurant');
      const before = (await allPages(account, 'per_page=100')).leads;
      await exportCategory(account, 'restaurant');
      const afterwards = (await allPages(account, 'per_page=100')).leads;
      assert.equal(afterwards.length, first.length);
      const was = new Map(before.map((l) => [l.id, l.lead]));
      for (const l of afterwards) {
        assert.equal(l.lead.first_exported_at, was.get(l.id)?.first_exported_at);
        assert.ok(l.lead.last_exported_at >= was.get(l.id)!.last_exported_at);
      }
    });

    test('filters by category, city, country, phone, website and rating', async () => {
      const account = await createAccountWithToken(t.db);
      const restaurants = await exportCategory(account, 'restaurant');
      const cafes = await exportCategory(account, 'cafe');
      const all = (await allPages(account, 'per_page=100')).leads;
      const total = async (query: string) => (await get(account, `/api/v1/user-api/places?${query}`)).json<LeadsPage>().total;

      assert.equal(await total('category=cafe'), cafes.length);
      assert.equal(
        await total(`city=${encodeURIComponent(city.name.toUpperCase())}`),
        all.filter((l) => l.city?.toLowerCase() === city.name.toLowerCase()).length,
      );
      assert.equal(await total('country=de'), all.filter((l) => l.country === 'DE').length);
      const withPhone = all.filter((l) => l.phone !== null).length;
      assert.ok(withPhone > 0 && withPhone < all.length);
      assert.equal(await total('has_phone=true'), withPhone);
      assert.equal(await total('has_phone=false'), all.length - withPhone);
      assert.equal(await total('has_website=true'), all.filter((l) => l.website !== null).length);
      assert.equal(await total('min_rating=1'), all.filter((l) => l.rating != null && l.rating >= 1).length);
      assert.equal(
        await total('category=restaurant&has_phone=true'),
        all.filter((l) => restaurants.includes(l.id!) && l.phone !== null).length,
      );
    });

    test('answers 400 naming the allowed range for a per_page outside 1..100', async () => {
      const account = await createAccountWithToken(t.db);
      for (const perPage of ['0', '101', '-5']) {
        const res = await get(account, `/api/v1/user-api/places?per_page=${perPage}`);
        assert.equal(res.statusCode, 400, perPage);
        assert.deepEqual(res.json().errors, [
          { field: 'querystring.per_page', message: 'must be between 1 and 100', allowed: { minimum: 1, maximum: 100 } },
        ]);
      }
      const empty = await get(account, '/api/v1/user-api/places');
      assert.equal(empty.json<LeadsPage>().per_page, 20, 'the default');
    });

    test('narrows each lead to the fields asked for, and names the allowed fields for an unknown one', async () => {
      const account = await createAccountWithToken(t.db);
      const exported = await exportCategory(account, 'cafe');
      const res = await get(account, '/api/v1/user-api/places?fields=name,phone,id&per_page=100');
      assert.equal(res.statusCode, 200, res.body);
      const page = res.json<LeadsPage>();
      assert.equal(page.data.length, exported.length);
      for (const lead of page.data) assert.deepEqual(Object.keys(lead).sort(), ['id', 'lead', 'name', 'phone']);
      assert.deepEqual(page.data.map((l) => l.id).sort(), [...exported].sort());
      const bad = await get(account, '/api/v1/user-api/places?fields=name,colour');
      assert.equal(bad.statusCode, 400);
      const error = bad.json().errors[0];
      assert.equal(error.field, 'querystring.fields');
      assert.match(error.message, /colour/);
      assert.ok(Array.isArray(error.allowed) && error.allowed.includes('phone_e164'));
    });

    test('rejects a cursor it did not issue, and a cursor together with a page', async () => {
      const account = await createAccountWithToken(t.db);
      const bad = await get(account, '/api/v1/user-api/places?cursor=bm90LWEtY3Vyc29y');
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().errors[0].field, 'querystring.cursor');
      const both = await get(account, '/api/v1/user-api/places?cursor=bm90LWEtY3Vyc29y&page=2');
      assert.equal(both.statusCode, 400);
      assert.equal(both.json().errors[0].field, 'querystring.page');
    });

    test('shows an account only its own leads', async () => {
      const exporter = await createAccountWithToken(t.db);
      const other = await createAccountWithToken(t.db);
      await exportCategory(exporter, 'restaurant');
      const res = await get(other, '/api/v1/user-api/places');
      assert.deepEqual(res.json<LeadsPage>().data, []);
      assert.equal(res.json<LeadsPage>().total, 0);
      assert.deepEqual((await get(other, '/api/v1/user-api/categories')).json<LeadCategories>(), { data: [], total: 0, uncategorised: 0 });
    });

    test('counts the leads per category, most first, with the taxonomy name', async () => {
      const account = await createAccountWithToken(t.db);
      const restaurants = await exportCategory(account, 'restaurant');
      const cafes = await exportCategory(account, 'cafe');
      const res = await get(account, '/api/v1/user-api/categories');
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json<LeadCategories>();
      assert.deepEqual(
        body.data.map((c) => [c.slug, c.count]),
        [
          ['restaurant', restaurants.length],
          ['cafe', cafes.length],
        ].sort((a, b) => Number(b[1]) - Number(a[1])),
      );
      assert.equal(body.total, restaurants.length + cafes.length);
      assert.equal(body.uncategorised, 0);
      assert.equal(body.data.find((c) => c.slug === 'cafe')?.name, 'Cafe');
    });

    describeAuthSuite({ method: 'GET', url: '/api/v1/user-api/places', scope: 'places:read' }, () => ({ app, db: t.db }));
    describeAuthSuite({ method: 'GET', url: '/api/v1/user-api/categories', scope: 'places:read' }, () => ({ app, db: t.db }));
  });
