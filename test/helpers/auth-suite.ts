import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { HTTPMethods, LightMyRequestResponse } from 'fastify';
import type { App } from '../../src/app.ts';
import type { Db } from '../../src/infra/db/database.ts';
import { scopes as allScopes, type Scope } from '../../src/modules/auth/auth.types.ts';
import { generateToken } from '../../src/modules/auth/token-format.ts';
import { createAccountWithToken, type TestAccount } from './accounts.ts';

export interface AuthSuiteContext {
  app: App;
  db: Db;
}

export interface ForeignResourceContext extends AuthSuiteContext {
  /** The other account, which owns the resource, with a token holding every scope. */
  owner: TestAccount;
}

export interface ProtectedRoute {
  method: HTTPMethods;
  /** A URL that succeeds (status below 400) for a valid token with the scope. */
  url: string;
  scope: Scope;
  payload?: string | object;
  headers?: Record<string, string>;
  /**
   * For a route that addresses one resource: creates a resource owned by `owner` and returns the
   * request addressing it; the suite then asks for it with another account's token and expects 404.
   */
  foreignResource?: (ctx: ForeignResourceContext) => Promise<{ url: string; payload?: string | object }>;
  /**
   * For a route that only succeeds on a resource of the caller's own (an export of a saved search):
   * creates one owned by `account` and returns its URL (and body). The suite then uses it for that account's calls;
   * `url` still serves the calls made without a valid token.
   */
  ownResource?: (ctx: AuthSuiteContext, account: TestAccount) => Promise<string | { url: string; payload?: string | object }>;
  /** `ownResource` is used up by a successful call (a DELETE): a new one is made for each call. */
  ownResourcePerCall?: boolean;
}

/**
 * The shared authentication suite: every protected route runs it. `context` is called inside each
 * test, so build the app in a `before` hook of the calling file and hand it over here.
 */
