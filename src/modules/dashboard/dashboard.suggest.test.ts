import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { DashboardClient as Client } from '../../../test/helpers/dashboard-client.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import { testPlaceRecord, writePlaces } from '../../../test/helpers/places.ts';

const records = [
  ...[1, 2].map((i) => testPlaceRecord('test', `b-${i}`, { name: 'Bäckerei Sonne', category: 'bakery', categories: ['bakery'] })),
  testPlaceRecord('test', 'bar', { name: 'Bar Centrale' }),
];

for (const dialect of dialects)
  describe(`the search form's suggestions on ${dialect.name}`, () => {
    let t: TestApp;

    before(async () => {
      t = await buildTestApp({ dialect: dialect.name, prepare: (db) => writePlaces(db, records) });
    });
    after(async () => {
      await t?.close();
    });

    async function signedUp(): Promise<Client> {
      const c = new Client(t.app);
      await c.get('/signup');
      const res = await c.post('/signup', {
        email: `u${Math.random().toString(36).slice(2)}@example.com`,
        password: 'a passphrase long enough',
      });
      assert.equal(res.statusCode, 303);
      return c;
    }

    test('the form marks its type, city and name fields for suggestions and loads the script', async () => {
      const page = await (await signedUp()).get('/search');
      assert.equal(page.statusCode, 200);
      for (const [name, kind, list] of [
        ['type', 'category', 'type-suggestions'],
        ['city', 'city', 'city-suggestions'],
        ['query', 'name', 'name-suggestions'],
      ]) {
        assert.match(page.body, new RegExp(`name="${name}"[^>]* list="${list}" data-suggest="${kind}"`), name);
        assert.match(page.body, new RegExp(`<datalist id="${list}">`), list);
      }
      assert.match(page.body, /<script src="\/assets\/suggest\.js\?v=[^"]+" defer><\/script>/);
    });

    test('suggests from the catalog for a signed-in visitor, and sends a visitor without a session to sign in', async () => {
      const c = await signedUp();
      const res = await c.get('/search/suggest?kind=name&q=back');
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(
        (res.json() as { data: Array<{ value: string; count: number }> }).data.map((s) => [s.value, s.count]),
        [['Bäckerei Sonne', 2]],
      );
      const cities = (await c.get('/search/suggest?kind=city&q=munc')).json() as { data: Array<{ value: string; count: number }> };
      assert.deepEqual(
        cities.data.map((s) => [s.value, s.count]),
        [['Munich', 3]],
      );
      assert.equal((await c.get('/search/suggest?kind=street&q=b')).statusCode, 400);
      const visitor = await new Client(t.app).get('/search/suggest?kind=name&q=back');
      assert.equal(visitor.statusCode, 303);
      assert.match(String(visitor.headers.location), /^\/signin/);
    });
  });
