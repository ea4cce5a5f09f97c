import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { cliCommand } from '../../../test/helpers/cli.ts';
import { openTestSqlite } from '../../../test/helpers/databases.ts';
import { TokenService } from './tokens.service.ts';

let t: ReturnType<typeof openTestSqlite>;

function leadatlas(args: string[], input?: string) {
  return spawnSync(...cliCommand(args), {
    encoding: 'utf8',
    input,
    env: { ...process.env, DATABASE_URL: t.url, LOG_LEVEL: 'silent' },
    timeout: 120_000,
  });
}

before(() => {
  t = openTestSqlite();
});
after(() => t.dispose());

test('user create then token create print a working token once, on stdout alone', async () => {
  const user = leadatlas(['user', 'create', '--email', 'Ops@Example.com', '--password-stdin'], 'a long enough password\n');
  assert.equal(user.status, 0, user.stderr);
  assert.equal(user.stdout, '', 'a password read from stdin is not echoed');

  const created = leadatlas([
    'token',
    'create',
    '--user',
    'ops@example.com',
    '--name',
    'deploy',
    '--scopes',
    'search,export',
    '--expires-in',
    '30d',
  ]);
  assert.equal(created.status, 0, created.stderr);
  const token = created.stdout.trim();
  assert.match(token, /^la_pat_[0-9A-Za-z]{36}$/);
  assert.match(created.stderr, /shown only this once/);

  const verified = await new TokenService(t.db).verifyToken(token);
  assert.ok(verified.ok);
  assert.deepEqual([...verified.auth.scopes], ['search', 'export']);
  const [record] = await new TokenService(t.db).listTokens(verified.auth.accountId);
  assert.equal(record?.name, 'deploy');
  assert.ok(record?.expiresAt && Date.parse(record.expiresAt) - Date.now() > 29 * 86_400_000);
});

test('token create refuses an expiry over a year and an unknown account, saying what is allowed', () => {
  const tooLong = leadatlas(['token', 'create', '--user', 'ops@example.com', '--name', 'x', '--expires-in', '400d']);
  assert.notEqual(tooLong.status, 0);
  assert.match(tooLong.stderr, /1 to 365.*or "never"/);
  const unknown = leadatlas(['token', 'create', '--user', 'nobody@example.com', '--name', 'x']);
  assert.equal(unknown.status, 2);
  assert.match(unknown.stderr, /No account with email nobody@example.com/);
});

test('account quota sets values for the account, shows the others as defaults, and puts one back with "default"', async () => {
  const created = leadatlas(['user', 'create', '--email', 'quota@example.com', '--password-stdin'], 'a long enough password\n');
  assert.equal(created.status, 0, created.stderr);
  const set = leadatlas(['account', 'quota', '--email', 'Quota@Example.com', '--requests-per-day', '50', '--export-rows-per-month', '0']);
  assert.equal(set.status, 0, set.stderr);
  assert.match(set.stdout, /API requests per day \(UTC\)\s+50\s+set for this account/);
  assert.match(set.stdout, /exported rows per month\s+0\s+set for this account/);
  assert.match(set.stdout, /exports at once\s+2\s+default/);
  const back = leadatlas(['account', 'quota', '--email', 'quota@example.com', '--requests-per-day', 'default']);
  assert.match(back.stdout, /API requests per day \(UTC\)\s+10000\s+default/);
  assert.match(back.stdout, /exported rows per month\s+0\s+set for this account/);
  const row = await t.db.kysely.selectFrom('account_quotas').selectAll().executeTakeFirstOrThrow();
  assert.deepEqual([row.requests_per_day, Number(row.export_rows_per_month), row.concurrent_exports], [null, 0, null]);
});

test('account quota refuses a value that is not a whole number, and an unknown account', () => {
  const bad = leadatlas(['account', 'quota', '--email', 'quota@example.com', '--requests-per-day', '-5']);
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /a whole number from 0, or "default"/);
  const unknown = leadatlas(['account', 'quota', '--email', 'nobody@example.com']);
  assert.equal(unknown.status, 2);
  assert.match(unknown.stderr, /No account with email nobody@example.com/);
});
