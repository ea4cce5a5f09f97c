/**
 * Run as a child process by src/plugins/auth.test.ts: serves requests carrying a token, a session
 * cookie and a password with logging at `trace`, so the parent can read every log line on stdout.
 * The secrets it used are printed last on stderr, as JSON, for the parent to look for.
 */
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { migrateToLatest } from '../../src/infra/db/migrate.ts';
import { createAccountWithToken } from './accounts.ts';
import { openTestSqlite } from './databases.ts';

const t = openTestSqlite();
await migrateToLatest(t.db);
const app = await buildApp({ config: loadConfig({ DATABASE_URL: t.url, LOG_LEVEL: 'trace' }), db: t.db });
app.get('/api/v1/_probe', { config: { scope: 'search' } }, async (request) => {
  // A careless handler logging every header: redaction must still hide the secrets.
  request.log.info({ headers: request.headers }, 'probe saw headers');
  return { ok: true };
});
app.post('/api/v1/_probe', { config: { scope: 'search' } }, async (request) => {
  request.log.info({ body: request.body }, 'probe saw body');
  return { ok: true };
});

const a = await createAccountWithToken(t.db, { scopes: ['search'] });
const revoked = await createAccountWithToken(t.db, { scopes: ['search'] });
await app.tokens.revokeToken(revoked.accountId, revoked.tokenId);
const { cookieValue } = await app.accounts.createSession(a.accountId, { ip: '127.0.0.1', userAgent: 'log-probe' });

const statuses = [
  await app.inject({ url: '/api/v1/_probe', headers: { authorization: a.authorization, cookie: `la_session=${cookieValue}` } }),
  await app.inject({ url: '/api/v1/_probe', headers: { authorization: a.authorization.slice(0, -1) } }),
  await app.inject({ url: '/api/v1/_probe', headers: { authorization: revoked.authorization } }),
  await app.inject({
    method: 'POST',
    url: '/api/v1/_probe',
    headers: { authorization: a.authorization },
    payload: { password: a.password, token: a.token },
  }),
].map((r) => r.statusCode);
await app.accounts.signIn(a.email, 'a wrong password guess', '127.0.0.1').catch(() => undefined);

await app.close();
await t.dispose();
console.error(JSON.stringify({ statuses, secrets: [a.token, revoked.token, cookieValue, a.password] }));
