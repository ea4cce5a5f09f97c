import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, sqliteCatalog, type TestApp, type TestAppOptions } from '../../../test/helpers/app.ts';
import { DashboardClient } from '../../../test/helpers/dashboard-client.ts';
import { dialects, parityCoveredDialects } from '../../../test/helpers/databases.ts';
import { munichExtract } from '../../../test/helpers/exports.ts';
import { libraryOpenAt, tomorrowAt18 } from '../../../test/helpers/opening-hours.ts';
import type { Db } from '../../infra/db/database.ts';
import { loadGazetteer } from '../geo/gazetteer.ts';
import { evaluateMonitors } from '../monitors/monitors.evaluator.ts';
import { readHoursState } from '../places/opening-hours.reads.ts';
import { rebuildOpeningHours } from '../places/opening-hours.repository.ts';
import { loadCategoryIndex } from '../taxonomy/taxonomy.ts';
import { recentSearches } from './saved-searches.ts';

interface OpenPage {
  search_id: string;
  total: number;
  data: Array<{ id: string }>;
  resolved: { open?: { mode: string; at: string; unparsed: number; computed_at?: string | null } };
  links: { next: string | null };
}

// The Munich extract imported into SQLite once: each SQLite app below starts from a copy of its own.
const munichSqlite = sqliteCatalog([munichExtract]);
after(() => munichSqlite.dispose());

