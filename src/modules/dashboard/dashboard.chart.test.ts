import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken, type TestAccount, testPassword } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { DashboardClient as Client } from '../../../test/helpers/dashboard-client.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import type { App } from '../../app.ts';
import { createReadPool } from '../../infra/db/read-pool.ts';
import { AppError } from '../../infra/errors.ts';
import { rebuildOpeningHours } from '../places/opening-hours.repository.ts';
import { createReadTasks, readTasksModule } from '../search/read-tasks.ts';
import { createSearch } from '../search/search.ts';
import { searchResults } from './dashboard.service.ts';

const monaco = new URL('../../../../shared/data/osm/monaco-2026.osm.pbf', import.meta.url).pathname;

interface Facets {
  by: string;
  total: number;
  values: Array<{ value: string | number; count: number }>;
}

/** The market chart's table rows: the facet value (empty for "other" and "none"), the label and the exact count. */
function chartRows(body: string): Array<{ value: string; label: string; count: number }> {
  const figure = /<figure class="card chart-card" data-testid="market-chart">[\s\S]*?<\/figure>/.exec(body)?.[0];
  assert.ok(figure, 'the page has the market chart');
  return [...figure.matchAll(/<tr data-value="([^"]*)" data-count="(\d+)"><th scope="row">([^<]*)<\/th>/g)].map((m) => ({
    value: m[1] as string,
    count: Number(m[2]),
    label: m[3] as string,
  }));
}

/** What the chart must show for the facets route's answer: the ten largest values, the rest together, then none. */
function expectedRows(facets: Facets): Array<{ value: string; count: number }> {
  const top = facets.values.slice(0, 10).map((v) => ({ value: String(v.value), count: v.count }));
  const other = facets.values.slice(10).reduce((sum, v) => sum + v.count, 0);
  const without = facets.total - facets.values.reduce((sum, v) => sum + v.count, 0);
  return [...top, ...(other > 0 ? [{ value: '', count: other }] : []), ...(without > 0 ? [{ value: '', count: without }] : [])];
}

for (const dialect of dialects)
  describe(`the search page's market chart on ${dialect.name}`, () => {
    let app: App;
    let t: TestApp;
    let user: TestAccount;
    let c: Client;

    before(async () => {
      // The opening-hours pass done, as a server does it in the background after an import (a short window).
      t = await buildTestApp({
        dialect: dialect.name,
        files: [monaco],
        env: { OPENING_HOURS_WINDOW_DAYS: '2' },
        prepare: async (db) => {
          await rebuildOpeningHours(db, Date.now(), 2);
        },
      });
      app = t.app;
      user = await createAccountWithToken(t.db, { scopes: ['search'] });
      c = new Client(app);
      await c.get('/signin');
      assert.equal((await c.post('/signin', { email: user.email, password: testPassword })).statusCode, 303);
      await c.get('/search');
    });
    after(async () => {
      await t.close();
    });

    async function searched(form: Record<string, string>): Promise<{ url: string; body: string }> {
      await c.get('/search');
      const res = await c.post('/search', form);
      assert.equal(res.statusCode, 303, res.body);
      const url = res.headers.location as string;
      const page = await c.get(url);
      assert.equal(page.statusCode, 200);
      return { url, body: page.body };
    }

    async function facets(query: string): Promise<Facets> {
      const res = await app.inject({ url: `/api/v2/map/facets?${query}`, headers: { authorization: user.authorization } });
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as Facets;
    }

    test('a search in no city charts its matches by city with the facets route’s exact counts', async () => {
      const { body } = await searched({ type: 'shop' });
      const expected = await facets('type=shop&by=city');
      assert.ok(expected.total > 0 && expected.values.length > 1, 'the catalog spreads these matches over several cities');
      const rows = chartRows(body);
      assert.deepEqual(
        rows.map(({ value, count }) => ({ value, count })),
        expectedRows(expected),
      );
      assert.equal(
        rows.reduce((sum, r) => sum + r.count, 0),
        expected.total,
      );
      assert.match(body, new RegExp(`data-total="${expected.total}"`), 'the chart counts what the page lists');
      assert.ok(
        rows.every((r) => /^[^\d].* \((MC|FR)\)$/.test(r.label)),
        'each city is named, with its country as the search spans countries',
      );
      assert.match(body, /<svg class="chart"[^>]*aria-hidden="true"/);
    });

    test('a search in one city charts its matches by category with the facets route’s exact counts', async () => {
      const { body } = await searched({ city: 'Monaco', country: 'MC', has_website: 'yes' });
      const expected = await facets('city=Monaco&country=MC&has_website=true&by=category');
      assert.ok(expected.values.length > 10, 'enough categories for an "other" bar');
      const rows = chartRows(body);
      assert.deepEqual(
        rows.map(({ value, count }) => ({ value, count })),
        expectedRows(expected),
      );
      assert.match(rows[10]?.label ?? '', new RegExp(`^${expected.values.length - 10} other categories$`));
      assert.match(body, /<caption class="visually-hidden">Matches by category, of [\d,]+ places<\/caption>/);
    });

    test('the page shows the results without the chart when the count fails, and says why in the log', async () => {
      const { url } = await searched({ type: 'restaurant', city: 'Monaco', country: 'MC' });
      const searchId = url.split('/').pop() as string;
      const base = createSearch(t.db, createReadPool({ db: t.db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule }));
      const failing = Object.assign(Object.create(base.engine) as typeof base.engine, {
        facets: () => Promise.reject(new AppError('time_budget_exceeded', 'over budget')),
      });
      const warnings: string[] = [];
      const view = await searchResults({ ...base, engine: failing }, user.accountId, searchId, undefined, 25, {
        warn: (_obj, msg) => warnings.push(msg),
      });
      assert.equal(view.chart, null);
      assert.ok(view.places.length > 0 && view.total > 0, 'the results are there');
      assert.deepEqual(warnings, ['the market chart of a search was left out']);
      const healthy = await searchResults(base, user.accountId, searchId, undefined, 25, { warn: () => assert.fail('no warning') });
      assert.ok(healthy.chart && healthy.chart.by === 'category');
    });

    test('a search with the open filter charts the places open at its moment with the facets route’s exact counts', async () => {
      const at = `${new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)}T12:00`;
      const { body } = await searched({ city: 'Monaco', country: 'MC', open_at: at });
      const expected = await facets(`city=Monaco&country=MC&open_at=${at}&by=category`);
      const all = await facets('city=Monaco&country=MC&by=category');
      assert.ok(expected.total > 0 && expected.total < all.total, `the filter narrows: ${expected.total} of ${all.total}`);
      assert.deepEqual(
        chartRows(body).map(({ value, count }) => ({ value, count })),
        expectedRows(expected),
      );
      assert.match(body, new RegExp(`data-total="${expected.total}"`), 'the chart counts what the page lists');
    });
  });
