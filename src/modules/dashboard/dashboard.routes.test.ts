import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { DashboardClient as Client } from '../../../test/helpers/dashboard-client.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import { type App, buildApp } from '../../app.ts';
import { loadConfig } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { safeNext } from './session.routes.ts';

const password = 'a passphrase long enough';

for (const dialect of dialects)
  describe(`dashboard over http on ${dialect.name}`, () => {
    let app: App;
    let t: TestApp;
    let db: Db;

    before(async () => {
      t = await buildTestApp({ dialect: dialect.name });
      app = t.app;
      db = t.db;
    });
    after(async () => {
      await t.close();
    });

    async function signedUp(): Promise<Client> {
      const c = new Client(app);
      await c.get('/signup');
      const res = await c.post('/signup', { email: `u${Math.random().toString(36).slice(2)}@example.com`, password });
      assert.equal(res.statusCode, 303);
      await c.get(res.headers.location as string);
      return c;
    }

    test('pages carry a strict content security policy and are never cached', async () => {
      const res = await new Client(app).get('/signin');
      assert.equal(res.statusCode, 200);
      const csp = String(res.headers['content-security-policy']);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.doesNotMatch(csp, /unsafe-inline/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.match(csp, /form-action 'self'/);
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.doesNotMatch(res.body, /<script>|<script [^>]*>[^<]/, 'no inline script');
    });

    test('the API keeps answering problem+json, not dashboard pages', async () => {
      const res = await app.inject({ url: '/api/v1/no-such-route' });
      assert.equal(res.statusCode, 404);
      assert.match(String(res.headers['content-type']), /application\/problem\+json/);
    });

    test('a form posted without its token is refused and changes nothing', async () => {
      const c = new Client(app);
      await c.get('/signup');
      const email = 'no-csrf@example.com';
      const res = await c.post('/signup', { email, password }, { csrf: null });
      assert.equal(res.statusCode, 403);
      assert.match(res.body, /This form has expired/);
      assert.equal(await app.accounts.findByEmail(email), null);
    });

    test('a signed-in form must carry the session token, not the pre-sign-in one', async () => {
      const c = new Client(app);
      await c.get('/signup');
      const preToken = c.csrf();
      await c.post('/signup', { email: 'bound@example.com', password });
      const res = await c.post('/tokens', { name: 'x', scopes: 'search', expiry: '30' }, { csrf: preToken });
      assert.equal(res.statusCode, 403);
    });

    test('sign-up opens a session in an HttpOnly SameSite cookie and leads to token creation', async () => {
      const c = new Client(app);
      await c.get('/signup');
      const res = await c.post('/signup', { email: 'cookie@example.com', password });
      assert.equal(res.headers.location, '/tokens/new?welcome=1');
      const setCookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((h) => h.startsWith('la_session='));
      assert.ok(setCookie);
      assert.match(setCookie, /HttpOnly/);
      assert.match(setCookie, /SameSite=Lax/);
      assert.doesNotMatch(setCookie, /Secure/, 'plain http keeps working in development');
    });

    test('over https the session cookie is __Host- prefixed and Secure', async () => {
      const httpsApp = await buildApp({ config: loadConfig({ LOG_LEVEL: 'silent', PUBLIC_URL: 'https://leads.example.com' }), db });
      try {
        const c = new Client(httpsApp);
        const page = await c.get('/signup');
        assert.match(String(page.headers['set-cookie']), /^__Host-la_csrf=.*Secure/);
        assert.match(String(page.headers['strict-transport-security']), /max-age=31536000/);
        const res = await c.post('/signup', { email: 'secure@example.com', password });
        const setCookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((h) => h.startsWith('__Host-la_session='));
        assert.ok(setCookie, 'session cookie set');
        assert.match(setCookie, /Secure/);
        assert.match(setCookie, /Path=\//);
      } finally {
        await httpsApp.close();
      }
    });

    test('signed-out visitors are sent to sign in and come back afterwards', async () => {
      const c = new Client(app);
      const res = await c.get('/tokens');
      assert.equal(res.statusCode, 303);
      assert.equal(res.headers.location, '/signin?next=%2Ftokens');
      await c.get('/signup');
      await c.post('/signup', { email: 'next@example.com', password });
      await c.post('/signout', {});
      await c.get('/signin?next=%2Ftokens');
      const signin = await c.post('/signin', { email: 'next@example.com', password, next: '/tokens' });
      assert.equal(signin.headers.location, '/tokens');
      const offsite = await c
        .post('/signout', {})
        .then(() => c.get('/signin'))
        .then(() => c.post('/signin', { email: 'next@example.com', password, next: '//evil.example/' }));
      assert.equal(offsite.headers.location, '/search');
    });

    test('a wrong password re-renders the form with the error and keeps the email', async () => {
      const c = await signedUp();
      await c.post('/signout', {});
      await c.get('/signin');
      const res = await c.post('/signin', { email: 'who@example.com', password: 'wrong password here' });
      assert.equal(res.statusCode, 401);
      assert.match(res.body, /role="alert"/);
      assert.match(res.body, /The email or password is not correct/);
      assert.match(res.body, /value="who@example.com"/);
    });

    test('a new token is shown once with the first call, and the list shows only its prefix', async () => {
      const c = await signedUp();
      const created = await c.post('/tokens', { name: 'CRM sync', scopes: ['places:read', 'search'], expiry: '90' });
      assert.equal(created.statusCode, 201);
      const token =
        /data-testid="token-value" value="(la_pat_[0-9A-Za-z]+)"/.exec(created.body)?.[1] ??
        /value="(la_pat_[0-9A-Za-z]{36})"/.exec(created.body)?.[1];
      assert.ok(token, 'the token value is on the page');
      assert.ok(created.body.includes(`Authorization: Bearer ${token}`));
      assert.ok(created.body.includes('/api/v1/user-api/places'));
      assert.equal(created.headers['cache-control'], 'no-store');
      const list = await c.get('/tokens');
      assert.equal(list.body.includes(token), false, 'never shown again');
      assert.ok(list.body.includes(`${token.slice(0, 13)}…`));
      assert.match(list.body, /CRM sync/);
      assert.ok((await app.tokens.verifyToken(token)).ok);
    });

    test('token names are escaped in every page that shows them', async () => {
      const c = await signedUp();
      await c.post('/tokens', { name: '<img src=x onerror=alert(1)>', scopes: 'search', expiry: '7' });
      const list = await c.get('/tokens');
      assert.equal(list.body.includes('<img src=x'), false);
      assert.ok(list.body.includes('&lt;img src=x onerror=alert(1)&gt;'));
    });

    test('no expiry needs the confirmation, and is then listed as Never', async () => {
      const c = await signedUp();
      const refused = await c.post('/tokens', { name: 'forever', scopes: 'search', expiry: 'never' });
      assert.equal(refused.statusCode, 400);
      assert.match(refused.body, /must be ticked to create a token without expiry/);
      assert.match(refused.body, /value="forever"/, 'the name is kept');
      const ok = await c.post('/tokens', { name: 'forever', scopes: 'search', expiry: 'never', confirm_no_expiry: 'yes' });
      assert.equal(ok.statusCode, 201);
      assert.match(ok.body, /Never: revoke it when you no longer need it/);
      const list = await c.get('/tokens');
      assert.match(list.body, /<span class="warn-text">Never<\/span>/);
    });

    test('an expiry outside the offered choices and a missing scope are reported on their fields', async () => {
      const c = await signedUp();
      const res = await c.post('/tokens', { name: 'x', expiry: '400' });
      assert.equal(res.statusCode, 400);
      assert.match(res.body, /id="f-expiry-error"/);
      const noScope = await c.post('/tokens', { name: 'x', expiry: '30' });
      assert.equal(noScope.statusCode, 400);
      assert.match(noScope.body, /at least one scope is required/);
    });

    test('revoking from the list stops the token at once', async () => {
      const c = await signedUp();
      const created = await c.post('/tokens', { name: 'to revoke', scopes: 'places:read', expiry: '30' });
      const token = /value="(la_pat_[0-9A-Za-z]{36})"/.exec(created.body)?.[1] as string;
      await c.get('/tokens');
      const id = /action="\/tokens\/(\d+)\/revoke"/.exec(c.lastHtml)?.[1];
      const res = await c.post(`/tokens/${id}/revoke`, {});
      assert.equal(res.statusCode, 303);
      const page = await c.get(res.headers.location as string);
      assert.match(page.body, /Token “to revoke” was revoked/);
      assert.deepEqual(await app.tokens.verifyToken(token), { ok: false, reason: 'revoked' });
    });

    test('rotating shows the new token once and keeps the old one for the chosen grace period', async () => {
      const c = await signedUp();
      const created = await c.post('/tokens', { name: 'deploy', scopes: 'search', expiry: '30' });
      const oldToken = /value="(la_pat_[0-9A-Za-z]{36})"/.exec(created.body)?.[1] as string;
      await c.get('/tokens');
      const id = /action="\/tokens\/(\d+)\/rotate"/.exec(c.lastHtml)?.[1];
      const res = await c.post(`/tokens/${id}/rotate`, { grace_seconds: '86400' });
      assert.equal(res.statusCode, 201);
      const newToken = /value="(la_pat_[0-9A-Za-z]{36})"/.exec(res.body)?.[1] as string;
      assert.notEqual(newToken, oldToken);
      assert.match(res.body, /keeps working until/);
      assert.ok((await app.tokens.verifyToken(oldToken)).ok, 'old token inside its grace period');
      assert.ok((await app.tokens.verifyToken(newToken)).ok);
    });

    test("another account's token cannot be revoked through the dashboard", async () => {
      const owner = await signedUp();
      await owner.post('/tokens', { name: 'mine', scopes: 'search', expiry: '30' });
      await owner.get('/tokens');
      const id = /action="\/tokens\/(\d+)\/revoke"/.exec(owner.lastHtml)?.[1];
      const other = await signedUp();
      await other.get('/tokens');
      const res = await other.post(`/tokens/${id}/revoke`, {});
      assert.equal(res.statusCode, 404);
      assert.match(String(res.headers['content-type']), /text\/html/);
    });

    test('the usage page shows the last 30 days as a chart and a table', async () => {
      const c = await signedUp();
      const res = await c.get('/usage');
      assert.equal(res.statusCode, 200);
      assert.equal(res.body.match(/class="chart-bar"/g)?.length, 30);
      assert.equal(res.body.match(/<tr><th scope="row"><time/g)?.length, 30);
    });

    test('the usage page shows the quotas, what is used of them, and the token rate limit', async () => {
      const c = await signedUp();
      const res = await c.get('/usage');
      assert.match(res.body, /API requests today<\/th>\s*<td>0<\/td><td>10,000<\/td><td>10,000<\/td>/);
      assert.match(res.body, /Exported rows this month<\/th>\s*<td>0<\/td><td>100,000<\/td>/);
      assert.match(res.body, /Exports running now<\/th>\s*<td>0<\/td><td>2<\/td>/);
      assert.match(res.body, /1,200 units a minute/);
    });

    test('after sign-in, next is followed only to a path of this site, whatever a browser would make of it', async () => {
      const c = new Client(app);
      await c.get('/signup');
      await c.post('/signup', { email: 'next-checks@example.com', password });
      for (const [next, location] of [
        ['/\t/evil.example', '/search'],
        ['/\n/evil.example', '/search'],
        ['/\\evil.example', '/search'],
        ['//evil.example', '/search'],
        ['/..//evil.example', '/search'],
        ['https://evil.example/', '/search'],
        ['/tokens?x=1#top', '/tokens?x=1#top'],
        ['/searches/€', '/searches/%E2%82%AC'],
      ] as const) {
        await c.post('/signout', {});
        await c.get('/signin');
        const res = await c.post('/signin', { email: 'next-checks@example.com', password, next });
        assert.equal(res.statusCode, 303, `${JSON.stringify(next)}: ${res.body.slice(0, 200)}`);
        assert.equal(res.headers.location, location, JSON.stringify(next));
      }
    });

    test('safeNext keeps what stays on this origin, percent-encoded, and drops the rest', () => {
      assert.equal(safeNext('/a b/ü?q=é'), '/a%20b/%C3%BC?q=%C3%A9');
      assert.equal(safeNext('/\u0000x'), '');
      assert.equal(safeNext('/\u007f'), '');
      assert.equal(safeNext('/./\\evil'), '');
      assert.equal(safeNext('///evil.example'), '');
      assert.equal(safeNext(undefined), '');
      assert.equal(safeNext('/'), '/');
    });

    test('a locked-out sign-in page says when to try again in Retry-After', async () => {
      const c = await signedUp();
      const email = /Signed in as <strong>([^<]+)</.exec((await c.get('/account/password')).body)?.[1] ?? '';
      await c.post('/signout', {});
      let res = await c.get('/signin');
      for (let i = 0; i < 6; i++) {
        await c.get('/signin');
        res = await c.post('/signin', { email, password: 'a wrong password here' });
      }
      assert.equal(res.statusCode, 429);
      assert.match(String(res.headers['retry-after']), /^\d+$/);
      assert.ok(Number(res.headers['retry-after']) <= 60);
      assert.match(res.body, /Too many sign-in attempts/);
    });

    test('sign-ups from one address are throttled: the sixth in an hour answers 429 with Retry-After', async () => {
      const c = new Client(app);
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        await c.post('/signout', {}).catch(() => undefined);
        c.cookies.clear();
        await c.get('/signup');
        const res = await c.post('/signup', { email: `burst${i}-${Math.random().toString(36).slice(2)}@example.com`, password });
        statuses.push(res.statusCode);
        if (res.statusCode === 429) {
          assert.ok(Number(res.headers['retry-after']) > 600, String(res.headers['retry-after']));
          assert.match(res.body, /Too many accounts were created from this address/);
        }
      }
      assert.deepEqual(statuses, [303, 303, 303, 303, 303, 429]);
    });

    test('signing out ends the session on the server', async () => {
      const c = await signedUp();
      const cookie = c.cookies.get('la_session');
      assert.ok(cookie);
      await c.get('/tokens');
      await c.post('/signout', {});
      assert.equal(await app.accounts.getSession(cookie), null);
    });

    test('changing the password needs the current one', async () => {
      const c = await signedUp();
      await c.get('/account/password');
      const wrong = await c.post('/account/password', { current_password: 'not it at all', new_password: 'another long passphrase' });
      assert.equal(wrong.statusCode, 400);
      assert.match(wrong.body, /is not correct/);
      const ok = await c.post('/account/password', { current_password: password, new_password: 'another long passphrase' });
      assert.equal(ok.statusCode, 200);
      assert.match(ok.body, /Your password was changed/);
    });

    test('an empty search form asks for a type of business or a city', async () => {
      const c = await signedUp();
      await c.get('/search');
      const res = await c.post('/search', { type: '', city: '' });
      assert.equal(res.statusCode, 400);
      assert.match(res.body, /Enter a type of business, a city, or both|or a city is needed/);
      assert.match(res.body, /id="f-type" name="type"[^>]*aria-invalid="true"/);
    });

    test('an unknown city re-renders the form with its error and keeps what was typed', async () => {
      const c = await signedUp();
      await c.get('/search');
      const res = await c.post('/search', { type: 'restaurant', city: 'Nowhereville-sur-Mer' });
      assert.equal(res.statusCode, 400);
      assert.match(res.body, /is not a known city name/);
      assert.match(res.body, /value="Nowhereville-sur-Mer"/);
      assert.match(res.body, /value="restaurant"/);
    });

    test('a search is saved and shown with its exact total; another account cannot open it', async () => {
      const c = await signedUp();
      await c.get('/search');
      const res = await c.post('/search', { type: 'restaurant', city: 'Monaco', country: 'MC' });
      assert.equal(res.statusCode, 303);
      const url = res.headers.location as string;
      assert.match(url, /^\/searches\/srch_[a-z2-7]{16}$/);
      const page = await c.get(url);
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /data-total="0"/, 'this database has no places');
      assert.match(page.body, /<svg class="map"/);
      const other = await signedUp();
      const denied = await other.get(url);
      assert.equal(denied.statusCode, 404);
      const exported = await other.post(`${url}/export`, { format: 'csv' });
      assert.equal(exported.statusCode, 404);
    });

    test('an export needs the form token and a known format', async () => {
      const c = await signedUp();
      await c.get('/search');
      const url = (await c.post('/search', { type: 'restaurant', city: 'Monaco', country: 'MC' })).headers.location as string;
      await c.get(url);
      const noToken = await c.post(`${url}/export`, { format: 'csv' }, { csrf: null });
      assert.equal(noToken.statusCode, 403);
      const badFormat = await c.post(`${url}/export`, { format: 'pdf' });
      assert.equal(badFormat.statusCode, 400);
      assert.match(badFormat.body, /format must be one of csv, xlsx/);
      const csv = await c.post(`${url}/export`, { format: 'csv' });
      assert.equal(csv.statusCode, 200);
      assert.match(String(csv.headers['content-disposition']), /^attachment; filename="leadatlas-monaco-restaurant-/);
      assert.match(String(csv.headers['x-export-id']), /^exp_/);
      const searches = await c.get('/searches');
      assert.match(searches.body, /Restaurant in Monaco \(MC\)/);
      assert.ok(searches.body.includes(String(csv.headers['x-export-id'])));
    });

    test('export jobs: started from a search with the form token, listed with their file and webhook attempts; the webhook secret is shown and rotated', async () => {
      const c = await signedUp();
      await c.get('/search');
      const url = (await c.post('/search', { type: 'restaurant', city: 'Monaco', country: 'MC' })).headers.location as string;
      const results = await c.get(url);
      assert.match(results.body, /action="\/searches\/srch_[a-z2-7]{16}\/jobs"/);
      assert.equal((await c.post(`${url}/jobs`, { format: 'csv' }, { csrf: null })).statusCode, 403);
      const bad = await c.post(`${url}/jobs`, { format: 'pdf' });
      assert.equal(bad.statusCode, 400);
      const started = await c.post(`${url}/jobs`, { format: 'csv', webhook_url: 'http://127.0.0.1:9/hook' });
      assert.equal(started.statusCode, 303);
      assert.equal(started.headers.location, '/exports');
      const other = await signedUp();
      assert.equal((await other.post(`${url}/jobs`, { format: 'csv' })).statusCode, 404);

      let page = await c.get('/exports');
      for (let i = 0; i < 600 && !(/Ready/.test(page.body) && /Refused/.test(page.body)); i++) {
        await new Promise((r) => setTimeout(r, 50));
        page = await c.get('/exports');
      }
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /<code>job_[A-Za-z0-9_-]{14}<\/code>/);
      assert.match(page.body, /Ready/, 'the job ended with its file');
      assert.match(page.body, /Refused \(address not allowed\) · 1 attempt</, 'the loopback webhook was refused once, and shown');
      assert.match(page.body, /no answer \(refused: 127\.0\.0\.1 resolves to 127\.0\.0\.1, a loopback address/);
      const link = /href="(\/api\/v2\/exports\/job_[^"]+\/download\?[^"]+)"/.exec(page.body)?.[1]?.replaceAll('&amp;', '&');
      assert.ok(link, 'a download link');
      const file = await app.inject({ method: 'GET', url: link });
      assert.equal(file.statusCode, 200);
      assert.match(file.body, /^\uFEFFid,name,/);

      const secret = /id="webhook-secret"[^>]*value="(whsec_[A-Za-z0-9_-]+)"/.exec(page.body)?.[1];
      assert.match(String(secret), /^whsec_/);
      assert.equal((await c.post('/exports/webhook-secret', {}, { csrf: null })).statusCode, 403);
      const rotated = await c.post('/exports/webhook-secret', {});
      assert.equal(rotated.statusCode, 303);
      const after = await c.get(rotated.headers.location as string);
      assert.match(after.body, /A new webhook secret is in force/);
      assert.ok(!after.body.includes(String(secret)), 'the old secret is gone');
      assert.match(after.body, /value="whsec_[A-Za-z0-9_-]{43}"/);
      assert.doesNotMatch((await other.get('/exports')).body, /<code>job_/, "another account's jobs are not listed");
    });
  });
