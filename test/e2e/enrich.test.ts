import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'csv-parse/sync';
import { type App, buildApp } from '../../src/app.ts';
import { importFiles } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';
import type { Db } from '../../src/infra/db/database.ts';
import { registrableDomain } from '../../src/infra/web-domain.ts';
import { siteOf } from '../../src/modules/contacts/contacts.ts';
import type { Place, PlaceDetails } from '../../src/modules/places/places.schema.ts';
import { createAccountWithToken } from '../helpers/accounts.ts';
import { spawnCli } from '../helpers/cli.ts';
import { dialects, type openTestPostgres, type openTestSqlite } from '../helpers/databases.ts';
import { type DnsZone, startDnsServer } from '../helpers/dns-server.ts';
import { osmDir } from '../helpers/osm.ts';

const monaco = join(osmDir, 'monaco-2026.osm.pbf');

/** A site of the local web: a Monaco place's real host name, and what its contact page says. */
interface TestSite {
  host: string;
  /** The site's start page (the place's website path). */
  key: string;
  email: string;
  phone: string;
  phoneE164: string;
  facebook: string;
}

/**
 * The places' own websites, served on a loopback address of the test's own under their real names
 * (HTTPS on 443 with a certificate the crawler's process is told to trust, HTTP on 80), named by a DNS
 * server of the test's own (ENRICH_DNS_SERVERS). Every request is counted by host and path; while `slow`,
 * each answer waits a little so that a run lasts long enough to be killed in the middle.
 */
class LocalWeb {
  /** Requests by host (without `www.`). */
  readonly requests = new Map<string, number>();
  /** Only the run to be killed needs to last: the runs after it are let through at once. */
  slow = true;
  private servers: Server[] = [];
  certFile = '';

  constructor(
    readonly address: string,
    private readonly sites: Map<string, TestSite>,
    private readonly dir: string,
  ) {}

  private handle = (req: IncomingMessage, res: ServerResponse) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '').replace(/^www\./, '');
    const path = (req.url ?? '/').split('?')[0]!;
    this.requests.set(host, (this.requests.get(host) ?? 0) + 1);
    const site = this.sites.get(host);
    const answer = () => {
      if (!site || path === '/robots.txt') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      if (path === '/contact-us') {
        res.end(`<!doctype html><html><body><h1>Contact</h1>
          <p>Write to us: <a href="mailto:${site.email}">${site.email}</a></p>
          <p>Call us: <a href="tel:${site.phoneE164}">${site.phone}</a></p>
          <p>Follow us on <a href="${site.facebook}">Facebook</a></p></body></html>`);
      } else {
        res.end(
          `<!doctype html><html><body><h1>Welcome</h1><nav><a href="/">Home</a> <a href="/contact-us">Contact</a></nav></body></html>`,
        );
      }
    };
    if (this.slow) setTimeout(answer, 150);
    else answer();
  };

  async start(): Promise<void> {
    const names = [...this.sites.keys()].flatMap((h) => [h, `www.${h}`]);
    const key = join(this.dir, 'key.pem');
    this.certFile = join(this.dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        // An EC key: the TLS the crawler speaks is the same, each handshake of a run costs both sides less.
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        key,
        '-out',
        this.certFile,
        '-days',
        '2',
        '-subj',
        '/CN=LeadAtlas test web',
        '-addext',
        `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}`,
        '-addext',
        'basicConstraints=critical,CA:TRUE',
      ],
      { stdio: 'ignore' },
    );
    const https = createHttpsServer({ key: readFileSync(key), cert: readFileSync(this.certFile) }, this.handle);
    const http = createHttpServer(this.handle);
    this.servers = [https, http];
    await Promise.all([
      new Promise<void>((done) => https.listen(443, this.address, done)),
      new Promise<void>((done) => http.listen(80, this.address, done)),
    ]);
  }

  async close(): Promise<void> {
    for (const s of this.servers) s.closeAllConnections();
    await Promise.all(this.servers.map((s) => new Promise<void>((done) => s.close(() => done()))));
  }
}

/** Monaco's places with a website, by site (the crawl's unit), and a contact page for each host. */
async function sitesOfMonaco(db: Db): Promise<Map<string, TestSite>> {
  const rows = await db.kysely
    .selectFrom('places')
    .select(['website', 'email'])
    .where('closed_at', 'is', null)
    .where('website', 'is not', null)
    .execute();
  const sites = new Map<string, TestSite>();
  let n = 0;
  for (const r of rows) {
    const ref = siteOf(r.website, r.email);
    if (!ref) continue;
    const url = new URL(ref.url);
    const host = url.hostname.replace(/^www\./, '');
    if (sites.has(host)) continue;
    const domain = registrableDomain(host)!;
    const digits = String(150_000 + n++).padStart(6, '0');
    sites.set(host, {
      host,
      key: ref.key,
      email: `contact@${domain}`,
      phone: `+377 93 ${digits.slice(0, 2)} ${digits.slice(2, 4)} ${digits.slice(4)}`,
      phoneE164: `+37793${digits}`,
      facebook: `https://www.facebook.com/${domain.replace(/[^a-z0-9]/g, '')}page`,
    });
  }
  return sites;
}

