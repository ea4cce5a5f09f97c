import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { munichExtract, saveSearch, type TestCity, topRestaurantCity } from '../../../test/helpers/exports.ts';
import type { App } from '../../app.ts';
import { MemoryRateLimiter } from '../../infra/ratelimit/ratelimit.ts';
import { exportBatchSize, startExport } from '../exports/exports.service.ts';
import { exportRowsInMonth, reserveExportRows } from './quotas.repository.ts';
import { monthOf, QuotaService } from './quotas.service.ts';

const defaults = {
  requestsPerDay: 10_000,
  exportRowsPerMonth: 100_000,
  concurrentExports: 2,
  enrichPlacesPerMonth: 10_000,
  matchRowsPerMonth: 1_000,
};

for (const dialect of dialects) {
  describe(`quotas on ${dialect.name}`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await dialect.open('migrated');
    });
    after(() => t.dispose());

    test('an account has the defaults until an administrator sets its own, and gets them back with null', async () => {
      const quotas = new QuotaService(t.db, new MemoryRateLimiter(), defaults, null);
      const a = await createAccountWithToken(t.db);
      assert.deepEqual(await quotas.forAccount(a.accountId), {
        ...defaults,
        custom: {
          requestsPerDay: false,
          exportRowsPerMonth: false,
          concurrentExports: false,
          enrichPlacesPerMonth: false,
          matchRowsPerMonth: false,
        },
      });
      const set = await quotas.setQuotas(a.accountId, { exportRowsPerMonth: 5_000_000_000, concurrentExports: 0 });
      assert.deepEqual([set.requestsPerDay, set.exportRowsPerMonth, set.concurrentExports], [10_000, 5_000_000_000, 0]);
      assert.deepEqual(set.custom, {
        requestsPerDay: false,
        exportRowsPerMonth: true,
        concurrentExports: true,
        enrichPlacesPerMonth: false,
        matchRowsPerMonth: false,
      });
      const back = await quotas.setQuotas(a.accountId, { concurrentExports: null });
      assert.deepEqual([back.exportRowsPerMonth, back.concurrentExports, back.custom.concurrentExports], [5_000_000_000, 2, false]);
      await assert.rejects(quotas.setQuotas(a.accountId, { requestsPerDay: -1 }), /must be a whole number from 0/);
    });

    test("exports reserving rows at the same time never take more than the month's quota together", async () => {
      const a = await createAccountWithToken(t.db);
      const month = monthOf(new Date());
      const grants = await Promise.all(Array.from({ length: 12 }, () => reserveExportRows(t.db.kysely, a.accountId, month, 300, 2_000)));
      assert.equal(
        grants.reduce((s, g) => s + g, 0),
        2_000,
      );
      assert.ok(
        grants.every((g) => g === 300 || g === 200 || g === 0),
        grants.join(','),
      );
      assert.equal(await exportRowsInMonth(t.db.kysely, a.accountId, month), 2_000);
      assert.equal(await reserveExportRows(t.db.kysely, a.accountId, month, 1, 2_000), 0);
    });
  });
}

