import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import type { App } from '../../app.ts';
import { loadCategoryIndex } from '../taxonomy/taxonomy.ts';

const extract = new URL('../../../../shared/data/osm/monaco-2026.osm.pbf', import.meta.url).pathname;

interface Category {
  slug: string;
  name: string;
  parent: string | null;
  place_count: number;
  place_count_with_children: number;
}

for (const dialect of dialects)
  describe(`reference routes on ${dialect.name}`, () => {
    let t: TestApp;
    let app: App;
    let user: TestAccount;

    const get = (url: string, headers: Record<string, string> = {}) =>
      app.inject({ method: 'GET', url, headers: { authorization: user.authorization, ...headers } });

    before(async () => {
      t = await buildTestApp({ dialect: dialect.name, files: [extract], env: { DB_READ_WORKERS: '1' } });
      app = t.app;
      user = await createAccountWithToken(t.db, { scopes: ['places:read'] });
    });

    after(async () => {
      await t.close();
    });

    describe('GET /api/v2/categories', () => {
      test('lists every category with its parent and place counts that match the catalog', async () => {
        const res = await get('/api/v2/categories');
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json() as { lang: string; total: number; data: Category[] };
        assert.equal(body.total, loadCategoryIndex().list().length);
        assert.equal(body.data.length, body.total);
        const counts = await t.db.kysely
          .selectFrom('places')
          .select(['category', (eb) => eb.fn.countAll<number>().as('n')])
          .groupBy('category')
          .execute();
        const bySlug = new Map(body.data.map((c) => [c.slug, c]));
        for (const { category, n } of counts) if (category) assert.equal(bySlug.get(category)?.place_count, Number(n), category);
        const restaurant = bySlug.get('restaurant')!;
        const subtree = loadCategoryIndex().subtree('restaurant');
        assert.equal(
          restaurant.place_count_with_children,
          subtree.reduce((s, slug) => s + (bySlug.get(slug)?.place_count ?? 0), 0),
        );
        assert.ok(restaurant.place_count_with_children > restaurant.place_count || subtree.length === 1);
        assert.equal(bySlug.get('restaurant_italian')?.parent, 'restaurant');
      });

      test('names categories in the language of lang or Accept-Language', async () => {
        const byParam = (await get('/api/v2/categories?lang=de')).json() as { lang: string; data: Category[] };
        const byHeader = (await get('/api/v2/categories', { 'accept-language': 'de-CH, en;q=0.5' })).json() as { data: Category[] };
        const vet = (d: Category[]) => d.find((c) => c.slug === 'veterinary')!.name;
        assert.equal(vet(byParam.data), loadCategoryIndex().name('veterinary', 'de'));
        assert.notEqual(vet(byParam.data), loadCategoryIndex().name('veterinary', 'en'));
        assert.equal(vet(byHeader.data), vet(byParam.data));
      });

      test('lists the children of a parent, and answers 400 for an unknown parent or parameter', async () => {
        const shops = (await get('/api/v2/categories?parent=shop')).json() as { data: Category[] };
        assert.ok(shops.data.length > 50);
        assert.ok(shops.data.every((c) => c.parent === 'shop'));
        const unknown = await get('/api/v2/categories?parent=spaceport');
        assert.equal(unknown.statusCode, 400);
        assert.equal((unknown.json() as { errors: Array<{ field: string }> }).errors[0]!.field, 'querystring.parent');
        const extra = await get('/api/v2/categories?limit=5');
        assert.equal(extra.statusCode, 400);
        assert.equal((extra.json() as { errors: Array<{ field: string }> }).errors[0]!.field, 'querystring.limit');
      });
    });

    describe('GET /api/v2/countries', () => {
      test('lists countries with ISO codes, names and place counts that match the catalog', async () => {
        const res = await get('/api/v2/countries');
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json() as {
          total: number;
          data: Array<{ code: string; alpha3: string | null; name: string; native_name: string | null; place_count: number }>;
        };
        assert.ok(body.total > 240);
        const monaco = body.data.find((c) => c.code === 'MC')!;
        assert.equal(monaco.alpha3, 'MCO');
        assert.equal(monaco.name, 'Monaco');
        const expected = await t.db.kysely
          .selectFrom('places')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('country_code', '=', 'MC')
          .executeTakeFirstOrThrow();
        assert.ok(Number(expected.n) > 100);
        assert.equal(monaco.place_count, Number(expected.n));
        assert.equal(body.data.find((c) => c.code === 'JP')!.place_count, 0);
      });

      test('counts again after the catalog changes, so the counts stay exact', async () => {
        const monaco = async () =>
          ((await get('/api/v2/countries')).json() as { data: Array<{ code: string; place_count: number }> }).data.find(
            (c) => c.code === 'MC',
          )!.place_count;
        const before = await monaco();
        const victim = await t.db.kysely
          .selectFrom('places')
          .select('id')
          .where('country_code', '=', 'MC')
          .orderBy('id', 'desc')
          .limit(1)
          .executeTakeFirstOrThrow();
        await t.db.kysely.deleteFrom('places').where('id', '=', victim.id).execute();
        assert.equal(await monaco(), before - 1);
      });

      test('names countries in the language asked for', async () => {
        const body = (await get('/api/v2/countries?lang=de')).json() as { lang: string; data: Array<{ code: string; name: string }> };
        assert.equal(body.lang, 'de');
        assert.equal(body.data.find((c) => c.code === 'DE')!.name, 'Deutschland');
      });
    });

    describeAuthSuite({ method: 'GET', url: '/api/v2/categories', scope: 'places:read' }, () => ({ app, db: t.db }));
    describeAuthSuite({ method: 'GET', url: '/api/v2/countries', scope: 'places:read' }, () => ({ app, db: t.db }));
  });
