import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { startDnsServer } from '../../../test/helpers/dns-server.ts';
import { testPlaceRecord, writePlaces } from '../../../test/helpers/places.ts';
import { evaluateMonitors } from '../monitors/monitors.evaluator.ts';
import { refreshTrust } from '../trust/trust.service.ts';
import { Crawler } from './crawler/crawler.ts';
import { EmailDomainChecker } from './email-check.ts';
import { createResolver } from './resolver.ts';
import { verifyOnce } from './verify.ts';

const userAgent = 'Mozilla/5.0 (compatible; LeadAtlasBot/1.0; +https://leadatlas.example/bot)';
const longAgo = '2026-01-01T00:00:00.000Z';

/**
 * `leadatlas verify` (`verifyOnce`) against a local web: an HTTP server on loopback answering real-looking site
 * names, named by a DNS server of the test's own that also holds (or lacks) the email domains' MX records. The
 * websites and domains last checked long ago are checked again through the crawler (robots.txt, its
 * User-Agent), a fresh one is left alone, an inconclusive fetch keeps what was known; the places' trust follows
 * at once, and a monitor of their search records the changes of status as `changed` events naming the field.
 */
describe('re-verification of websites and email domains (SQLite)', { timeout: 240_000 }, () => {
  let web: Server;
  let port = 0;
  let dns: { address: string; close(): Promise<void> };
  const requests: Array<{ host: string; path: string; agent: string | undefined }> = [];
  let t: TestApp;
  let account: TestAccount;

  const pages: Record<string, (path: string) => { status: number; body?: string; location?: string }> = {
    'alive.example': () => ({ status: 200, body: '<html><body><h1>Bäckerei Alive</h1><p>Brot seit 1902.</p></body></html>' }),
    'parked.example': () => ({
      status: 200,
      body: '<html><body><p>This domain is for sale!</p><a href="https://sedo.com/search/details/?domain=parked.example">Buy</a></body></html>',
    }),
    'moved.example': () => ({ status: 301, location: `http://elsewhere.example:PORT/` }),
    'elsewhere.example': () => ({ status: 200, body: '<html><body><h1>Elsewhere GmbH</h1></body></html>' }),
    'private.example': (path) =>
      path === '/robots.txt' ? { status: 200, body: 'User-agent: *\nDisallow: /\n' } : { status: 200, body: '<p>private</p>' },
    'fresh.example': () => ({ status: 200, body: '<p>fresh</p>' }),
  };

  before(async () => {
    web = createServer((req, res) => {
      const host = (req.headers.host ?? '').replace(/:\d+$/, '');
      requests.push({ host, path: req.url ?? '', agent: req.headers['user-agent'] });
      const answer = pages[host]?.(req.url ?? '/') ?? { status: 404 };
      if (req.url === '/robots.txt' && host !== 'private.example') answer.status = 404;
      res.statusCode = answer.status;
      if (answer.location) res.setHeader('location', answer.location.replace('PORT', String(port)));
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(answer.status === 200 ? answer.body : '');
    });
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.2', resolve));
    port = (web.address() as AddressInfo).port;
    const a = { A: ['127.0.0.2'] };
    dns = await startDnsServer({
      'alive.example': a,
      'parked.example': a,
      'moved.example': a,
      'elsewhere.example': a,
      'private.example': a,
      'fresh.example': a,
      // gone.example has no name any more; post-baeckerei.de gained mail servers, verloren-gmbh.de lost its.
      'post-baeckerei.de': { MX: [{ exchange: 'mx.post-baeckerei.de', priority: 10 }] },
    });
    t = await buildTestApp({ dialect: 'sqlite', env: { TRUST_POLL_MS: '0', MONITOR_POLL_MS: '3600000', SEARCH_TIME_BUDGET_MS: '60000' } });
    account = await createAccountWithToken(t.db);

    const sites = ['alive', 'gone', 'parked', 'moved', 'private', 'fresh'];
    await writePlaces(
      t.db,
      sites.map((s, i) =>
        testPlaceRecord('verify', s, {
          country_code: 'MC',
          website: `http://${s}.example:${port}/`,
          email: i === 0 ? 'info@post-baeckerei.de' : i === 1 ? 'info@verloren-gmbh.de' : null,
        }),
      ),
    );
    const places = await t.db.kysely.selectFrom('places').select(['id', 'website']).where('source', '=', 'verify').execute();
    for (const [i, p] of places.entries()) {
      const host = new URL(p.website!).hostname;
      const fresh = host === 'fresh.example';
      const site = await t.db.kysely
        .insertInto('enrich_sites')
        .values({
          site_key: host,
          url: p.website!,
          country_code: 'MC',
          status: 'done',
          due_at: '2099-01-01T00:00:00.000Z',
          crawled_at: longAgo,
          outcome: 'ok',
          site_status: 'live',
          status_checked_at: fresh ? new Date().toISOString() : longAgo,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      await t.db.kysely
        .updateTable('places')
        .set({ enrich_site_id: Number(site.id), enrich_basis: p.website })
        .where('id', '=', Number(p.id))
        .execute();
      assert.ok(i >= 0);
    }
    await t.db.kysely
      .insertInto('email_domains')
      .values([
        { domain: 'post-baeckerei.de', status: 'no_mx', checked_at: longAgo },
        { domain: 'verloren-gmbh.de', status: 'valid_domain', checked_at: longAgo },
      ])
      .execute();
    // The trust pass as a server runs it: every place judged from what is stored (the checks of January).
    await refreshTrust(t.db);
  });
  after(async () => {
    await t?.close();
    await dns?.close();
    await new Promise((resolve) => web?.close(resolve));
  });

  const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
    t.app.inject({ method, url, headers: { authorization: account.authorization }, ...(payload ? { payload } : {}) });

  test('checks what is due through the crawler, keeps what a fetch could not tell, and monitors see each change of status', async () => {
    const statusOf = async (source: string) =>
      t.db.kysely
        .selectFrom('places')
        .select(['website_status', 'email_status', 'verified_at'])
        .where('source', '=', 'verify')
        .where('source_id', '=', source)
        .executeTakeFirstOrThrow();
    assert.equal((await statusOf('gone')).website_status, 'live');
    assert.equal((await statusOf('gone')).email_status, 'valid_domain');

    const search = await call('GET', '/api/v2/map/search?country=MC');
    assert.equal(search.statusCode, 200, search.body);
    const monitor = await call('POST', '/api/v2/monitors', { search_id: (search.json() as { search_id: string }).search_id });
    assert.equal(monitor.statusCode, 201, monitor.body);

    // Generous timeouts: a check that times out is `unknown`, which keeps the last verdict (a loaded host is not a dead domain).
    const resolver = createResolver({ dnsServers: [dns.address], timeoutMs: 5000 });
    const crawler = new Crawler({
      userAgent,
      resolver,
      allowPrivate: true,
      connectTimeoutMs: 5000,
      headersTimeoutMs: 5000,
      bodyTimeoutMs: 5000,
      maxPageBytes: 1 << 20,
      maxPagesPerSite: 1,
      maxRedirects: 5,
      perHostDelayMs: 0,
      concurrency: 4,
    });
    let summary: Awaited<ReturnType<typeof verifyOnce>>;
    try {
      summary = await verifyOnce({
        db: t.db,
        crawler,
        checker: new EmailDomainChecker({ resolver }),
        afterDays: 30,
        limit: 100,
        concurrency: 4,
      });
    } finally {
      crawler.close();
    }

    const sites = new Map<string, { site_status: string | null; final_domain: string | null; status_checked_at: string | null }>(
      (await t.db.kysely.selectFrom('enrich_sites').select(['site_key', 'site_status', 'final_domain', 'status_checked_at']).execute()).map(
        (s) => [s.site_key, s],
      ),
    );
    assert.equal(sites.get('alive.example')!.site_status, 'live');
    assert.notEqual(sites.get('alive.example')!.status_checked_at, longAgo, 'checked again');
    assert.equal(sites.get('gone.example')!.site_status, 'dead');
    assert.equal(sites.get('parked.example')!.site_status, 'parked');
    assert.equal(sites.get('moved.example')!.site_status, 'redirected');
    assert.equal(sites.get('moved.example')!.final_domain, 'elsewhere.example');
    // robots.txt forbids the home page: the fetch tells nothing, so the last verdict and its date stay.
    assert.equal(sites.get('private.example')!.site_status, 'live');
    assert.equal(sites.get('private.example')!.status_checked_at, longAgo);
    assert.equal(requests.filter((r) => r.host === 'fresh.example').length, 0, 'a site checked recently is not fetched');
    assert.equal(requests.filter((r) => r.host === 'private.example' && r.path === '/').length, 0, 'robots.txt is obeyed');
    assert.ok(
      requests.every((r) => r.agent === userAgent),
      'every request says who it is',
    );
    assert.ok(requests.filter((r) => r.host === 'alive.example' && r.path !== '/robots.txt').length === 1, 'the home page only');
    const domains = new Map((await t.db.kysely.selectFrom('email_domains').selectAll().execute()).map((d) => [d.domain, d.status]));
    assert.deepEqual(Object.fromEntries(domains), { 'post-baeckerei.de': 'valid_domain', 'verloren-gmbh.de': 'no_mx' });
    assert.equal(summary.sites, 5, 'the fresh site is not due');
    assert.equal(summary.domains, 2);
    // gone → dead, parked, moved → redirected; post-baeckerei.de gained MX, verloren-gmbh.de lost it.
    assert.equal(summary.changed, 5);

    // The places were judged again at once.
    assert.equal((await statusOf('gone')).website_status, 'dead');
    assert.equal((await statusOf('gone')).email_status, 'no_mx');
    assert.equal((await statusOf('alive')).email_status, 'valid_domain');
    assert.ok(((await statusOf('alive')).verified_at ?? '') > longAgo);

    // The monitor of their search: one `changed` event per place whose status moved, naming the field.
    await evaluateMonitors(t.db, { notify: async () => {} } as never);
    const events = await call('GET', `/api/v2/monitors/${(monitor.json() as { id: string }).id}/events?per_page=100`);
    assert.equal(events.statusCode, 200, events.body);
    const changed = (events.json() as { data: Array<{ kind: string; place: { name: string }; changed_fields: string[] }> }).data
      .filter((e) => e.kind === 'changed')
      .map((e) => [e.place.name, [...e.changed_fields].sort()]);
    assert.deepEqual(
      changed.sort(),
      [
        ['Trattoria alive', ['email_status']],
        ['Trattoria gone', ['email_status', 'website_status']],
        ['Trattoria moved', ['website_status']],
        ['Trattoria parked', ['website_status']],
      ].sort(),
    );
  });
});