/**
 * `leadatlas ARGS…` to its end without blocking this process: the DNS server and the web the run asks
 * live here (`runCli` would hold the event loop while it waits).
 */
async function runCliAsync(
  args: string[],
  env: Record<string, string>,
  stdout: 'ignore' | 'stdout' = 'ignore',
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(args, env, ['ignore', stdout === 'stdout' ? 'pipe' : 'ignore', 'pipe']);
  let out = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const [status] = (await once(child, 'exit')) as [number | null];
  return { status, stdout: out, stderr };
}

async function eventually<T>(what: string, check: () => Promise<T | undefined>, limitMs = 120_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

for (const dialect of dialects)
  describe(`leadatlas enrich against a local web of Monaco's sites (${dialect.name})`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'leadatlas-enrich-'));
    // A loopback address of this file's own: ports 80 and 443 on it are free whatever else runs.
    const address = `127.22.${(process.pid % 200) + 20}.${dialect.name === 'sqlite' ? 10 : 20}`;
    let t: Awaited<ReturnType<typeof openTestPostgres>> | ReturnType<typeof openTestSqlite>;
    let dns: Awaited<ReturnType<typeof startDnsServer>>;
    let web: LocalWeb;
    let sites: Map<string, TestSite>;
    let env: Record<string, string>;

    const doneSites = async () => {
      const rows = await t.db.kysely.selectFrom('enrich_sites').select(['site_key', 'status', 'outcome']).execute();
      return rows.filter((r) => r.status === 'done').map((r) => r.site_key);
    };

    before(async () => {
      t = await dialect.open('prepared');
      await importFiles(t.db, [monaco]);
      sites = await sitesOfMonaco(t.db);
      assert.ok(sites.size >= 50, `Monaco's places have many websites: ${sites.size} hosts`);
      const zone: DnsZone = {};
      for (const s of sites.values()) {
        zone[s.host] = { A: [address] };
        zone[`www.${s.host}`] = { A: [address] };
        zone[registrableDomain(s.host)!] = { A: [address], MX: [{ exchange: `mail.${registrableDomain(s.host)}`, priority: 10 }] };
      }
      dns = await startDnsServer(zone);
      web = new LocalWeb(address, sites, dir);
      await web.start();
      env = {
        DATABASE_URL: t.url,
        LOG_LEVEL: 'warn',
        ENRICH_DNS_SERVERS: dns.address,
        ENRICH_ALLOW_PRIVATE_NETWORKS: 'true',
        ENRICH_CONCURRENCY: '4',
        ENRICH_HOST_DELAY_MS: '10',
        ENRICH_LEASE: '5',
        NODE_EXTRA_CA_CERTS: web.certFile,
      };
    });

    after(async () => {
      await web?.close();
      await dns?.close();
      await t?.dispose();
      rmSync(dir, { recursive: true, force: true });
    });

    test('a run killed with SIGKILL in the middle is completed by the next one, which fetches no finished site again', async () => {
      const child = spawnCli(['enrich', '--country', 'MC'], env, ['ignore', 'ignore', 'pipe']);
      let stderr = '';
      child.stderr!.on('data', (d) => (stderr += d));
      const exited = once(child, 'exit');
      const before = await eventually('a few sites crawled', async () => {
        const done = await doneSites();
        return done.length >= 8 ? done : undefined;
      });
      child.kill('SIGKILL');
      await exited;
      web.slow = false;
      const finishedFirst = await doneSites();
      const total = Number(
        (
          await t.db.kysely
            .selectFrom('enrich_sites')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
      assert.ok(
        finishedFirst.length >= before.length && finishedFirst.length < total,
        `killed in the middle: ${finishedFirst.length} of ${total} sites done\n${stderr}`,
      );
      // Hosts whose every site was recorded before the kill: none of them may be asked anything again.
      const finished = new Set(finishedFirst);
      const keysOfHost = new Map<string, Set<string>>();
      for (const r of await t.db.kysely.selectFrom('enrich_sites').select(['site_key', 'url']).execute()) {
        const host = new URL(r.url).hostname.replace(/^www\./, '');
        keysOfHost.set(host, (keysOfHost.get(host) ?? new Set()).add(r.site_key));
      }
      const hostsDone = [...keysOfHost].filter(([, keys]) => [...keys].every((k) => finished.has(k))).map(([host]) => host);
      assert.ok(hostsDone.length >= 5, `${hostsDone.length} hosts finished before the kill`);
      const countsAtKill = new Map(hostsDone.map((host) => [host, web.requests.get(host) ?? 0]));

      const second = await runCliAsync(['enrich', '--country', 'MC'], env);
      assert.equal(second.status, 0, second.stderr);
      assert.match(second.stderr, /enriched \d+ sites/);
      const rows = await t.db.kysely.selectFrom('enrich_sites').select(['site_key', 'status', 'outcome']).execute();
      assert.equal(rows.length, total);
      assert.deepEqual(
        rows.filter((r) => r.status !== 'done'),
        [],
        'every site is done',
      );
      for (const [host, count] of countsAtKill)
        assert.equal(web.requests.get(host), count, `${host} was finished before the kill and not fetched again`);
      const okSites = rows.filter((r) => r.outcome === 'ok');
      assert.ok(okSites.length >= sites.size * 0.9, `most sites answered: ${okSites.length} of ${rows.length}`);

      const third = await runCliAsync(['enrich', '--country', 'MC'], env);
      assert.equal(third.status, 0, third.stderr);
      assert.match(third.stderr, /enriched 0 sites/, 'within the refresh period nothing is due');
    });

    describe('what the sites gave, in search, place details and export', () => {
      let app: App;
      let token: string;
      before(async () => {
        app = await buildApp({
          config: loadConfig({
            DATABASE_URL: t.url,
            LOG_LEVEL: 'silent',
            IMPORT_DEMO_DATA: 'false',
            EXPORT_DATA_DIR: join(dir, 'exports'),
          }),
          db: t.db,
        });
        token = (await createAccountWithToken(t.db)).token;
      });
      after(async () => {
        await app?.close();
      });

      const get = (url: string) => app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });

      test('a place without an email of its own shows the one its website gave, with the page and time it was found', async () => {
        const row = await t.db.kysely
          .selectFrom('places')
          .select(['public_id', 'website', 'email'])
          .where('closed_at', 'is', null)
          .where('email', 'is', null)
          .where('found_email', 'is not', null)
          .orderBy('id')
          .executeTakeFirstOrThrow();
        const host = new URL(siteOf(row.website, null)!.url).hostname.replace(/^www\./, '');
        const site = sites.get(host)!;
        const res = await get(`/api/v1/places/${row.public_id}`);
        assert.equal(res.statusCode, 200, res.body);
        const place = res.json<PlaceDetails>();
        assert.equal(place.email, site.email);
        assert.equal(place.field_sources.email, 'website');
        const email = place.contacts.emails.find((e) => e.address === site.email)!;
        assert.equal(email.source, 'website');
        assert.equal(email.verdict, 'deliverable_domain');
        assert.match(email.page!, /\/contact-us$/);
        assert.ok(Date.parse(email.fetched_at!) > Date.now() - 3_600_000);
        assert.ok(place.contacts.phones.some((p) => p.e164 === site.phoneE164 && p.source === 'website'));
        assert.ok(place.contacts.socials.some((s) => s.network === 'facebook' && s.source === 'website'));
      });

      test("a source email stays the place's email and the found one follows it in the contacts", async () => {
        const row = await t.db.kysely
          .selectFrom('places')
          .select(['public_id', 'email'])
          .where('closed_at', 'is', null)
          .where('email', 'is not', null)
          .where('found_email', 'is not', null)
          .orderBy('id')
          .executeTakeFirstOrThrow();
        const place = (await get(`/api/v1/places/${row.public_id}`)).json<PlaceDetails>();
        assert.equal(place.email, row.email);
        assert.equal(place.contacts.emails[0]!.address, row.email);
        assert.equal(place.contacts.emails[0]!.source, 'osm');
        assert.ok(place.contacts.emails.some((e) => e.source === 'website'));
        assert.equal(place.field_sources.email, undefined);
      });

      test('has_email counts the found addresses, has_social finds the found profiles, and the export carries them', async () => {
        const count = async (filter: string) => {
          const res = await get(`/api/v2/map/search?country=MC&per_page=100&${filter}`);
          assert.equal(res.statusCode, 200, res.body);
          return res.json<{ total: number; data: Place[]; search_id: string }>();
        };
        const withEmail = await count('has_email=true');
        const ownEmails = Number(
          (
            await t.db.kysely
              .selectFrom('places')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('closed_at', 'is', null)
              .where('country_code', '=', 'MC')
              .where('email', 'is not', null)
              .executeTakeFirstOrThrow()
          ).n,
        );
        assert.ok(
          withEmail.total > ownEmails + 50,
          `enriched addresses count: ${withEmail.total} with email, ${ownEmails} from the source`,
        );
        assert.ok(withEmail.data.every((p) => p.email !== null));
        const withoutEmail = await count('has_email=false');
        assert.ok(withoutEmail.data.every((p) => p.email === null && p.contacts.emails.length === 0));
        const social = await count('has_social=true');
        assert.ok(social.total >= sites.size * 0.9);
        assert.ok(social.data.every((p) => p.contacts.socials.length > 0));

        const csv = await get(`/api/v2/map/export?search_id=${social.search_id}&format=csv`);
        assert.equal(csv.statusCode, 200, csv.body);
        const [header, ...rows] = parse(csv.rawPayload, { bom: true }) as string[][];
        for (const column of ['email', 'emails', 'phones', 'socials', 'contact_url']) assert.ok(header!.includes(column), column);
        const at = (c: string) => header!.indexOf(c);
        assert.equal(rows.length, social.total);
        assert.ok(rows.every((r) => r[at('socials')]!.includes('https://')));
        const enriched = rows.filter((r) => r[at('contact_url')] !== '');
        assert.ok(enriched.length > 50);
        for (const r of enriched.slice(0, 20)) {
          const host = new URL(r[at('contact_url')]!).hostname.replace(/^www\./, '');
          assert.ok(r[at('emails')]!.split(';').includes(sites.get(host)!.email), `${host}: ${r[at('emails')]}`);
        }
        const json = await get(`/api/v2/map/export?search_id=${social.search_id}&format=json`);
        const places = json.json<Place[]>();
        assert.deepEqual(
          places.map((p) => p.contacts.socials.map((s) => s.url).join(';')),
          rows.map((r) => r[at('socials')]),
        );
      });

      test('an enriched email or its domain on the suppression list hides the place', async () => {
        const row = await t.db.kysely
          .selectFrom('places')
          .select(['public_id', 'found_email'])
          .where('closed_at', 'is', null)
          .where('email', 'is', null)
          .where('found_email', 'is not', null)
          .orderBy('id', 'desc')
          .executeTakeFirstOrThrow();
        const account = await createAccountWithToken(t.db);
        const search = async () => {
          const res = await app.inject({
            method: 'GET',
            url: '/api/v2/map/search?country=MC&has_email=true&per_page=100&fields=id',
            headers: { authorization: `Bearer ${account.token}` },
          });
          return res.json<{ total: number }>().total;
        };
        const all = await search();
        const add = await app.inject({
          method: 'POST',
          url: '/api/v1/user-api/suppressions',
          headers: { authorization: `Bearer ${account.token}`, 'content-type': 'application/json' },
          payload: { entries: [{ type: 'email', value: row.found_email!.toUpperCase() }] },
        });
        assert.ok(add.statusCode < 300, add.body);
        const hidden = await search();
        assert.ok(hidden < all, `the place with ${row.found_email} is hidden: ${hidden} < ${all}`);

        const byDomain = await createAccountWithToken(t.db);
        const domain = row.found_email!.split('@')[1]!;
        const list = await app.inject({
          method: 'POST',
          url: '/api/v1/user-api/suppressions',
          headers: { authorization: `Bearer ${byDomain.token}`, 'content-type': 'application/json' },
          payload: { entries: [{ type: 'domain', value: domain }] },
        });
        assert.ok(list.statusCode < 300, list.body);
        const res = await app.inject({
          method: 'GET',
          url: '/api/v2/map/search?country=MC&has_email=true&per_page=100&fields=id',
          headers: { authorization: `Bearer ${byDomain.token}` },
        });
        const ids = res.json<{ data: Array<{ id: string }> }>().data.map((p) => p.id);
        assert.ok(!ids.includes(row.public_id), `the place with an address at ${domain} is hidden`);
      });

      test('leadatlas stats prints contact coverage before and after enrichment', async () => {
        const out = await runCliAsync(['stats', '--json'], env, 'stdout');
        assert.equal(out.status, 0, out.stderr);
        const stats = JSON.parse(out.stdout) as {
          contactsByCountry: Array<{
            country_code: string;
            email: { before: number; after: number };
            social: { before: number; after: number };
          }>;
        };
        const mc = stats.contactsByCountry.find((c) => c.country_code === 'MC')!;
        assert.ok(mc.email.after > mc.email.before, JSON.stringify(mc));
        assert.ok(mc.social.after > mc.social.before, JSON.stringify(mc));
      });
    });
  });