describe('export quotas on the Munich OpenStreetMap extract', () => {
  let t: TestApp;
  let app: App;
  let city: TestCity;
  let total: number;

  before(async () => {
    t = await buildTestApp({ files: [munichExtract], env: { DB_READ_WORKERS: '0' } });
    app = t.app;
    city = await topRestaurantCity(t.db);
    total = Number(
      (
        await t.db.kysely
          .selectFrom('places')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  });
  after(async () => {
    await t.close();
  });

  const exportAll = async (a: TestAccount) =>
    app.inject({
      url: `/api/v2/map/export?search_id=${await saveSearch(t.db, a.accountId, city, null)}&format=csv&fields=id,name`,
      headers: { authorization: a.authorization },
    });
  const usage = async (a: TestAccount) =>
    (await app.inject({ url: '/api/v1/user-api/usage', headers: { authorization: a.authorization } })).json();
  const exportLog = (accountId: number) =>
    t.db.kysely.selectFrom('exports').select(['status', 'row_count']).where('account_id', '=', accountId).orderBy('id').execute();

  test('an export that would pass the monthly quota ends at it as a complete file, logged limited, with leads for exactly those rows', async () => {
    const a = await createAccountWithToken(t.db);
    const quota = exportBatchSize + 500;
    assert.ok(total > quota);
    await app.quotas.setQuotas(a.accountId, { exportRowsPerMonth: quota });
    const res = await exportAll(a);
    assert.equal(res.statusCode, 200);
    const rows = parse(res.body.replace(/^\uFEFF/, ''), { columns: true }) as Array<{ id: string; name: string }>;
    assert.equal(rows.length, quota);
    assert.ok(
      rows.every((r) => r.id.startsWith('plc_') && r.name !== ''),
      'whole rows only',
    );
    // The log's status is written once the response is over.
    for (let i = 0; i < 100 && (await exportLog(a.accountId))[0]?.status === 'running'; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(await exportLog(a.accountId), [{ status: 'limited', row_count: quota }]);
    const leads = await t.db.kysely
      .selectFrom('leads')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', a.accountId)
      .executeTakeFirstOrThrow();
    assert.equal(Number(leads.n), quota);
    const u = await usage(a);
    assert.deepEqual(u.export_rows.used, quota);
    assert.deepEqual(u.export_rows.remaining, 0);
  });

  test("an export with the month's rows spent is refused up front with 429 and Retry-After until the first of next month", async () => {
    const a = await createAccountWithToken(t.db);
    await app.quotas.setQuotas(a.accountId, { exportRowsPerMonth: 10 });
    assert.equal((await exportAll(a)).statusCode, 200);
    const refused = await exportAll(a);
    assert.equal(refused.statusCode, 429);
    assert.match(String(refused.headers['content-type']), /^application\/problem\+json/);
    const body = refused.json();
    assert.equal(body.code, 'quota_exceeded');
    assert.deepEqual(body['violated-policies'], ['export-rows']);
    const now = new Date();
    const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
    assert.ok(Math.abs(Number(refused.headers['retry-after']) - (nextMonth - now.getTime()) / 1000) < 5);
    assert.equal((await exportLog(a.accountId)).length, 1, 'the refused export is not logged');
  });

  test('an export beyond the concurrent exports answers 429 naming the policy, and a slot frees when one ends', async () => {
    const a = await createAccountWithToken(t.db);
    await app.quotas.setQuotas(a.accountId, { concurrentExports: 1 });
    const searchId = await saveSearch(t.db, a.accountId, city, null);
    const running = await startExport(t.db, { accountId: a.accountId, searchId, format: 'csv', fields: 'id' }, app.quotas);
    assert.equal((await usage(a)).concurrent_exports.running, 1);
    const refused = await exportAll(a);
    assert.equal(refused.statusCode, 429);
    assert.deepEqual(refused.json()['violated-policies'], ['concurrent-exports']);
    assert.equal(refused.headers['retry-after'], '10');
    // The client went away before the first batch was read: the generator never ran, the slot is freed all the same.
    running.body.destroy();
    await running.finish(false);
    assert.equal((await usage(a)).concurrent_exports.running, 0);
    assert.equal((await exportAll(a)).statusCode, 200);
  });

  test('a download cut short gives back the rows of the batch it never received', async () => {
    const a = await createAccountWithToken(t.db);
    const searchId = await saveSearch(t.db, a.accountId, city, null);
    const started = await startExport(t.db, { accountId: a.accountId, searchId, format: 'csv', fields: 'id' }, app.quotas);
    // The header and the first batch reach the client; the next batch, read ahead, never does.
    let chunks = 0;
    for await (const chunk of started.body) {
      if (++chunks <= 2) started.delivery.bodyFlushed((chunk as Buffer).length);
      if (chunks === 3) break;
    }
    await started.finish(false);
    const [log] = await exportLog(a.accountId);
    assert.equal(log?.status, 'aborted');
    assert.equal(log?.row_count, exportBatchSize);
    assert.equal((await usage(a)).export_rows.used, log?.row_count, 'the month counts what was recorded as written');
  });

  test('GET /api/v1/user-api/usage gives each quota with what is used and left, and the token rate with its costs', async () => {
    const a = await createAccountWithToken(t.db, { scopes: ['places:read'] });
    await app.quotas.setQuotas(a.accountId, { requestsPerDay: 500 });
    for (let i = 0; i < 3; i++) await app.inject({ url: '/api/v1/user-api/categories', headers: { authorization: a.authorization } });
    const res = await app.inject({ url: '/api/v1/user-api/usage', headers: { authorization: a.authorization } });
    assert.equal(res.statusCode, 200);
    const u = res.json();
    // Three calls, and this one.
    assert.deepEqual({ ...u.requests, resets_at: undefined }, { used: 4, limit: 500, remaining: 496, resets_at: undefined, custom: true });
    assert.match(u.requests.resets_at, /T00:00:00\.000Z$/);
    assert.deepEqual(
      { ...u.export_rows, resets_at: undefined },
      { used: 0, limit: 100_000, remaining: 100_000, resets_at: undefined, custom: false },
    );
    assert.match(u.export_rows.resets_at, /-01T00:00:00\.000Z$/);
    assert.deepEqual(u.concurrent_exports, { running: 0, limit: 2, custom: false });
    assert.deepEqual(u.rate_limit, {
      policy: 'token',
      limit: 1200,
      window_seconds: 60,
      costs: { 'places:read': 1, search: 2, export: 20, 'suppressions:write': 2, enrich: 20, monitors: 2, match: 10 },
    });
  });

  describeAuthSuite({ method: 'GET', url: '/api/v1/user-api/usage', scope: 'places:read' }, () => ({ app, db: t.db }));
});
