import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { DashboardClient } from '../../../test/helpers/dashboard-client.ts';
import { munichExtract } from '../../../test/helpers/exports.ts';
import type { App } from '../../app.ts';
import type { LeadsPage } from '../leads/leads.schema.ts';
import type { Deleted, SuppressionsAdded, SuppressionsPage } from './suppressions.schema.ts';
import { addSuppressions } from './suppressions.service.ts';

/** Ratskeller, Marienplatz 8: `+49 (0) 89 21 99 89 0` in OpenStreetMap. */
const ratskellerE164 = '+49892199890';

for (const database of ['sqlite', 'postgres'] as const) {
  describe(`suppression lists on the Munich OpenStreetMap extract (${database})`, () => {
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
    const postJson = (a: TestAccount, body: unknown, query = '') =>
      app.inject({
        method: 'POST',
        url: `/api/v1/user-api/suppressions${query}`,
        headers: { authorization: a.authorization, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
    const postCsv = (a: TestAccount, body: string | Readable, query = '') =>
      app.inject({
        method: 'POST',
        url: `/api/v1/user-api/suppressions${query}`,
        headers: { authorization: a.authorization, 'content-type': 'text/csv' },
        payload: body,
      });

    async function search(a: TestAccount, query: string): Promise<{ search_id: string; total: number; suppressed: number; ids: string[] }> {
      const res = await get(a, `/api/v2/map/search?${query}&per_page=100&fields=id`);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json<{
        search_id: string;
        total: number;
        suppressed: number;
        data: Array<{ id: string }>;
        links: { next: string | null };
      }>();
      const ids = body.data.map((p) => p.id);
      let next = body.links.next;
      while (next) {
        const page = (await get(a, next)).json<{ data: Array<{ id: string }>; links: { next: string | null } }>();
        ids.push(...page.data.map((p) => p.id));
        next = page.links.next;
      }
      return { search_id: body.search_id, total: body.total, suppressed: body.suppressed, ids };
    }

    async function exportIds(a: TestAccount, searchId: string, extra = ''): Promise<string[]> {
      const res = await get(a, `/api/v2/map/export?search_id=${searchId}&format=ndjson&fields=id${extra}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.body
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l).id as string);
    }

    async function leadIds(a: TestAccount): Promise<{ total: number; ids: string[] }> {
      const ids: string[] = [];
      let cursor: string | null = null;
      let total = 0;
      do {
        const page: LeadsPage = (
          await get(a, `/api/v1/user-api/places?per_page=100&fields=id${cursor ? `&cursor=${cursor}` : ''}`)
        ).json<LeadsPage>();
        ids.push(...page.data.map((l) => l.id!));
        total = page.total;
        cursor = page.next_cursor;
      } while (cursor !== null);
      return { total, ids };
    }

    async function idsWhere(column: 'phone_e164' | 'website_domain', value: string): Promise<Set<string>> {
      const rows = await t.db.kysely.selectFrom('places').select('public_id').where(column, '=', value).execute();
      return new Set(rows.map((r) => r.public_id));
    }

    test('a phone written nationally with spaces leaves its place out of search, export and leads', async () => {
      const a = await createAccountWithToken(t.db);
      const before = await search(a, 'type=restaurant&city=M%C3%BCnchen');
      assert.equal(before.suppressed, 0);
      const exported = await exportIds(a, before.search_id);
      assert.equal(exported.length, before.total);
      const withPhone = await idsWhere('phone_e164', ratskellerE164);
      const hit = exported.filter((id) => withPhone.has(id));
      assert.ok(hit.length >= 1, 'the Ratskeller is a restaurant in München');
      assert.equal((await leadIds(a)).total, before.total);

      const added = await postJson(a, { entries: [{ type: 'phone', value: '089 21 99 89 0', country: 'DE' }] });
      assert.equal(added.statusCode, 200, added.body);
      assert.deepEqual(added.json<SuppressionsAdded>().counts, { phone: 1, domain: 0, email: 0, place: 0, total: 1 });
      // The same number again, another way, untyped with the body's country: a duplicate.
      const again = (await postJson(a, { entries: ['089/2199890'], country: 'DE' })).json<SuppressionsAdded>();
      assert.deepEqual([again.added, again.duplicates], [0, 1]);

      const after = await search(a, 'type=restaurant&city=M%C3%BCnchen');
      assert.equal(after.total, before.total - hit.length);
      assert.equal(after.suppressed, hit.length);
      assert.equal(after.ids.length, after.total);
      assert.deepEqual(
        after.ids.filter((id) => withPhone.has(id)),
        [],
      );
      const exportedAfter = await exportIds(a, after.search_id);
      assert.deepEqual(new Set(exportedAfter), new Set(exported.filter((id) => !withPhone.has(id))));
      // The first search, exported again, keeps to the list as it is now.
      assert.equal((await exportIds(a, before.search_id)).length, before.total - hit.length);
      const leads = await leadIds(a);
      assert.equal(leads.total, before.total - hit.length);
      assert.deepEqual(
        leads.ids.filter((id) => withPhone.has(id)),
        [],
      );

      // Another account is not affected.
      const b = await createAccountWithToken(t.db);
      const other = await search(b, 'type=restaurant&city=M%C3%BCnchen');
      assert.deepEqual([other.total, other.suppressed], [before.total, 0]);
    });

    test('a website suppresses every place of its registrable domain, scheme, www and path ignored', async () => {
      const a = await createAccountWithToken(t.db);
      const top = await t.db.kysely
        .selectFrom('places')
        .select(['website_domain', (eb) => eb.fn.countAll<number>().as('n')])
        .where('website_domain', 'is not', null)
        .groupBy('website_domain')
        .orderBy('n', 'desc')
        .executeTakeFirstOrThrow();
      const domain = top.website_domain!;
      const ofDomain = await idsWhere('website_domain', domain);
      assert.ok(ofDomain.size >= 2, `${domain}: ${ofDomain.size}`);
      const before = await search(a, 'bbox=-180,-90,180,90');
      const res = (await postJson(a, { entries: [`HTTPS://www.${domain.toUpperCase()}/somewhere?x=1`] })).json<SuppressionsAdded>();
      assert.deepEqual(res.counts, { phone: 0, domain: 1, email: 0, place: 0, total: 1 });
      const after = await search(a, 'bbox=-180,-90,180,90');
      assert.equal(after.suppressed, ofDomain.size);
      assert.equal(after.total, before.total - ofDomain.size);
      assert.deepEqual(new Set(after.ids), new Set(before.ids.filter((id) => !ofDomain.has(id))));
    });

    test('place ids and emails suppress those places; untyped values are detected', async () => {
      const a = await createAccountWithToken(t.db);
      const withEmail = await t.db.kysely
        .selectFrom('places')
        .select(['public_id', 'email'])
        .where('email', 'is not', null)
        .orderBy('id')
        .limit(1)
        .executeTakeFirstOrThrow();
      const some = await t.db.kysely
        .selectFrom('places')
        .select('public_id')
        .where('email', 'is', null)
        .orderBy('id')
        .limit(1)
        .executeTakeFirstOrThrow();
      const res = await postJson(a, { entries: [some.public_id, ` mailto:${withEmail.email!.toUpperCase()} `] });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json<SuppressionsAdded>().counts, { phone: 0, domain: 0, email: 1, place: 1, total: 2 });
      const after = await search(a, 'bbox=-180,-90,180,90');
      assert.ok(!after.ids.includes(some.public_id) && !after.ids.includes(withEmail.public_id));
      assert.ok(after.suppressed >= 2);
      const list = (await get(a, '/api/v1/user-api/suppressions')).json<SuppressionsPage>();
      assert.deepEqual(
        list.data.map((e) => [e.type, e.key]),
        [
          ['place', some.public_id],
          ['email', withEmail.email!.toLowerCase()],
        ],
      );
    });

    test('an invalid entry refuses the whole request naming it, unless on_invalid=skip', async () => {
      const a = await createAccountWithToken(t.db);
      const csv =
        'type,value,country\r\nphone,089 21 99 89 0,DE\r\nemail,Sales@Example.com,\r\ndomain,example.org,\r\nplace,plc_aaaaaaaaaaaaaaaa,\r\nphone,12,\r\n';
      const refused = await postCsv(a, csv);
      assert.equal(refused.statusCode, 400, refused.body);
      assert.match(String(refused.headers['content-type']), /^application\/problem\+json/);
      assert.deepEqual(
        refused.json<{ errors: Array<{ field: string }> }>().errors.map((e) => e.field),
        ['body.line 6'],
      );
      assert.equal((await get(a, '/api/v1/user-api/suppressions')).json<SuppressionsPage>().counts.total, 0, 'nothing was added');

      const jsonRefused = await postJson(a, { entries: ['example.com', { type: 'phone', value: '0 89 123' }] });
      assert.equal(jsonRefused.statusCode, 400);
      assert.deepEqual(
        jsonRefused.json<{ errors: Array<{ field: string }> }>().errors.map((e) => e.field),
        ['body.entries[1]'],
      );

      const skipped = await postCsv(a, csv, '?on_invalid=skip');
      assert.equal(skipped.statusCode, 200, skipped.body);
      const body = skipped.json<SuppressionsAdded>();
      assert.deepEqual([body.received, body.added, body.duplicates, body.rejected], [5, 4, 0, 1]);
      assert.equal(body.rejected_entries[0]!.at, 'line 6');
      assert.deepEqual(body.counts, { phone: 1, domain: 1, email: 1, place: 1, total: 4 });

      for (const bad of ['{"entries":[]}', '{"entries":["x"],"extra":1}', '{"entries":[{"type":"fax","value":"1"}]}']) {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/user-api/suppressions',
          headers: { authorization: a.authorization, 'content-type': 'application/json' },
          payload: bad,
        });
        assert.equal(res.statusCode, 400, bad);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      }
      const noBody = await app.inject({
        method: 'POST',
        url: '/api/v1/user-api/suppressions',
        headers: { authorization: a.authorization },
      });
      assert.equal(noBody.statusCode, 400);
      assert.equal(noBody.json<{ errors: Array<{ field: string }> }>().errors[0]!.field, 'body');
      const unsupported = await app.inject({
        method: 'POST',
        url: '/api/v1/user-api/suppressions',
        headers: { authorization: a.authorization, 'content-type': 'text/plain' },
        payload: 'x',
      });
      assert.equal(unsupported.statusCode, 415);
    });

    test('a long CSV streams in one request; the list pages by cursor with counts; entries are removed one by one or all', async () => {
      const a = await createAccountWithToken(t.db);
      const lines = 30_000;
      const stream = Readable.from(
        (function* () {
          yield 'email\n';
          for (let i = 0; i < lines; i += 1000) yield Array.from({ length: 1000 }, (_, j) => `user${i + j}@example.com\n`).join('');
          yield 'user0@example.com\n';
        })(),
      );
      const res = await postCsv(a, stream);
      assert.equal(res.statusCode, 200, res.body);
      const added = res.json<SuppressionsAdded>();
      assert.deepEqual([added.received, added.added, added.duplicates], [lines + 1, lines, 1]);
      assert.equal(added.counts.email, lines);

      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const page: SuppressionsPage = (
          await get(a, `/api/v1/user-api/suppressions?per_page=1000&type=email${cursor ? `&cursor=${cursor}` : ''}`)
        ).json<SuppressionsPage>();
        seen.push(...page.data.map((e) => e.id));
        assert.equal(page.counts.total, lines);
        cursor = page.next_cursor;
      } while (cursor !== null);
      assert.equal(new Set(seen).size, lines);
      const first = (await get(a, '/api/v1/user-api/suppressions?per_page=1')).json<SuppressionsPage>().data[0]!;
      assert.equal(first.value, 'user0@example.com', 'the upload keeps its order');

      const removed = await app.inject({
        method: 'DELETE',
        url: `/api/v1/user-api/suppressions/${first.id}`,
        headers: { authorization: a.authorization },
      });
      assert.equal(removed.statusCode, 200, removed.body);
      assert.equal(removed.json<Deleted>().counts.email, lines - 1);
      const gone = await app.inject({
        method: 'DELETE',
        url: `/api/v1/user-api/suppressions/${first.id}`,
        headers: { authorization: a.authorization },
      });
      assert.equal(gone.statusCode, 404);

      const unconfirmed = await app.inject({
        method: 'DELETE',
        url: '/api/v1/user-api/suppressions',
        headers: { authorization: a.authorization },
      });
      assert.equal(unconfirmed.statusCode, 400);
      assert.ok(
        unconfirmed.json<{ errors: Array<{ field: string }> }>().errors.some((e) => e.field.includes('confirm')),
        unconfirmed.body,
      );
      const all = await app.inject({
        method: 'DELETE',
        url: '/api/v1/user-api/suppressions?confirm=true',
        headers: { authorization: a.authorization },
      });
      assert.deepEqual(all.json<Deleted>(), { deleted: lines - 1, counts: { phone: 0, domain: 0, email: 0, place: 0, total: 0 } });
    });

    test("the dashboard's results say how many places the list hides, and its map leaves them out", async () => {
      const email = `dash-${Math.random().toString(36).slice(2)}@example.com`;
      const c = new DashboardClient(app);
      await c.get('/signup');
      assert.equal((await c.post('/signup', { email, password: 'a long enough password' })).statusCode, 303);
      const account = await t.db.kysely.selectFrom('accounts').select('id').where('email_norm', '=', email).executeTakeFirstOrThrow();
      await addSuppressions(t.db, Number(account.id), { entries: [{ type: 'phone', value: '089 21 99 89 0', country: 'DE' }] });
      const withPhone = await idsWhere('phone_e164', ratskellerE164);
      const ofSearch = await t.db.kysely
        .selectFrom('places')
        .select('public_id')
        .where('category', '=', 'restaurant')
        .where('public_id', 'in', [...withPhone])
        .execute();
      await c.get('/search');
      const url = (await c.post('/search', { type: 'restaurant', city: 'München' })).headers.location as string;
      const body = (await c.get(url)).body;
      assert.match(body, new RegExp(`data-testid="suppressed">${ofSearch.length} hidden by your suppression list`));
      assert.match(body, /All [\d,]+ places with coordinates|The first/);
      assert.equal(body.includes('Ratskeller'), false);
      // Without a list the same search shows it (on its map): the check above can fail.
      const other = new DashboardClient(app);
      await other.get('/signup');
      await other.post('/signup', { email: `dash-${Math.random().toString(36).slice(2)}@example.com`, password: 'a long enough password' });
      await other.get('/search');
      const otherUrl = (await other.post('/search', { type: 'restaurant', city: 'München' })).headers.location as string;
      const otherBody = (await other.get(otherUrl)).body;
      assert.ok(otherBody.includes('Ratskeller'));
      assert.equal(otherBody.includes('data-testid="suppressed"'), false);
    });

    test("another account's entries can be neither listed nor removed", async () => {
      const owner = await createAccountWithToken(t.db);
      const stranger = await createAccountWithToken(t.db);
      await postJson(owner, { entries: ['owner-only.example'] });
      const entry = (await get(owner, '/api/v1/user-api/suppressions')).json<SuppressionsPage>().data[0]!;
      const res = await app.inject({
        method: 'DELETE',
        url: `/api/v1/user-api/suppressions/${entry.id}`,
        headers: { authorization: stranger.authorization },
      });
      assert.equal(res.statusCode, 404);
      assert.deepEqual((await get(stranger, '/api/v1/user-api/suppressions')).json<SuppressionsPage>().data, []);
      await app.inject({
        method: 'DELETE',
        url: '/api/v1/user-api/suppressions?confirm=true',
        headers: { authorization: stranger.authorization },
      });
      assert.equal((await get(owner, '/api/v1/user-api/suppressions')).json<SuppressionsPage>().counts.total, 1);
    });

    if (database === 'sqlite') {
      const ctx = () => ({ app, db: t.db });
      // Made through the service: the accounts of the suite may lack the scopes of the routes.
      const addEntry = async (a: { accountId: number }) => {
        await addSuppressions(t.db, a.accountId, { entries: [`${Math.random().toString(36).slice(2)}.example.com`] });
        const row = await t.db.kysely
          .selectFrom('suppressions')
          .select('id')
          .where('account_id', '=', a.accountId)
          .orderBy('id', 'desc')
          .executeTakeFirstOrThrow();
        return `/api/v1/user-api/suppressions/${row.id}`;
      };
      describeAuthSuite(
        {
          method: 'POST',
          url: '/api/v1/user-api/suppressions',
          scope: 'suppressions:write',
          payload: { entries: ['example.net'] },
          headers: { 'content-type': 'application/json' },
        },
        ctx,
      );
      describeAuthSuite({ method: 'GET', url: '/api/v1/user-api/suppressions', scope: 'places:read' }, ctx);
      describeAuthSuite({ method: 'DELETE', url: '/api/v1/user-api/suppressions?confirm=true', scope: 'suppressions:write' }, ctx);
      describeAuthSuite(
        {
          method: 'DELETE',
          url: '/api/v1/user-api/suppressions/1',
          scope: 'suppressions:write',
          ownResource: async (_c, a) => addEntry(a),
          ownResourcePerCall: true,
          foreignResource: async ({ owner }) => ({ url: await addEntry(owner) }),
        },
        ctx,
      );
    }
  });
}
