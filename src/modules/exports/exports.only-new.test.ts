import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { DashboardClient } from '../../../test/helpers/dashboard-client.ts';
import { munichExtract } from '../../../test/helpers/exports.ts';
import type { App } from '../../app.ts';
import { importFiles } from '../../bootstrap.ts';

const monacoExtract = new URL('../../../../shared/data/osm/monaco-2026.osm.pbf', import.meta.url).pathname;
const world = 'bbox=-180,-90,180,90';

for (const database of ['sqlite', 'postgres'] as const) {
  describe(`only_new: exports and searches leave out what the account exported (Munich, then Monaco imported; ${database})`, () => {
    let t: TestApp;
    let app: App;

    before(async () => {
      t = await buildTestApp({ dialect: database, files: [munichExtract] });
      app = t.app;
      await app.ready();
    });
    after(async () => {
      await t.close();
    });

    const get = (a: TestAccount, url: string) => app.inject({ method: 'GET', url, headers: { authorization: a.authorization } });
    const search = async (a: TestAccount, query: string) => {
      const res = await get(a, `/api/v2/map/search?${query}&fields=id`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json<{ search_id: string; total: number; suppressed: number; data: Array<{ id: string }>; resolved: unknown }>();
    };
    const exportIds = async (a: TestAccount, searchId: string, extra = '') => {
      const res = await get(a, `/api/v2/map/export?search_id=${searchId}&format=ndjson&fields=id${extra}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.body
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l).id as string);
    };
    const publicIdsAbove = async (id: number) =>
      new Set((await t.db.kysely.selectFrom('places').select('public_id').where('id', '>', id).execute()).map((r) => r.public_id));

    test('after a first export, an only_new export gives exactly the places imported since', async () => {
      const a = await createAccountWithToken(t.db);
      const all = await search(a, world);
      const first = await exportIds(a, all.search_id);
      assert.equal(first.length, all.total);
      assert.ok(all.total > 1000);

      // Everything is exported: nothing is new, and an empty answer is what was asked (no fallback search).
      const none = await search(a, `${world}&only_new=true`);
      assert.equal(none.total, 0);
      assert.deepEqual(none.data, []);
      assert.deepEqual(await exportIds(a, all.search_id, '&only_new=true'), []);

      const { max } = await t.db.kysely
        .selectFrom('places')
        .select((eb) => eb.fn.max('id').as('max'))
        .executeTakeFirstOrThrow();
      await importFiles(t.db, [monacoExtract]);
      const added = await publicIdsAbove(Number(max));
      assert.ok(added.size > 100, `${added.size} places from Monaco`);

      const fresh = await search(a, `${world}&only_new=true&per_page=100`);
      assert.equal(fresh.total, added.size, 'the total is exact with only_new');
      assert.ok(fresh.data.every((p) => added.has(p.id)));
      // The saved search keeps its only_new: its export without the parameter gives the new places only.
      const second = await exportIds(a, fresh.search_id);
      assert.deepEqual(new Set(second), added);
      assert.equal(second.length, added.size);

      assert.equal((await search(a, `${world}&only_new=true`)).total, 0);
      // only_new=false overrides the search's own: every place again.
      assert.equal((await exportIds(a, fresh.search_id, '&only_new=false')).length, all.total + added.size);

      // Another account has exported nothing: everything is new to it.
      const b = await createAccountWithToken(t.db);
      assert.equal((await search(b, `${world}&only_new=true`)).total, all.total + added.size);
    });

    test("the dashboard's export offers only_new as a checkbox", async () => {
      const c = new DashboardClient(app);
      await c.get('/signup');
      const signup = await c.post('/signup', {
        email: `only-new-${Math.random().toString(36).slice(2)}@example.com`,
        password: 'a long enough password',
      });
      assert.equal(signup.statusCode, 303);
      await c.get('/search');
      const url = (await c.post('/search', { type: 'cafe', city: 'München' })).headers.location as string;
      const page = await c.get(url);
      assert.match(page.body, /<input type="checkbox" name="only_new" value="true"/);
      const rows = (csv: string) => csv.trim().split('\r\n').length - 1;
      const all = await c.post(`${url}/export`, { format: 'csv' });
      assert.equal(all.statusCode, 200, all.body);
      assert.ok(rows(all.body) > 10, `${rows(all.body)} cafes`);
      const fresh = await c.post(`${url}/export`, { format: 'csv', only_new: 'true' });
      assert.equal(fresh.statusCode, 200);
      assert.equal(rows(fresh.body), 0, 'every cafe was exported by the first download');
      assert.equal(rows((await c.post(`${url}/export`, { format: 'csv' })).body), rows(all.body), 'unchecked: all of them again');
    });

    test('only_new is a parameter of a new search: a cursor refuses it, a bad value is a problem', async () => {
      const a = await createAccountWithToken(t.db);
      const page = await get(a, `/api/v2/map/search?type=restaurant&city=M%C3%BCnchen&only_new=true&per_page=5`);
      const next = page.json<{ links: { next: string } }>().links.next;
      const cursor = new URL(next, 'http://x').searchParams.get('cursor')!;
      const refused = await get(a, `/api/v2/map/search?cursor=${cursor}&only_new=true`);
      assert.equal(refused.statusCode, 400);
      assert.ok(refused.json<{ errors: Array<{ field: string }> }>().errors.some((e) => e.field === 'querystring.only_new'));
      const bad = await get(a, `/api/v2/map/search?type=restaurant&only_new=maybe`);
      assert.equal(bad.statusCode, 400);
      assert.match(String(bad.headers['content-type']), /^application\/problem\+json/);
    });
  });
}
