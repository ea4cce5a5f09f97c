import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createAccountWithToken } from '../../test/helpers/accounts.ts';
import { describeAuthSuite } from '../../test/helpers/auth-suite.ts';
import { dialects, type TestDatabase } from '../../test/helpers/databases.ts';
import { type App, buildApp } from '../app.ts';
import { loadConfig } from '../config.ts';
import { dailyUsage } from '../modules/auth/usage.service.ts';

for (const dialect of dialects)
  describe(`auth plugin on ${dialect.name}`, () => {
    let t: TestDatabase;
    let app: App;

    before(async () => {
      t = await dialect.open('migrated');
      app = await buildApp({ config: loadConfig({ DATABASE_URL: t.db.url, LOG_LEVEL: 'silent' }), db: t.db });
      // Test-only routes standing in for the API: one plain, one addressing a resource (the caller's tokens).
      app.get(
        '/api/v1/_probe/search',
        { config: { scope: 'search' }, schema: { querystring: { type: 'object', properties: { page: { type: 'integer' } } } } },
        async (request) => ({ accountId: request.auth?.accountId, via: request.auth?.via }),
      );
      app.get(
        '/api/v1/_probe/tokens',
        { config: { scope: 'places:read' }, schema: { querystring: { type: 'object', properties: { id: { type: 'string' } } } } },
        async (request) => {
          const accountId = request.auth?.accountId ?? -1;
          const id = (request.query as { id?: string }).id;
          return id === undefined ? app.tokens.listTokens(accountId) : app.tokens.getToken(accountId, Number(id));
        },
      );
      app.get('/api/v1/_probe/open', async (request) => ({ auth: request.auth }));
    });

    after(async () => {
      await app.close();
      await t.dispose();
    });

    const context = () => ({ app, db: t.db });

    describeAuthSuite({ method: 'GET', url: '/api/v1/_probe/search', scope: 'search' }, context);
    describeAuthSuite(
      {
        method: 'GET',
        url: '/api/v1/_probe/tokens',
        scope: 'places:read',
        foreignResource: async ({ owner }) => ({ url: `/api/v1/_probe/tokens?id=${owner.tokenId}` }),
      },
      context,
    );

    describe('auth plugin', () => {
      test('sets request.auth from the token on a protected route', async () => {
        const a = await createAccountWithToken(t.db, { scopes: ['search'] });
        const res = await app.inject({ url: '/api/v1/_probe/search', headers: { authorization: a.authorization } });
        assert.deepEqual(res.json(), { accountId: a.accountId, via: 'token' });
      });

      test('protected answers, refusals included, carry the API security headers', async () => {
        const a = await createAccountWithToken(t.db, { scopes: ['search'] });
        for (const authorization of [a.authorization, undefined]) {
          const res = await app.inject({ url: '/api/v1/_probe/search', headers: authorization ? { authorization } : {} });
          assert.equal(res.headers['cache-control'], 'no-store');
          assert.equal(res.headers['x-content-type-options'], 'nosniff');
          assert.equal(res.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'");
        }
      });

      test('leaves routes without a scope open and request.auth null', async () => {
        const res = await app.inject({ url: '/api/v1/_probe/open' });
        assert.equal(res.statusCode, 200);
        assert.deepEqual(res.json(), { auth: null });
      });

      test('counts authenticated requests per account, day and route for the usage chart', async () => {
        const a = await createAccountWithToken(t.db, { scopes: ['search'] });
        for (let i = 0; i < 3; i++)
          await app.inject({ url: `/api/v1/_probe/search?page=${i}`, headers: { authorization: a.authorization } });
        // A mistyped last character (never the character it replaces) is refused and not counted.
        const typo = `${a.authorization.slice(0, -1)}${a.authorization.endsWith('x') ? 'y' : 'x'}`;
        await app.inject({ url: '/api/v1/_probe/search', headers: { authorization: typo } });
        await app.usage.flush();
        await app.inject({ url: '/api/v1/_probe/search', headers: { authorization: a.authorization } });
        await app.usage.flush();
        const days = await dailyUsage(t.db, a.accountId, 7);
        assert.equal(days.length, 7);
        assert.deepEqual(days.at(-1), { day: new Date().toISOString().slice(0, 10), count: 4 });
        assert.ok(days.slice(0, -1).every((d) => d.count === 0));
        const rows = await t.db.kysely.selectFrom('usage_daily').select(['route', 'count']).where('account_id', '=', a.accountId).execute();
        assert.deepEqual(rows, [{ route: '/api/v1/_probe/search', count: 4 }]);
      });

      test('records when and from which IP a token was last used', async () => {
        const a = await createAccountWithToken(t.db, { scopes: ['search'] });
        await app.inject({ url: '/api/v1/_probe/search', headers: { authorization: a.authorization }, remoteAddress: '192.0.2.44' });
        await app.tokens.settle();
        const [token] = await app.tokens.listTokens(a.accountId);
        assert.equal(token?.lastUsedIp, '192.0.2.44');
        assert.ok(token?.lastUsedAt);
      });

      test('over one keep-alive connection, a token revoked between two requests is refused on the second', async () => {
        const server = await buildApp({ config: loadConfig({ DATABASE_URL: t.db.url, LOG_LEVEL: 'silent' }), db: t.db });
        server.get('/api/v1/_probe/socket', { config: { scope: 'search' } }, async (request) => ({ accountId: request.auth?.accountId }));
        const address = await server.listen({ host: '127.0.0.1', port: 0 });
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        const get = (authorization: string) =>
          new Promise<{ status: number; reused: boolean; body: string }>((resolve, reject) => {
            const req = httpRequest(`${address}/api/v1/_probe/socket`, { agent, headers: { authorization } }, (res) => {
              let body = '';
              res.on('data', (c: Buffer) => (body += c.toString()));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket, body }));
            });
            req.on('error', reject);
            req.end();
          });
        try {
          const a = await createAccountWithToken(t.db, { scopes: ['search'] });
          const first = await get(a.authorization);
          const second = await get(a.authorization);
          assert.deepEqual([first.status, second.status, second.reused], [200, 200, true]);
          await server.tokens.revokeToken(a.accountId, a.tokenId);
          const third = await get(a.authorization);
          assert.equal(third.reused, true);
          assert.equal(third.status, 401);
          assert.equal(JSON.parse(third.body).reason, 'revoked');
        } finally {
          agent.destroy();
          await server.close();
        }
      });
    });
  });

describe('auth plugin logs', () => {
  test('tokens, session cookies and passwords never appear in the logs', () => {
    const probe = fileURLToPath(new URL('../../test/helpers/log-probe.ts', import.meta.url));
    const run = spawnSync(process.execPath, ['--import', 'tsx', probe], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(run.status, 0, run.stderr);
    const { statuses, secrets } = JSON.parse(run.stderr.trim().split('\n').at(-1) ?? '{}') as { statuses: number[]; secrets: string[] };
    assert.deepEqual(statuses, [200, 401, 401, 200]);
    const logs = run.stdout;
    assert.match(logs, /probe saw headers/);
    assert.match(logs, /probe saw body/);
    assert.match(logs, /\[redacted\]/);
    for (const secret of secrets) {
      assert.ok(!logs.includes(secret), 'a secret appears in the logs');
      // The token minus its checksum (as in the malformed request) must not appear either.
      assert.ok(!logs.includes(secret.slice(0, 20)), 'part of a secret appears in the logs');
    }
  });
});
