import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createAccountWithToken } from '../../../test/helpers/accounts.ts';
import { copyTestSqlite, type TestDatabase } from '../../../test/helpers/databases.ts';
import { dailyUsage, UsageRecorder } from './usage.service.ts';

let t: TestDatabase;
before(async () => {
  t = await copyTestSqlite('migrated');
});
after(() => t.dispose());

test('counts requests on the UTC day they happen, across midnight, and adds to earlier flushes', async () => {
  const { accountId } = await createAccountWithToken(t.db);
  let now = Date.parse('2026-11-20T23:59:59.000Z');
  const usage = new UsageRecorder(t.db, { now: () => new Date(now), flushIntervalMs: 3_600_000 });
  usage.record(accountId, '/v1/search');
  usage.record(accountId, '/v1/search');
  await usage.flush();
  usage.record(accountId, '/v1/search');
  now += 1000;
  usage.record(accountId, '/v1/search');
  usage.record(accountId, '/api/v1/exports');
  await usage.close();
  const series = await dailyUsage(t.db, accountId, 3, new Date(now));
  assert.deepEqual(series, [
    { day: '2026-11-19', count: 0 },
    { day: '2026-11-20', count: 3 },
    { day: '2026-11-21', count: 2 },
  ]);
});