export function describeAuthSuite(route: ProtectedRoute, context: () => AuthSuiteContext): void {
  const call = (authorization: string | undefined, override: { url?: string; payload?: string | object } = {}) => {
    const { app } = context();
    const payload = override.payload ?? route.payload;
    return app.inject({
      method: route.method,
      url: override.url ?? route.url,
      headers: { ...route.headers, ...(authorization === undefined ? {} : { authorization }) },
      ...(payload === undefined ? {} : { payload }),
    });
  };
  // With `ownResource`, each new account's calls go to a resource of its own.
  const ownUrls = new Map<number, { url: string; payload?: string | object }>();
  const account = async (scopes: readonly Scope[] = [route.scope], expiresInDays?: number | null) => {
    const a = await createAccountWithToken(context().db, { scopes, expiresInDays });
    if (route.ownResource) {
      const own = await route.ownResource(context(), a);
      ownUrls.set(a.accountId, typeof own === 'string' ? { url: own } : own);
    }
    return a;
  };
  const callAs = async (a: TestAccount, authorization = a.authorization) => {
    if (route.ownResource && route.ownResourcePerCall) {
      const own = await route.ownResource(context(), a);
      return call(authorization, typeof own === 'string' ? { url: own } : own);
    }
    return call(authorization, ownUrls.get(a.accountId) ?? {});
  };

  describe(`${route.method} ${route.url} authentication (scope ${route.scope})`, () => {
    test('accepts a valid token that has the scope', async () => {
      const a = await account();
      assertWorks(await callAs(a));
    });

    test("announces the token's rate limit and daily quota on success, and the IP's on a refusal", async () => {
      const a = await account();
      const ok = await callAs(a);
      assert.match(String(ok.headers['ratelimit-policy']), /^"token";q=\d+;w=60, "daily";q=\d+;w=86400$/);
      assert.match(String(ok.headers.ratelimit), /^"token";r=\d+;t=\d+, "daily";r=\d+;t=\d+$/);
      const refused = await call(undefined);
      assert.match(String(refused.headers['ratelimit-policy']), /^"ip";q=\d+;w=60$/);
      assert.match(String(refused.headers.ratelimit), /^"ip";r=\d+;t=\d+$/);
    });

    test('answers 401 "missing" with a bare Bearer challenge when no token is sent', async () => {
      const res = await call(undefined);
      assertUnauthorized(res, 'missing');
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="leadatlas"');
    });

    test('answers 401 "malformed" for credentials that are not a LeadAtlas bearer token', async () => {
      const a = await account();
      for (const authorization of [
        'Bearer not-a-token',
        `Basic ${Buffer.from('user:pass').toString('base64')}`,
        a.token,
        `Bearer ${a.token.slice(0, -3)}`,
      ]) {
        assertUnauthorized(await call(authorization), 'malformed');
      }
    });

    test('answers 401 "malformed" for a token whose checksum does not match (one character mistyped)', async () => {
      const a = await account();
      const i = 12;
      const typo = a.token.slice(0, i) + (a.token[i] === 'x' ? 'y' : 'x') + a.token.slice(i + 1);
      assertUnauthorized(await call(`Bearer ${typo}`), 'malformed');
    });

    test('answers 401 "unknown" for a well-formed token that was never issued', async () => {
      assertUnauthorized(await call(`Bearer ${generateToken().token}`), 'unknown');
    });

    test('answers 401 "expired" for a token past its expiry', async () => {
      const a = await account();
      await context()
        .db.kysely.updateTable('api_tokens')
        .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('id', '=', a.tokenId)
        .execute();
      assertUnauthorized(await callAs(a), 'expired');
    });

    test('answers 401 "revoked" for a token revoked after it was used', async () => {
      const a = await account();
      assertWorks(await callAs(a));
      await context().app.tokens.revokeToken(a.accountId, a.tokenId);
      assertUnauthorized(await callAs(a), 'revoked');
    });

    test('keeps a rotated token working within its grace period, alongside the new one', async () => {
      const a = await account();
      assertWorks(await callAs(a));
      const rotated = await context().app.tokens.rotateToken(a.accountId, a.tokenId, 3600);
      assertWorks(await callAs(a));
      assertWorks(await callAs(a, `Bearer ${rotated.token}`));
    });

    test('answers 401 "revoked" for a rotated token after its grace period, while the new one works', async () => {
      const a = await account();
      const rotated = await context().app.tokens.rotateToken(a.accountId, a.tokenId, 3600);
      await context()
        .db.kysely.updateTable('api_tokens')
        .set({ grace_until: new Date(Date.now() - 1000).toISOString() })
        .where('id', '=', a.tokenId)
        .execute();
      assertUnauthorized(await callAs(a), 'revoked');
      assertWorks(await callAs(a, `Bearer ${rotated.token}`));
    });

    test(`answers 403 naming the "${route.scope}" scope for a token without it`, async () => {
      const others = allScopes.filter((s) => s !== route.scope);
      const a = await account(others);
      const res = await callAs(a);
      assert.equal(res.statusCode, 403, res.body);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      const body = res.json();
      assert.equal(body.code, 'forbidden');
      assert.equal(body.reason, 'insufficient_scope');
      assert.equal(body.scope, route.scope);
      assert.match(String(res.headers['www-authenticate']), new RegExp(`error="insufficient_scope".*scope="${route.scope}"`));
    });

    if (route.foreignResource) {
      const foreignResource = route.foreignResource;
      test("answers 404 for another account's resource", async () => {
        const { app, db } = context();
        const owner = await createAccountWithToken(db, { scopes: allScopes });
        const target = await foreignResource({ app, db, owner });
        // The stranger first: a request that removes the resource (a DELETE) must find it still there afterwards.
        const stranger = await account();
        const res = await call(stranger.authorization, target);
        assert.equal(res.statusCode, 404, res.body);
        assert.equal(res.json().code, 'not_found');
        const own = await call(owner.authorization, target);
        assertWorks(own);
      });
    }
  });
}

function assertWorks(res: LightMyRequestResponse): void {
  assert.ok(res.statusCode < 400, `expected success, got ${res.statusCode}: ${res.body}`);
}

function assertUnauthorized(res: LightMyRequestResponse, reason: string): void {
  assert.equal(res.statusCode, 401, res.body);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const body = res.json();
  assert.equal(body.code, 'unauthorized');
  assert.equal(body.reason, reason);
  const challenge = String(res.headers['www-authenticate']);
  assert.match(challenge, /^Bearer realm="leadatlas"/);
  if (reason !== 'missing') assert.match(challenge, /error="invalid_token", error_description="[^"]+"/);
}
