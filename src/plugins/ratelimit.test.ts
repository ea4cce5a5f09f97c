import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { createAccountWithToken } from '../../test/helpers/accounts.ts';
import { copyTestSqlite, type openTestSqlite } from '../../test/helpers/databases.ts';
import { type App, buildApp } from '../app.ts';
import { loadConfig } from '../config.ts';
import { ipKey } from './ratelimit.ts';

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

let t: ReturnType<typeof openTestSqlite>;
const apps: App[] = [];

/** An app over the test database with its own limits; probe routes stand in for a search and an export. */
async function appWith(env: Record<string, string> = {}): Promise<App> {
  const app = await buildApp({
    config: loadConfig({ DATABASE_URL: t.url, LOG_LEVEL: 'silent', IMPORT_DEMO_DATA: 'false', DB_READ_WORKERS: '0', ...env }),
    db: t.db,
  });
  app.get('/api/v1/_probe/search', { config: { scope: 'search' } }, async () => ({ ok: true }));
  app.get('/api/v1/_probe/export', { config: { scope: 'export' } }, async () => ({ ok: true }));
  app.get('/api/v1/_probe/priced', { config: { scope: 'search', cost: 2 } }, async () => ({ ok: true }));
  apps.push(app);
  return app;
}

before(async () => {
  t = await copyTestSqlite('migrated');
});

after(async () => {
  for (const app of apps) await app.close();
  await t.dispose();
});

/** The RateLimit field as { policy: { r, t } }. */
function standing(res: LightMyRequestResponse): Record<string, { r: number; t: number }> {
  const field = String(res.headers.ratelimit ?? '');
  return Object.fromEntries(
    field
      .split(/,\s*/)
      .filter(Boolean)
      .map((item) => {
        const m = /^"([^"]+)";r=(\d+);t=(\d+)$/.exec(item);
        assert.ok(m, `a structured-field item: ${item}`);
        return [m[1], { r: Number(m[2]), t: Number(m[3]) }];
      }),
  );
}

function assertRefused(res: LightMyRequestResponse, code: string, policy: string): void {
  assert.equal(res.statusCode, 429, res.body);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/);
  const body = res.json();
  assert.equal(body.code, code);
  assert.deepEqual(body['violated-policies'], [policy]);
  assert.equal(body.retry_after, Number(res.headers['retry-after']));
}

