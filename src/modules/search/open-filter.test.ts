import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { DashboardClient } from '../../../test/helpers/dashboard-client.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import { munichExtract } from '../../../test/helpers/exports.ts';
import { sql } from 'kysely';
import { loadGazetteer } from '../geo/gazetteer.ts';
import { rebuildOpeningHours } from '../places/opening-hours.repository.ts';
import { type HoursLocation, instantOfWallClock, isOpenAt, parseOpeningHours, timeZoneAt } from '../places/opening-hours.ts';
import { loadCategoryIndex } from '../taxonomy/taxonomy.ts';

interface OpenPage {
  search_id: string;
  total: number;
  data: Array<{ id: string }>;
  resolved: { open?: { mode: string; at: string; unparsed: number; computed_at?: string | null } };
  links: { next: string | null };
}

/** The next day (UTC) at 18:00, as `open_at` takes it: inside the window whatever today is. */
function tomorrowAt18(): string {
  return `${new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)}T18:00`;
}

for (const dialect of dialects)
  describe(`open now / open at on ${dialect.name}`, () => {
    let t: TestApp;
    let user: TestAccount;
    const munich = () => loadGazetteer().resolveCity('München', 'DE').chosen!;

    /** The restaurants of Munich with hours, each with the library's own answer at an instant (ms) or local time. */
    async function expected(at: { instantMs: number } | { localMs: number }) {
      const rows = await t.db.kysely
        .selectFrom('places')
        .select(['public_id', 'opening_hours', 'lat', 'lon', 'country_code', 'region'])
        .where('city_id', '=', munich().id)
        .where('category', 'in', loadCategoryIndex().subtree('restaurant'))
        .where('closed_at', 'is', null)
        .where('opening_hours', 'is not', null)
        .execute();
      const open = new Set<string>();
      let unparsed = 0;
      for (const r of rows) {
        const tz = timeZoneAt(r.lat, r.lon)!;
        const instant = 'instantMs' in at ? at.instantMs : instantOfWallClock(at.localMs, tz);
        // The library's own answer; where it knows no holidays for the country, without holidays (docs/opening-hours.md).
        const stateWith = (where: HoursLocation | null) => {
          const parsed = parseOpeningHours(r.opening_hours!.trim(), where);
          return parsed.ok ? isOpenAt(parsed.hours, tz, instant) : parsed;
        };
        let state = stateWith({ lat: r.lat!, lon: r.lon!, countryCode: r.country_code, region: r.region });
        if (typeof state !== 'boolean' && /no holidays/i.test(state.reason)) state = stateWith(null);
        if (typeof state !== 'boolean') unparsed++;
        else if (state) open.add(r.public_id);
      }
      return { open, unparsed, withHours: rows.length };
    }

    async function get(url: string, account = user) {
      return t.app.inject({ method: 'GET', url, headers: { authorization: account.authorization } });
    }

    before(async () => {
      // A short window keeps the opening-hours pass quick; open_at is asked for tomorrow. The pass is done
      // before the server starts, as the engine of a running server would have done it after the import.
      t = await buildTestApp({
        dialect: dialect.name,
        files: [munichExtract],
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

    test('a server never runs the opening-hours pass on a request: before it, searches answer 200 with computed_at null; it runs in the background at start and after an import', async () => {
      // A database imported while no server ran: no pass yet. The server checks the tables every 100 ms.
      const fresh = await buildTestApp({
        dialect: dialect.name,
        files: [munichExtract],
        env: { DB_READ_WORKERS: '1', OPENING_HOURS_WINDOW_DAYS: '2', OPENING_HOURS_CHECK_MS: '100' },
      });
      try {
        const account = await createAccountWithToken(fresh.db, { scopes: ['search'] });
        const at = tomorrowAt18();
        const search = async () => {
          const res = await fresh.app.inject({
            method: 'GET',
            url: `/api/v2/map/search?type=restaurant&city=M%C3%BCnchen&open_at=${at}`,
            headers: { authorization: account.authorization },
          });
          assert.equal(res.statusCode, 200, res.body);
          return res.json() as OpenPage;
        };
        const until = async (done: (page: OpenPage) => boolean, what: string) => {
          const started = Date.now();
          for (;;) {
            const page = await search();
            if (done(page)) return page;
            assert.ok(Date.now() - started < 120_000, what);
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        };
        const first = await search();
        // The answer of the pass in progress or, if it was quick, of the pass done: never a wait for it.
        if (first.resolved.open?.computed_at === null) assert.equal(first.total, 0);
        const computed = await until((p) => typeof p.resolved.open?.computed_at === 'string', 'the pass at start-up finishes');
        assert.equal(computed.total, (await expected({ localMs: Date.parse(`${at}:00Z`) })).open.size);
        // An import gives hours to restaurants that had none: the next check runs a pass in the background.
        await sql`UPDATE places SET opening_hours = '24/7' WHERE opening_hours IS NULL AND city_id = ${munich().id}
          AND category IN (${sql.join(loadCategoryIndex().subtree('restaurant'))})`.execute(fresh.db.kysely);
        const meanwhile = await search();
        assert.ok(meanwhile.total === computed.total || meanwhile.resolved.open?.computed_at !== computed.resolved.open?.computed_at);
        const after = await until((p) => p.resolved.open?.computed_at !== computed.resolved.open?.computed_at, 'a pass after the import');
        assert.ok(after.total > computed.total, `${after.total} > ${computed.total}`);
      } finally {
        await fresh.close();
      }
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
