import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { AppError } from '../../infra/errors.ts';
import { MemoryRateLimiter } from '../../infra/ratelimit/ratelimit.ts';
import { AccountService, loginLimits, sessionLifetimeDays, verifyCsrf } from './accounts.service.ts';

const password = 'a long enough password';
let n = 0;
const uniqueEmail = () => `Person.${process.pid}.${++n}@Example.com`;

function code(expected: string, check: (e: AppError) => void = () => {}) {
  return (e: unknown) => {
    assert.ok(e instanceof AppError, String(e));
    assert.equal(e.code, expected);
    check(e);
    return true;
  };
}

for (const dialect of dialects) {
  describe(`AccountService on ${dialect.name}`, () => {
    let t: TestDatabase;
    let accounts: AccountService;
    before(async () => {
      t = await dialect.open('migrated');
      accounts = new AccountService(t.db, new MemoryRateLimiter());
    });
    after(() => t.dispose());

    test('stores an argon2id hash of the password, never the password itself', async () => {
      const email = uniqueEmail();
      const account = await accounts.signUp(email, password, null);
      assert.equal(account.email, email);
      const row = await t.db.kysely.selectFrom('accounts').selectAll().where('id', '=', account.id).executeTakeFirstOrThrow();
      assert.match(row.password_hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
      assert.ok(!JSON.stringify(row).includes(password));
      assert.equal(row.email_norm, email.toLowerCase());
    });

    test('refuses a second account with the same email in another case', async () => {
      const email = uniqueEmail();
      await accounts.signUp(email, password, null);
      await assert.rejects(
        accounts.signUp(` ${email.toUpperCase()} `, password, null),
        code('conflict', (e) => assert.equal(e.extras.errors?.[0]?.field, 'email')),
      );
    });

    test('refuses a malformed email and a short password, naming both fields', async () => {
      await assert.rejects(
        accounts.signUp('not-an-email', 'short', null),
        code('validation_failed', (e) => {
          assert.deepEqual(
            e.extras.errors?.map((x) => x.field),
            ['email', 'password'],
          );
        }),
      );
    });

    test('signs in with the right password, case-insensitively on the email', async () => {
      const email = uniqueEmail();
      const created = await accounts.signUp(email, password, null);
      const signedIn = await accounts.signIn(email.toLowerCase(), password, '198.51.100.1');
      assert.equal(signedIn.id, created.id);
    });

    test('gives the same answer for a wrong password and an unknown email', async () => {
      const email = uniqueEmail();
      await accounts.signUp(email, password, null);
      const detail = (e: AppError) =>
        assert.deepEqual([e.message, e.extras.reason], ['The email or password is not correct', 'bad_credentials']);
      await assert.rejects(accounts.signIn(email, 'wrong password!', '198.51.100.2'), code('unauthorized', detail));
      await assert.rejects(accounts.signIn(uniqueEmail(), password, '198.51.100.2'), code('unauthorized', detail));
    });

    test('throttles sign-in per account and IP: 429 with Retry-After after 5 attempts in a minute, even with the right password', async () => {
      const email = uniqueEmail();
      await accounts.signUp(email, password, null);
      const ip = '198.51.100.3';
      for (let i = 0; i < loginLimits.perAccountAndIp.limit; i++) {
        await assert.rejects(accounts.signIn(email, 'wrong password!', ip), code('unauthorized'));
      }
      await assert.rejects(
        accounts.signIn(email, password, ip),
        code('rate_limited', (e) => {
          assert.match(e.headers['retry-after'] ?? '', /^\d+$/);
          assert.ok(Number(e.headers['retry-after']) <= 60);
        }),
      );
      // Another IP is not held back by this one's attempts.
      assert.ok(await accounts.signIn(email, password, '198.51.100.4'));
    });

    test('throttles sign-in per IP across accounts after 20 attempts in a minute', async () => {
      const ip = '198.51.100.5';
      for (let i = 0; i < loginLimits.perIp.limit; i++) {
        await assert.rejects(accounts.signIn(uniqueEmail(), password, ip), code('unauthorized'));
      }
      await assert.rejects(accounts.signIn(uniqueEmail(), password, ip), code('rate_limited'));
    });

    test('throttles sign-up per IP and for everyone before hashing, with Retry-After; an administrator is not throttled', async () => {
      const throttled = new AccountService(t.db, new MemoryRateLimiter(), undefined, { perIpPerHour: 2, perHour: 3 });
      await throttled.signUp(uniqueEmail(), password, '198.51.100.20');
      // A taken email is refused with 409 but still spends the IP's allowance: probing costs the same as creating.
      const taken = uniqueEmail();
      await accounts.signUp(taken, password, null);
      await assert.rejects(throttled.signUp(taken, password, '198.51.100.20'), code('conflict'));
      await assert.rejects(
        throttled.signUp(uniqueEmail(), password, '198.51.100.20'),
        code('rate_limited', (e) => {
          // Two an hour: the next one in half an hour.
          const wait = Number(e.headers['retry-after']);
          assert.ok(wait > 1700 && wait <= 1800, String(wait));
          assert.match(e.message, /from this address; try again in \d+ minutes/);
        }),
      );
      // Another address gets one more, then the limit for everyone (3 an hour) holds it back too.
      await throttled.signUp(uniqueEmail(), password, '198.51.100.21');
      await assert.rejects(
        throttled.signUp(uniqueEmail(), password, '198.51.100.22'),
        code('rate_limited', (e) => assert.match(e.message, /right now/)),
      );
      assert.ok(await throttled.signUp(uniqueEmail(), password, null));
    });

    test('a session lives until sign-out, and its CSRF token is checked exactly', async () => {
      const account = await accounts.signUp(uniqueEmail(), password, null);
      const { cookieValue, session } = await accounts.createSession(account.id, { ip: '198.51.100.6', userAgent: 'test' });
      const found = await accounts.getSession(cookieValue);
      assert.equal(found?.accountId, account.id);
      assert.equal(found?.csrfToken, session.csrfToken);
      assert.ok(verifyCsrf(session, session.csrfToken));
      assert.equal(verifyCsrf(session, `${session.csrfToken.slice(0, -1)}A`), session.csrfToken.endsWith('A'));
      assert.equal(verifyCsrf(session, undefined), false);
      const stored = await t.db.kysely.selectFrom('sessions').select('id_hash').where('account_id', '=', account.id).execute();
      assert.ok(
        stored.every((s) => s.id_hash !== cookieValue),
        'only a hash of the cookie is stored',
      );
      await accounts.destroySession(cookieValue);
      assert.equal(await accounts.getSession(cookieValue), null);
      assert.equal(await accounts.getSession('made-up'), null);
    });

    test('a session ends after 14 days, and the next sign-in clears it from the table', async () => {
      let now = Date.parse('2026-11-21T08:00:00.000Z');
      const clocked = new AccountService(t.db, new MemoryRateLimiter(), () => new Date(now));
      const account = await clocked.signUp(uniqueEmail(), password, null);
      const first = await clocked.createSession(account.id, { ip: null, userAgent: null });
      assert.equal(first.session.expiresAt, new Date(now + sessionLifetimeDays * 86_400_000).toISOString());
      now += sessionLifetimeDays * 86_400_000 - 1;
      assert.ok(await clocked.getSession(first.cookieValue));
      now += 1;
      assert.equal(await clocked.getSession(first.cookieValue), null);
      await clocked.createSession(account.id, { ip: null, userAgent: null });
      const rows = await t.db.kysely.selectFrom('sessions').select('expires_at').where('account_id', '=', account.id).execute();
      assert.equal(rows.length, 1);
    });

    test('changing the password needs the current one and signs out the other sessions', async () => {
      const email = uniqueEmail();
      const account = await accounts.signUp(email, password, null);
      const here = await accounts.createSession(account.id, { ip: null, userAgent: null });
      const elsewhere = await accounts.createSession(account.id, { ip: null, userAgent: null });
      await assert.rejects(
        accounts.changePassword(account.id, 'not the password', 'a new long password', here.cookieValue),
        code('validation_failed', (e) => assert.equal(e.extras.errors?.[0]?.field, 'current_password')),
      );
      await assert.rejects(
        accounts.changePassword(account.id, password, 'short', here.cookieValue),
        code('validation_failed', (e) => assert.equal(e.extras.errors?.[0]?.field, 'new_password')),
      );
      await accounts.changePassword(account.id, password, 'a new long password', here.cookieValue);
      assert.ok(await accounts.getSession(here.cookieValue));
      assert.equal(await accounts.getSession(elsewhere.cookieValue), null);
      await assert.rejects(accounts.signIn(email, password, '198.51.100.7'), code('unauthorized'));
      assert.ok(await accounts.signIn(email, 'a new long password', '198.51.100.7'));
    });
  });
}