describe('rate limits', () => {
  test('every answer announces its policy and what is left: token routes, pages, docs, health, 404s and refusals', async () => {
    const app = await appWith();
    const a = await createAccountWithToken(t.db);
    const withToken = await app.inject({ url: '/api/v1/user-api/categories', headers: { authorization: a.authorization } });
    assert.equal(withToken.statusCode, 200);
    assert.equal(withToken.headers['ratelimit-policy'], '"token";q=1200;w=60, "daily";q=10000;w=86400');
    const s = standing(withToken);
    assert.equal(s.token?.r, 1199);
    assert.equal(s.daily?.r, 9999);
    assert.ok((s.daily?.t ?? 0) > 0 && (s.daily?.t ?? 0) <= 86_400);
    for (const url of ['/docs', '/openapi.json', '/healthz', '/nope', '/signin', '/assets/app.css', '/api/v1/user-api/categories']) {
      const res = await app.inject({ url, remoteAddress: '192.0.2.10' });
      assert.equal(res.headers['ratelimit-policy'], '"ip";q=300;w=60', url);
      assert.ok(standing(res).ip, url);
    }
  });

  test("a request costs its route's units: a reference call 1, a search 2, an export 20, or what the route sets", async () => {
    const app = await appWith();
    const a = await createAccountWithToken(t.db);
    const left = async (url: string) => standing(await app.inject({ url, headers: { authorization: a.authorization } })).token?.r;
    assert.equal(await left('/api/v1/user-api/categories'), 1199);
    assert.equal(await left('/api/v1/_probe/search'), 1197);
    assert.equal(await left('/api/v1/_probe/export'), 1177);
    assert.equal(await left('/api/v1/_probe/priced'), 1175);
  });

  test('a token over its rate answers 429 with Retry-After until the units refill; another token of the account is not held back', async () => {
    const app = await appWith({ RATE_LIMIT_TOKEN_PER_MINUTE: '20' });
    const a = await createAccountWithToken(t.db);
    const call = (authorization: string) => app.inject({ url: '/api/v1/_probe/search', headers: { authorization } });
    for (let i = 0; i < 10; i++) assert.equal((await call(a.authorization)).statusCode, 200);
    const refused = await call(a.authorization);
    assertRefused(refused, 'rate_limited', 'token');
    // 2 units refill at 20 a minute: 6 seconds.
    assert.ok(
      Number(refused.headers['retry-after']) >= 5 && Number(refused.headers['retry-after']) <= 6,
      String(refused.headers['retry-after']),
    );
    assert.equal(standing(refused).token?.r, 0);
    const second = await app.tokens.createToken({ accountId: a.accountId, name: 'second', scopes: ['search'] });
    assert.equal((await call(`Bearer ${second.token}`)).statusCode, 200);
  });

  test('an account past its requests of the day answers 429 quota_exceeded until midnight UTC, without spending its rate', async () => {
    const app = await appWith();
    const a = await createAccountWithToken(t.db);
    await app.quotas.setQuotas(a.accountId, { requestsPerDay: 3 });
    const call = () => app.inject({ url: '/api/v1/user-api/categories', headers: { authorization: a.authorization } });
    const served = [await call(), await call(), await call()];
    assert.deepEqual(
      served.map((r) => standing(r).daily?.r),
      [2, 1, 0],
    );
    const refused = await call();
    assertRefused(refused, 'quota_exceeded', 'daily');
    const now = new Date();
    const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
    assert.ok(Math.abs(Number(refused.headers['retry-after']) - (midnight - now.getTime()) / 1000) < 5);
    assert.equal(standing(refused).token?.r, 1197, 'the refused request cost nothing');
    // The count is the usage count, so it survives a flush and another process reading it.
    await app.usage.flush();
    const other = await appWith();
    assertRefused(
      await other.inject({ url: '/api/v1/user-api/categories', headers: { authorization: a.authorization } }),
      'quota_exceeded',
      'daily',
    );
  });

  test('requests without a valid token, refusals included, are counted per IP', async () => {
    const app = await appWith({ RATE_LIMIT_IP_PER_MINUTE: '3' });
    const from = (remoteAddress: string, url = '/healthz', authorization?: string) =>
      app.inject({ url, remoteAddress, headers: authorization ? { authorization } : {} });
    assert.equal((await from('192.0.2.20')).statusCode, 200);
    assert.equal((await from('192.0.2.20', '/api/v2/countries')).statusCode, 401);
    assert.equal((await from('192.0.2.20', '/api/v2/countries', 'Bearer la_pat_nonsense')).statusCode, 401);
    const refused = await from('192.0.2.20', '/api/v2/countries');
    assertRefused(refused, 'rate_limited', 'ip');
    assert.equal(refused.headers['x-content-type-options'], 'nosniff');
    assertRefused(await from('192.0.2.20', '/docs'), 'rate_limited', 'ip');
    assert.equal((await from('192.0.2.21')).statusCode, 200);
    // IPv6 addresses count by their /64.
    assert.equal((await from('2001:db8:1:2::1')).statusCode, 200);
    assert.equal((await from('2001:db8:1:2:ffff::9')).statusCode, 200);
    assert.equal((await from('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).statusCode, 200);
    assertRefused(await from('2001:db8:1:2::77'), 'rate_limited', 'ip');
    assert.equal((await from('2001:db8:1:3::1')).statusCode, 200);
  });

  test('an IPv6 address is keyed by its /64 and an IPv4-mapped one by its IPv4', () => {
    assert.equal(ipKey('2001:db8:0:12::1'), '2001:db8:0:12::/64');
    assert.equal(ipKey('2001:DB8:0000:0012:1:2:3:4'), '2001:db8:0:12::/64');
    assert.equal(ipKey('::1'), '0:0:0:0::/64');
    assert.equal(ipKey('::ffff:192.0.2.1'), '192.0.2.1');
    assert.equal(ipKey('192.0.2.1'), '192.0.2.1');
  });

  test('two servers sharing Redis share one budget per token', async () => {
    const env = {
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: `leadatlas-test:${randomBytes(4).toString('hex')}:`,
      RATE_LIMIT_TOKEN_PER_MINUTE: '20',
    };
    const [one, two] = [await appWith(env), await appWith(env)];
    const a = await createAccountWithToken(t.db);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await (i % 2 === 0 ? one : two).inject({ url: '/api/v1/_probe/search', headers: { authorization: a.authorization } });
      statuses.push(res.statusCode);
    }
    // 20 units at 2 a search: ten searches in all, whichever server answers.
    assert.deepEqual(statuses, [...Array<number>(10).fill(200), 429, 429]);
  });

  test('with Redis unreachable the API still answers, limits counted in each process', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const app = await appWith({ REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_TOKEN_PER_MINUTE: '20' });
    const a = await createAccountWithToken(t.db);
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++)
      statuses.push((await app.inject({ url: '/api/v1/_probe/search', headers: { authorization: a.authorization } })).statusCode);
    assert.deepEqual(statuses, [...Array<number>(10).fill(200), 429]);
  });
});
