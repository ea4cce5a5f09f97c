import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout } from 'node:timers/promises';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { createAccountWithToken, type TestAccount } from '../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { openTestPostgres, postgresAdminUrl, type TestPostgres } from '../../test/helpers/databases.ts';
import { TcpProxy } from '../../test/helpers/tcp-proxy.ts';
import { type App, buildApp } from '../app.ts';
import { loadConfig } from '../config.ts';
import { isDatabaseUnavailable } from '../infra/db/availability.ts';
import { type Db, openDatabase } from '../infra/db/database.ts';

const problemOf = (res: LightMyRequestResponse) => {
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  return res.json() as { code: string; checks?: Record<string, string>; reason?: string };
};

describe('/healthz and /readyz on SQLite without Redis', () => {
  let t: TestApp;
  before(async () => {
    t = await buildTestApp();
  });
  after(async () => {
    await t.close();
  });

  test('/healthz says the process answers, /readyz that the database does, Redis is not configured and the search index is built', async () => {
    assert.deepEqual((await t.app.inject('/healthz')).json(), { status: 'ok' });
    const ready = await t.app.inject('/readyz');
    assert.equal(ready.statusCode, 200);
    const { search_index: index, ...rest } = ready.json();
    assert.deepEqual(rest, { status: 'ready', checks: { database: 'ok', redis: 'not configured', disk: 'ok' } });
    assert.equal(index.engine, 'memory');
    assert.equal(index.status, 'ready');
    assert.equal(typeof index.version, 'number');
  });
});

describe('PostgreSQL and Redis going away and coming back', { timeout: 120_000 }, () => {
  const pgUrl = new URL(postgresAdminUrl);
  let pgProxy: TcpProxy;
  let redisProxy: TcpProxy;
  let schema: TestPostgres;
  let db: Db;
  let app: App;
  let account: TestAccount;

  before(async () => {
    schema = await openTestPostgres('prepared');
    account = await createAccountWithToken(schema.db, { scopes: ['places:read'] });
    pgProxy = await new TcpProxy({ host: pgUrl.hostname, port: Number(pgUrl.port || 5432) }).start();
    redisProxy = await new TcpProxy({ host: '127.0.0.1', port: 6379 }).start();
    const proxied = new URL(schema.url);
    proxied.port = String(pgProxy.port);
    db = openDatabase(proxied.toString());
    app = await buildApp({
      config: loadConfig({
        DATABASE_URL: proxied.toString(),
        REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`,
        REDIS_KEY_PREFIX: `health-test-${Date.now()}:`,
        LOG_LEVEL: 'silent',
        IMPORT_DEMO_DATA: 'false',
      }),
      db,
    });
  });
  after(async () => {
    await app?.close();
    await db?.close();
    await pgProxy?.close();
    await redisProxy?.close();
    await schema?.dispose();
  });

  const countries = () => app.inject({ url: '/api/v2/countries', headers: { authorization: account.authorization } });

  async function eventually(check: () => Promise<boolean>, ms: number): Promise<void> {
    const end = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > end) throw new Error(`not within ${ms} ms`);
      await setTimeout(200);
    }
  }

  test('with PostgreSQL gone, requests fail fast with 503 problem+json and Retry-After, and recover without a restart', async () => {
    assert.equal((await app.inject('/readyz')).statusCode, 200);
    assert.equal((await countries()).statusCode, 200);

    await pgProxy.cut();
    // The token was verified a moment ago: wait past its cache so the request asks the database.
    await setTimeout(1100);
    const started = Date.now();
    const refused = await countries();
    assert.ok(Date.now() - started < 5000, `answered in ${Date.now() - started} ms`);
    assert.equal(refused.statusCode, 503);
    assert.equal(problemOf(refused).code, 'unavailable');
    assert.equal(refused.headers['retry-after'], '1');
    const notReady = await app.inject('/readyz');
    assert.equal(notReady.statusCode, 503);
    assert.deepEqual(problemOf(notReady).checks, { database: 'down', redis: 'ok', disk: 'ok' });
    assert.equal((await app.inject('/healthz')).statusCode, 200, 'the process itself is alive');

    await pgProxy.restore();
    await eventually(async () => (await countries()).statusCode === 200, 15_000);
    assert.equal((await app.inject('/readyz')).statusCode, 200);
  });

  test('a connection lost inside a transaction fails that transaction, not the process, and the pool replaces it', async () => {
    const uncaught: Error[] = [];
    const monitor = (error: Error) => uncaught.push(error);
    process.on('uncaughtExceptionMonitor', monitor);
    const transaction = db.kysely.transaction().execute(async (trx) => {
      await sql`SELECT 1`.execute(trx);
      // Cut while the client is checked out and idle between two queries: node-postgres emits 'error' on
      // the client itself then, which ends the process unless someone listens.
      await pgProxy.cut();
      await setTimeout(300);
      await sql`SELECT 1`.execute(trx);
    });
    await assert.rejects(transaction, (error: Error) => isDatabaseUnavailable(error));
    await setTimeout(100);
    process.off('uncaughtExceptionMonitor', monitor);
    assert.deepEqual(
      uncaught.map((e) => e.message),
      [],
      'nothing escaped to the process',
    );
    await pgProxy.restore();
    await eventually(async () => (await countries()).statusCode === 200, 15_000);
    const { rows } = await sql<{ one: number }>`SELECT 1 AS one`.execute(db.kysely);
    assert.equal(rows[0]!.one, 1);
  });

  test('the dashboard answers 503 with a page, not 500, while PostgreSQL is gone', async () => {
    await pgProxy.cut();
    try {
      const page = await app.inject('/signin');
      const signIn = await app.inject({
        method: 'POST',
        url: '/signin',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          cookie: page.cookies.map((c) => `${c.name}=${c.value}`).join('; '),
        },
        payload: new URLSearchParams({
          _csrf: /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '',
          email: 'nobody@example.com',
          password: 'correct horse battery staple',
        }).toString(),
      });
      assert.equal(signIn.statusCode, 503, signIn.body.slice(0, 300));
      assert.match(String(signIn.headers['content-type']), /^text\/html/);
      assert.equal(signIn.headers['retry-after'], '1');
    } finally {
      await pgProxy.restore();
    }
    await eventually(async () => (await countries()).statusCode === 200, 15_000);
  });

  test('with Redis gone, the API keeps answering (limits counted in memory meanwhile) and /readyz says Redis is down until it is back', async () => {
    await redisProxy.cut();
    const answered = await countries();
    assert.equal(answered.statusCode, 200, 'rate limits fail open');
    assert.ok(answered.headers.ratelimit, 'still announced, from the in-memory fallback');
    const notReady = await app.inject('/readyz');
    assert.equal(notReady.statusCode, 503);
    assert.deepEqual(problemOf(notReady).checks, { database: 'ok', redis: 'down', disk: 'ok' });

    await redisProxy.restore();
    await eventually(async () => (await app.inject('/readyz')).statusCode === 200, 15_000);
    assert.equal((await countries()).statusCode, 200);
  });
});
