import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout } from 'node:timers/promises';
import { createAccountWithToken } from '../../../test/helpers/accounts.ts';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { AppError } from '../../infra/errors.ts';
import { TokenService, tokenCacheTtlMs } from './tokens.service.ts';

const day = 86_400_000;

/** A clock the test moves by hand. */
function manualClock(start = Date.parse('2026-11-21T08:00:00.000Z')) {
  let t = start;
  return { now: () => new Date(t), advance: (ms: number) => (t += ms) };
}

async function rejectsWith(promise: Promise<unknown>, code: string, field?: string): Promise<void> {
  await assert.rejects(promise, (e: unknown) => {
    assert.ok(e instanceof AppError, String(e));
    assert.equal(e.code, code);
    if (field)
      assert.ok(
        e.extras.errors?.some((x) => x.field === field),
        JSON.stringify(e.extras),
      );
    return true;
  });
}

for (const dialect of dialects) {
  describe(`TokenService on ${dialect.name}`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await dialect.open('migrated');
    });
    after(() => t.dispose());

    test('creates a token that expires in 90 days by default and stores only its hash', async () => {
      const clock = manualClock();
      const { accountId } = await createAccountWithToken(t.db);
      const tokens = new TokenService(t.db, { now: clock.now });
      const { token, record } = await tokens.createToken({ accountId, name: ' CRM sync ', scopes: ['search', 'places:read'] });
      assert.equal(record.name, 'CRM sync');
      assert.deepEqual(record.scopes, ['places:read', 'search']);
      assert.equal(record.expiresAt, new Date(clock.now().getTime() + 90 * day).toISOString());
      assert.equal(record.status, 'active');
      assert.ok(token.startsWith(record.displayPrefix));
      const row = await t.db.kysely.selectFrom('api_tokens').selectAll().where('id', '=', record.id).executeTakeFirstOrThrow();
      assert.ok(!Object.values(row).some((v) => typeof v === 'string' && v.includes(token.slice(7))), 'the token value is not stored');
      const verified = await tokens.verifyToken(token);
      assert.ok(verified.ok);
      assert.equal(verified.auth.accountId, accountId);
      assert.deepEqual([...verified.auth.scopes], ['places:read', 'search']);
    });

    test('accepts an expiry of up to one year, or none, and refuses longer', async () => {
      const { accountId } = await createAccountWithToken(t.db);
      const tokens = new TokenService(t.db);
      const year = await tokens.createToken({ accountId, name: 'year', scopes: ['export'], expiresInDays: 365 });
      assert.ok(year.record.expiresAt);
      const never = await tokens.createToken({ accountId, name: 'forever', scopes: ['export'], expiresInDays: null });
      assert.equal(never.record.expiresAt, null);
      await rejectsWith(
        tokens.createToken({ accountId, name: 'too long', scopes: ['export'], expiresInDays: 366 }),
        'validation_failed',
        'expires_in_days',
      );
      await rejectsWith(
        tokens.createToken({ accountId, name: 'zero', scopes: ['export'], expiresInDays: 0 }),
        'validation_failed',
        'expires_in_days',
      );
    });

    test('refuses an empty name, no scopes and unknown scopes, naming the allowed scopes', async () => {
      const { accountId } = await createAccountWithToken(t.db);
      const tokens = new TokenService(t.db);
      await rejectsWith(tokens.createToken({ accountId, name: '  ', scopes: ['search'] }), 'validation_failed', 'name');
      await rejectsWith(tokens.createToken({ accountId, name: 'x', scopes: [] }), 'validation_failed', 'scopes');
      await assert.rejects(tokens.createToken({ accountId, name: 'x', scopes: ['admin'] }), (e: AppError) => {
        assert.deepEqual(e.extras.errors?.[0]?.allowed, [
          'places:read',
          'search',
          'export',
          'suppressions:write',
          'enrich',
          'monitors',
          'match',
        ]);
        return true;
      });
    });

    test('reports a token as expired once its expiry passes', async () => {
      const clock = manualClock();
      const { accountId } = await createAccountWithToken(t.db);
      const tokens = new TokenService(t.db, { now: clock.now, cacheTtlMs: 0 });
      const { token, record } = await tokens.createToken({ accountId, name: 'short', scopes: ['search'], expiresInDays: 1 });
      assert.ok((await tokens.verifyToken(token)).ok);
      clock.advance(day);
      assert.deepEqual(await tokens.verifyToken(token), { ok: false, reason: 'expired' });
      assert.equal((await tokens.getToken(accountId, record.id)).status, 'expired');
    });

    test('a rotated token works until the grace period the user chose ends; the new one keeps name, scopes and lifetime', async () => {
      const clock = manualClock();
      const { accountId } = await createAccountWithToken(t.db);
      const tokens = new TokenService(t.db, { now: clock.now });
      const old = await tokens.createToken({ accountId, name: 'deploy', scopes: ['search', 'export'], expiresInDays: 30 });
      assert.ok((await tokens.verifyToken(old.token)).ok, 'cached before rotation');
      clock.advance(10 * day);
      const rotated = await tokens.rotateToken(accountId, old.record.id, 600);
      assert.equal(rotated.record.name, 'deploy');
      assert.deepEqual(rotated.record.scopes, ['search', 'export']);
      assert.equal(rotated.record.expiresAt, new Date(clock.now().getTime() + 30 * day).toISOString());
      assert.equal(rotated.previous.status, 'rotating');
      assert.equal(rotated.previous.rotatedToId, rotated.record.id);
      clock.advance(599_000);
      assert.ok((await tokens.verifyToken(old.token)).ok, 'inside the grace period');
      clock.advance(1000);
      assert.deepEqual(await tokens.verifyToken(old.token), { ok: false, reason: 'revoked' });
      assert.ok((await tokens.verifyToken(rotated.token)).ok);
      assert.equal((await tokens.getToken(accountId, old.record.id)).status, 'revoked');
      await rejectsWith(tokens.rotateToken(accountId, old.record.id, 60), 'conflict');
    });

    test('refuses a grace period outside 0 seconds to 7 days', async () => {
      const a = await createAccountWithToken(t.db);
      const tokens = new TokenService(t.db);
      await rejectsWith(tokens.rotateToken(a.accountId, a.tokenId, 7 * 86400 + 1), 'validation_failed', 'grace_seconds');
      await rejectsWith(tokens.rotateToken(a.accountId, a.tokenId, -1), 'validation_failed', 'grace_seconds');
    });

    test('revocation takes effect at once, even for a token the cache holds', async () => {
      const a = await createAccountWithToken(t.db);
      const tokens = new TokenService(t.db, { cacheTtlMs: 60_000 });
      assert.ok((await tokens.verifyToken(a.token)).ok);
      const revoked = await tokens.revokeToken(a.accountId, a.tokenId);
      assert.equal(revoked.status, 'revoked');
      assert.ok(revoked.revokedAt);
      assert.deepEqual(await tokens.verifyToken(a.token), { ok: false, reason: 'revoked' });
    });

    test('a token revoked on another node is refused here within a second, without any message between the nodes', async () => {
      const a = await createAccountWithToken(t.db);
      const nodeA = new TokenService(t.db);
      const nodeB = new TokenService(t.db);
      assert.ok((await nodeB.verifyToken(a.token)).ok, 'node B has it cached');
      await nodeA.revokeToken(a.accountId, a.tokenId);
      await setTimeout(tokenCacheTtlMs + 50);
      assert.ok(tokenCacheTtlMs <= 1000);
      assert.deepEqual(await nodeB.verifyToken(a.token), { ok: false, reason: 'revoked' });
      await Promise.all([nodeA.close(), nodeB.close()]);
    });

    test("another account's token is not found for listing, revoking or rotating", async () => {
      const owner = await createAccountWithToken(t.db);
      const stranger = await createAccountWithToken(t.db);
      const tokens = new TokenService(t.db);
      assert.deepEqual(
        (await tokens.listTokens(stranger.accountId)).map((r) => r.id),
        [stranger.tokenId],
      );
      await rejectsWith(tokens.revokeToken(stranger.accountId, owner.tokenId), 'not_found');
      await rejectsWith(tokens.rotateToken(stranger.accountId, owner.tokenId, 60), 'not_found');
      assert.ok((await tokens.verifyToken(owner.token)).ok);
    });

    test('records the last use (time and IP) at most once a minute', async () => {
      const clock = manualClock();
      const a = await createAccountWithToken(t.db);
      const tokens = new TokenService(t.db, { now: clock.now });
      await tokens.verifyToken(a.token, '203.0.113.7');
      await tokens.settle();
      const first = await tokens.getToken(a.accountId, a.tokenId);
      assert.equal(first.lastUsedAt, clock.now().toISOString());
      assert.equal(first.lastUsedIp, '203.0.113.7');
      clock.advance(30_000);
      await tokens.verifyToken(a.token, '203.0.113.8');
      await tokens.settle();
      assert.equal((await tokens.getToken(a.accountId, a.tokenId)).lastUsedIp, '203.0.113.7');
      clock.advance(30_000);
      await tokens.verifyToken(a.token, '203.0.113.9');
      await tokens.settle();
      const third = await tokens.getToken(a.accountId, a.tokenId);
      assert.equal(third.lastUsedIp, '203.0.113.9');
      assert.equal(third.lastUsedAt, clock.now().toISOString());
    });

    test('tells a malformed token from an unknown one', async () => {
      const a = await createAccountWithToken(t.db);
      const tokens = new TokenService(t.db);
      assert.deepEqual(await tokens.verifyToken(a.token.slice(0, -1)), { ok: false, reason: 'malformed' });
      await t.db.kysely.deleteFrom('api_tokens').where('id', '=', a.tokenId).execute();
      assert.deepEqual(await tokens.verifyToken(a.token), { ok: false, reason: 'unknown' });
    });
  });
}