// The answers of open_now and open_at, checked here against the library on one dialect: how PostgreSQL's
// differ from SQLite's is checked in test/parity/search-engine.test.ts (open now and open at through the index
// against SQL, totals, pages and facets, on both dialects); the bad values and the dashboard form do not touch
// the database. DIALECT_PARITY_FULL=1 runs them on both dialects as well.
for (const dialect of parityCoveredDialects)
  describe(`open now / open at on ${dialect.name}`, () => {
    let t: TestApp;
    let user: TestAccount;
    const munich = () => loadGazetteer().resolveCity('München', 'DE').chosen!;

    /** The restaurants of Munich with hours, each with the library's own answer at an instant (ms) or local time. */
    const expected = (at: { instantMs: number } | { localMs: number }, db = t.db) =>
      libraryOpenAt(db, { cityId: munich().id, categories: loadCategoryIndex().subtree('restaurant') }, at);

    /** A database of its own holding the Munich extract, for buildTestApp. */
    const munichCatalog = async (): Promise<Pick<TestAppOptions, 'database' | 'dialect' | 'files'>> =>
      dialect.name === 'sqlite' ? { database: await munichSqlite.copy() } : { dialect: dialect.name, files: [munichExtract] };

    async function get(url: string, account = user) {
      return t.app.inject({ method: 'GET', url, headers: { authorization: account.authorization } });
    }

    before(async () => {
      // A short window keeps the opening-hours pass quick; open_at is asked for tomorrow. The pass is done
      // before the server starts, as the engine of a running server would have done it after the import.
      t = await buildTestApp({
        ...(await munichCatalog()),
        env: { DB_READ_WORKERS: '1', OPENING_HOURS_WINDOW_DAYS: '2' },
        prepare: async (db) => {
          await rebuildOpeningHours(db, Date.now(), 2);
        },
      });
      user = await createAccountWithToken(t.db, { scopes: ['search', 'export'] });
    });
    after(async () => {
      await t.close();
    });

    test('open_now=true: exactly the places the library finds open at the instant named in resolved.open, paged and exported alike', async () => {
      const res = await get('/api/v2/map/search?type=restaurant&city=M%C3%BCnchen&open_now=true&per_page=100');
      assert.equal(res.statusCode, 200, res.body);
      const page = res.json() as OpenPage;
      assert.equal(page.resolved.open?.mode, 'now');
      const want = await expected({ instantMs: Date.parse(page.resolved.open!.at.replace('Z', ':00Z')) });
      assert.ok(want.withHours > 50, 'the extract has restaurants with hours');
      assert.equal(page.total, want.open.size);
      assert.equal(page.resolved.open?.unparsed, want.unparsed);
      const ids = page.data.map((p) => p.id);
      for (const id of ids) assert.ok(want.open.has(id), id);
      const exported = await get(`/api/v2/map/export?search_id=${page.search_id}&format=ndjson`);
      assert.equal(exported.statusCode, 200, exported.body);
      const lines = exported.body.split('\n').filter((l) => l.trim() !== '');
      assert.deepEqual(new Set(lines.map((l) => (JSON.parse(l) as { id: string }).id)), want.open);
    });

    test('open_at: the wall-clock time of each place, on the GET and POST map searches and on /v1/search', async () => {
      const at = tomorrowAt18();
      const want = await expected({ localMs: Date.parse(`${at}:00Z`) });
      const res = await get(`/api/v2/map/search?type=restaurant&city=M%C3%BCnchen&open_at=${at}`);
      assert.equal(res.statusCode, 200, res.body);
      const page = res.json() as OpenPage;
      const { computed_at: computedAt, ...open } = page.resolved.open!;
      assert.deepEqual(open, { mode: 'at', at, unparsed: want.unparsed });
      assert.ok(computedAt && Date.now() - Date.parse(computedAt) < 10 * 60_000, `the pass named: ${computedAt}`);
      assert.equal(page.total, want.open.size);
      assert.ok(want.open.size > 10, 'restaurants are open at 18:00 on most days');
      const v1 = await t.app.inject({
        method: 'POST',
        url: '/v1/search',
        headers: { authorization: user.authorization },
        payload: { type: 'restaurant', city: 'München', open_at: at },
      });
      assert.equal(v1.statusCode, 200, v1.body);
      assert.equal((v1.json() as { total: number }).total, want.open.size);
      const c = munich();
      const square = [
        [c.lon - 0.3, c.lat - 0.3],
        [c.lon + 0.3, c.lat - 0.3],
        [c.lon + 0.3, c.lat + 0.3],
        [c.lon - 0.3, c.lat + 0.3],
        [c.lon - 0.3, c.lat - 0.3],
      ];
      const area = await t.app.inject({
        method: 'POST',
        url: '/api/v2/map/search',
        headers: { authorization: user.authorization },
        payload: { polygon: { type: 'Polygon', coordinates: [square] }, type: 'restaurant', city: 'München', open_at: at },
      });
      assert.equal(area.statusCode, 200, area.body);
      assert.equal((area.json() as OpenPage).total, want.open.size);
    });

    test('bad open_now and open_at values are 400 problem+json naming the field and what is allowed', async () => {
      const cases: Array<[string, string]> = [
        ['open_at=2026-13-01T10:00', 'querystring.open_at'],
        ['open_at=2026-02-30T10:00', 'querystring.open_at'],
        ['open_at=2026-02-03T24:00', 'querystring.open_at'],
        ['open_at=2026-12-24 18:00', 'querystring.open_at'],
        ['open_at=2999-01-01T10:00', 'querystring.open_at'],
        [`open_at=${tomorrowAt18()}&open_now=true`, 'querystring.open_at'],
        ['open_now=maybe', 'querystring.open_now'],
      ];
      for (const [query, field] of cases) {
        const res = await get(`/api/v2/map/search?city=M%C3%BCnchen&${query.replace(' ', '%20')}`);
        assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
        const body = res.json() as { errors: Array<{ field: string; allowed?: unknown }> };
        assert.ok(
          body.errors.some((e) => e.field === field),
          `${query}: ${res.body}`,
        );
      }
      const v1 = await t.app.inject({
        method: 'POST',
        url: '/v1/search',
        headers: { authorization: user.authorization },
        payload: { city: 'München', open_at: '2026-02-30T10:00' },
      });
      assert.equal(v1.statusCode, 400);
      assert.equal((v1.json() as { errors: Array<{ field: string }> }).errors[0]?.field, 'body.open_at');
    });

    test("the dashboard's search form takes open now and open at, and shows their errors on the field", async () => {
      const c = new DashboardClient(t.app);
      await c.get('/signup');
      const signup = await c.post('/signup', {
        email: `u${Math.random().toString(36).slice(2)}@example.com`,
        password: 'correct horse battery staple',
      });
      assert.equal(signup.statusCode, 303);
      await c.get(signup.headers.location as string);
      const form = await c.get('/search');
      assert.match(form.body, /name="open_now"/);
      assert.match(form.body, /name="open_at" type="datetime-local"/);
      const res = await c.post('/search', { type: 'restaurant', city: 'München', open_at: tomorrowAt18() });
      assert.equal(res.statusCode, 303, res.body);
      const shown = await c.get(res.headers.location as string);
      assert.match(shown.body, /local time/);
      const want = await expected({ localMs: Date.parse(`${tomorrowAt18()}:00Z`) });
      assert.match(shown.body, new RegExp(`data-total="${want.open.size}"`));
      await c.get('/search');
      const bad = await c.post('/search', { type: 'restaurant', city: 'München', open_at: '2026-02-30T10:00' });
      assert.equal(bad.statusCode, 400);
      assert.match(bad.body, /f-open_at-error/);
    });
  });

// Before the first pass, after a write, and with a pass that does not reach the moment: on both dialects
// (test/e2e/open-hours-ready.test.ts runs the same path through `serve` on SQLite only, relying on this one).
for (const dialect of dialects)
  describe(`open searches while the opening hours are not ready, on ${dialect.name}`, () => {
    const munich = () => loadGazetteer().resolveCity('München', 'DE').chosen!;
    const expected = (at: { localMs: number }, db: Db) =>
      libraryOpenAt(db, { cityId: munich().id, categories: loadCategoryIndex().subtree('restaurant') }, at);
    const munichCatalog = async (): Promise<Pick<TestAppOptions, 'database' | 'dialect' | 'files'>> =>
      dialect.name === 'sqlite' ? { database: await munichSqlite.copy() } : { dialect: dialect.name, files: [munichExtract] };

    test('an open search, its facets and a monitor never read "not ready" as "nothing": before the first pass, after a write, and with a pass that does not reach the moment', async () => {
      // A database imported while no server ran: no pass yet, and none in the background (OPENING_HOURS_CHECK_MS=0).
      // A budget long enough that a request waits for the pass it starts, whatever the machine's load.
      const fresh = await buildTestApp({
        ...(await munichCatalog()),
        env: { DB_READ_WORKERS: '1', OPENING_HOURS_WINDOW_DAYS: '2', SEARCH_TIME_BUDGET_MS: '60000' },
      });
      try {
        const account = await createAccountWithToken(fresh.db, { scopes: ['search', 'monitors'] });
        const at = tomorrowAt18();
        const want = () => expected({ localMs: Date.parse(`${at}:00Z`) }, fresh.db);
        const call = async <T>(method: 'GET' | 'POST', url: string, payload?: object): Promise<T> => {
          const res = await fresh.app.inject({
            method,
            url,
            headers: { authorization: account.authorization },
            ...(payload ? { payload } : {}),
          });
          assert.ok(res.statusCode < 300, `${url}: ${res.statusCode} ${res.body}`);
          return res.json() as T;
        };
        const open = `type=restaurant&city=M%C3%BCnchen&open_at=${at}`;
        const facets = () => call<{ total: number }>('GET', `/api/v2/map/facets?${open}&by=category`);

        // Before any pass: the index's answer, SQL's (only_new: the index holds no account), /v1/search and the facets, all at once.
        const [indexed, bySql, quick, counted] = await Promise.all([
          call<OpenPage>('GET', `/api/v2/map/search?${open}`),
          call<OpenPage>('GET', `/api/v2/map/search?${open}&only_new=true`),
          call<{ total: number }>('POST', '/v1/search', { type: 'restaurant', city: 'München', open_at: at }),
          facets(),
        ]);
        const before = await want();
        assert.ok(before.open.size > 10, 'restaurants are open at 18:00 on most days');
        for (const total of [indexed.total, bySql.total, quick.total, counted.total]) assert.equal(total, before.open.size);
        assert.equal(indexed.resolved.open?.unparsed, before.unparsed);
        assert.equal(typeof indexed.resolved.open?.computed_at, 'string');
        const saved = await recentSearches(fresh.db, account.accountId, 10);
        assert.deepEqual(
          saved.map((r) => r.total),
          [before.open.size, before.open.size],
          'saved with the true total',
        );

        // A monitor of the open search; then a write gives hours to the restaurants that had none. No pass runs:
        // the changed places are evaluated directly, by the search, the facets and the monitor alike.
        const monitor = await call<{ id: string }>('POST', '/api/v2/monitors', { search_id: indexed.search_id });
        const given = await sql`UPDATE places SET opening_hours = '24/7' WHERE opening_hours IS NULL AND city_id = ${munich().id}
          AND closed_at IS NULL AND category IN (${sql.join(loadCategoryIndex().subtree('restaurant'))})`.execute(fresh.db.kysely);
        assert.ok(Number(given.numAffectedRows) > 0);
        const afterWrite = await want();
        assert.ok(afterWrite.open.size > before.open.size);
        const now = await call<OpenPage>('GET', `/api/v2/map/search?${open}`);
        assert.equal(now.total, afterWrite.open.size);
        assert.equal(now.resolved.open?.computed_at, indexed.resolved.open?.computed_at, 'no pass ran');
        assert.equal((await call<OpenPage>('GET', `/api/v2/map/search?${open}&only_new=true`)).total, afterWrite.open.size);
        assert.equal((await facets()).total, afterWrite.open.size);
        const round = await evaluateMonitors(fresh.db);
        assert.equal(round.waiting, 0);
        const events = async () =>
          (
            await call<{ data: Array<{ kind: string; place: { id: string } }> }>(
              'GET',
              `/api/v2/monitors/${monitor.id}/events?per_page=100`,
            )
          ).data;
        assert.deepEqual(
          new Set((await events()).map((e) => `${e.kind} ${e.place.id}`)),
          new Set([...afterWrite.open].filter((id) => !before.open.has(id)).map((id) => `added ${id}`)),
        );

        // The last pass computed ten days ago (a server started after days down): its window does not reach the
        // moment. The members change meanwhile: the monitor waits instead of recording each of them as left.
        await rebuildOpeningHours(fresh.db, Date.now() - 10 * 86_400_000, 2);
        await sql`UPDATE places SET content_hash = content_hash || '-touched' WHERE id IN (SELECT place_id FROM monitor_places)`.execute(
          fresh.db.kysely,
        );
        const waiting = await evaluateMonitors(fresh.db);
        assert.deepEqual([waiting.waiting, waiting.events], [1, 0]);
        // The index still holds the pass before (a true answer, with the changes since decided directly). SQL reads
        // the tables: it starts the pass at once and waits for it. The monitor then evaluates: nobody left.
        assert.equal((await call<OpenPage>('GET', `/api/v2/map/search?${open}`)).total, afterWrite.open.size);
        const caughtUp = await call<OpenPage>('GET', `/api/v2/map/search?${open}&only_new=true`);
        assert.equal(caughtUp.total, afterWrite.open.size);
        assert.ok((await readHoursState(fresh.db))!.window.toMs > Date.now() + 86_400_000, 'a pass reaching tomorrow ran');
        const evaluated = await evaluateMonitors(fresh.db);
        assert.equal(evaluated.waiting, 0);
        assert.deepEqual(
          (await events()).filter((e) => e.kind === 'closed'),
          [],
        );
      } finally {
        await fresh.close();
      }
    });
  });
