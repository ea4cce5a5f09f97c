import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import { type DnsZone, startDnsServer } from '../../../test/helpers/dns-server.ts';
import { saveSearch, type TestCity } from '../../../test/helpers/exports.ts';
import { osmDir } from '../../../test/helpers/osm.ts';
import { readmeSnippet, receiver } from '../../../test/helpers/webhooks.ts';
import { registrableDomain } from '../../infra/web-domain.ts';
import { siteOf } from '../contacts/contacts.ts';
import { accountWebhookSecret } from '../webhooks/webhooks.service.ts';
import { insertJob } from './enrichment-jobs.repository.ts';
import type { EnrichmentJobView } from './enrichment-jobs.schema.ts';
import { createEnrichmentJob } from './enrichment-jobs.service.ts';

const monaco = join(osmDir, 'monaco-2026.osm.pbf');

async function eventually<T>(what: string, check: () => Promise<T | undefined>, limitMs = 120_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * `POST /api/v2/enrichments` on the Monaco extract, with `serve`'s background enrichment (ENRICH_WORKERS)
 * crawling the places' real host names on a loopback address of the test's own: plain HTTP on port 80
 * answers a contact page for every host (the sites whose address is https find nothing listening on 443,
 * and end as such).
 */
for (const dialect of dialects)
  describe(`enrichment jobs on the Monaco extract (${dialect.name})`, () => {
    const address = `127.23.${(process.pid % 200) + 20}.${dialect.name === 'sqlite' ? 10 : 20}`;
    let t: TestApp;
    let dns: Awaited<ReturnType<typeof startDnsServer>>;
    let web: Server;
    // The whole catalog: `saveSearch` with no category searches the world's box.
    const world = { id: 0 } as TestCity;

    before(async () => {
      web = createServer((req, res) => {
        const host = (req.headers.host ?? '').replace(/:\d+$/, '').replace(/^www\./, '');
        if ((req.url ?? '/').startsWith('/robots.txt')) return void res.writeHead(404).end();
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          `<html><body><p>Write to <a href="mailto:hello@${registrableDomain(host)}">hello@${registrableDomain(host)}</a></p></body></html>`,
        );
      });
      await new Promise<void>((done) => web.listen(80, address, done));
      let zone: DnsZone = {};
      t = await buildTestApp({
        dialect: dialect.name,
        files: [monaco],
        prepare: async (db) => {
          const rows = await db.kysely.selectFrom('places').select(['website', 'email']).where('closed_at', 'is', null).execute();
          zone = {};
          for (const r of rows) {
            const ref = siteOf(r.website, r.email);
            if (!ref) continue;
            const host = new URL(ref.url).hostname;
            zone[host] = { A: [address] };
            zone[registrableDomain(host)!] = { A: [address], MX: [{ exchange: `mail.${registrableDomain(host)}`, priority: 10 }] };
          }
          dns = await startDnsServer(zone);
        },
        env: {
          ENRICH_WORKERS: '8',
          ENRICH_ALLOW_PRIVATE_NETWORKS: 'true',
          ENRICH_HOST_DELAY_MS: '10',
          ENRICH_CONNECT_TIMEOUT_MS: '2000',
          WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
          WEBHOOK_RETRY_BASE_MS: '200',
          get ENRICH_DNS_SERVERS() {
            return dns.address;
          },
        },
      });
      await t.app.ready();
    });
    after(async () => {
      await t?.close();
      await dns?.close();
      web?.closeAllConnections();
      await new Promise<void>((done) => (web ? web.close(() => done()) : done()));
    });

    const saveWorld = (a: TestAccount) => saveSearch(t.db, a.accountId, world, null);
    const post = (a: TestAccount, payload: object) =>
      t.app.inject({ method: 'POST', url: '/api/v2/enrichments', headers: { authorization: a.authorization }, payload });
    const get = (a: TestAccount, url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: a.authorization } });
    const queuedJob = async (a: TestAccount) =>
      (await createEnrichmentJob(t.db, t.app.quotas, a.accountId, { searchId: await saveWorld(a) })).public_id;

    describeAuthSuite(
      {
        method: 'POST',
        url: '/api/v2/enrichments',
        scope: 'enrich',
        payload: { search_id: 'srch_aaaaaaaaaaaaaaaa' },
        ownResource: async (_ctx, a) => ({ url: '/api/v2/enrichments', payload: { search_id: await saveWorld(a) } }),
        foreignResource: async ({ owner }) => ({ url: '/api/v2/enrichments', payload: { search_id: await saveWorld(owner) } }),
      },
      () => ({ app: t.app, db: t.db }),
    );
    describeAuthSuite({ method: 'GET', url: '/api/v2/enrichments', scope: 'enrich' }, () => ({ app: t.app, db: t.db }));
    describeAuthSuite(
      {
        method: 'GET',
        url: '/api/v2/enrichments/enr_aaaaaaaaaaaaaa',
        scope: 'enrich',
        ownResource: async (_ctx, a) => `/api/v2/enrichments/${await queuedJob(a)}`,
        foreignResource: async ({ owner }) => ({ url: `/api/v2/enrichments/${await queuedJob(owner)}` }),
      },
      () => ({ app: t.app, db: t.db }),
    );

    test("a job answers 202 with its Location, puts the search's sites first, and succeeds once the background worker has crawled them all", async () => {
      const a = await createAccountWithToken(t.db);
      const created = await post(a, { search_id: await saveWorld(a) });
      assert.equal(created.statusCode, 202, created.body);
      const job = created.json<EnrichmentJobView>();
      assert.match(job.id, /^enr_[A-Za-z0-9_-]{14}$/);
      assert.equal(created.headers.location, `/api/v2/enrichments/${job.id}`);
      assert.equal(job.status, 'queued');
      const ended = await eventually('the job to end', async () => {
        const j = (await get(a, `/api/v2/enrichments/${job.id}`)).json<EnrichmentJobView>();
        return j.status === 'succeeded' || j.status === 'failed' ? j : undefined;
      });
      assert.equal(ended.status, 'succeeded', JSON.stringify(ended));
      const withSite = Number(
        (
          await t.db.kysely
            .selectFrom('places')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('closed_at', 'is', null)
            .where('enrich_site_id', 'is not', null)
            .executeTakeFirstOrThrow()
        ).n,
      );
      assert.equal(ended.places, withSite);
      assert.ok(ended.sites > 150 && ended.sites <= ended.places, JSON.stringify(ended));
      assert.equal(ended.sites_done, ended.sites);
      assert.equal(ended.limited, false);
      const ownEmails = Number(
        (
          await t.db.kysely
            .selectFrom('places')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('closed_at', 'is', null)
            .where('enrich_site_id', 'is not', null)
            .where('email', 'is not', null)
            .executeTakeFirstOrThrow()
        ).n,
      );
      assert.ok(ended.places_with_email > ownEmails, `the http sites gave emails: ${ended.places_with_email} > ${ownEmails}`);
      const outcomes = await t.db.kysely.selectFrom('enrich_sites').select(['outcome']).execute();
      assert.ok(outcomes.some((o) => o.outcome === 'ok'));
      assert.deepEqual(
        outcomes.filter((o) => o.outcome === null),
        [],
        'every site has its outcome',
      );
      const list = (await get(a, '/api/v2/enrichments')).json<{ data: EnrichmentJobView[] }>();
      assert.deepEqual(
        list.data.map((j) => j.id),
        [job.id],
      );

      const again = await post(a, { search_id: await saveWorld(a) });
      const second = await eventually('the second job to end', async () => {
        const j = (await get(a, `/api/v2/enrichments/${again.json<EnrichmentJobView>().id}`)).json<EnrichmentJobView>();
        return j.status === 'succeeded' ? j : undefined;
      });
      assert.equal(second.sites_done, second.sites, 'within the refresh period the sites are fresh: done at once');
    });

    test("a job takes no more places than the month's quota leaves, and the next is refused with the policy named", async () => {
      const a = await createAccountWithToken(t.db);
      await t.app.quotas.setQuotas(a.accountId, { enrichPlacesPerMonth: 10 });
      const created = await post(a, { search_id: await saveWorld(a) });
      assert.equal(created.statusCode, 202, created.body);
      const id = created.json<EnrichmentJobView>().id;
      const ended = await eventually('the job to end', async () => {
        const j = (await get(a, `/api/v2/enrichments/${id}`)).json<EnrichmentJobView>();
        return j.status === 'succeeded' || j.status === 'failed' ? j : undefined;
      });
      assert.equal(ended.places, 10);
      assert.equal(ended.limited, true);
      const refused = await post(a, { search_id: await saveWorld(a) });
      assert.equal(refused.statusCode, 429, refused.body);
      assert.deepEqual(refused.json()['violated-policies'], ['enrich-places']);
    });

    test('the end of a job is told to its webhook_url, signed as export jobs’ events, retried after a 500; its counts are of its own places', async () => {
      const verify = await readmeSnippet();
      const hook = await receiver([500]);
      try {
        const a = await createAccountWithToken(t.db);
        await t.app.quotas.setQuotas(a.accountId, { enrichPlacesPerMonth: 12 });
        const created = await post(a, { search_id: await saveWorld(a), webhook_url: hook.url });
        assert.equal(created.statusCode, 202, created.body);
        const job = created.json<EnrichmentJobView>();
        assert.equal(job.webhook_url, hook.url);
        await eventually('two deliveries', async () => (hook.received.length >= 2 ? true : undefined));
        const secret = await accountWebhookSecret(t.db, a.accountId);
        const ended = (await get(a, `/api/v2/enrichments/${job.id}`)).json<EnrichmentJobView>();
        assert.equal(ended.status, 'succeeded');
        for (const r of hook.received) {
          assert.equal(verify(r.body, String(r.headers['leadatlas-signature']), secret), true, 'the signature verifies');
          assert.equal(r.headers['leadatlas-event'], 'enrichment_job.succeeded');
          const event = JSON.parse(r.body);
          assert.equal(event.type, 'enrichment_job.succeeded');
          assert.deepEqual(event.data.job, ended, 'the job as GET shows it');
        }
        assert.equal(hook.received[0]!.body, hook.received[1]!.body, 'a retry sends the same event');
        const delivery = await eventually('the delivery to be recorded', async () => {
          const d = await t.db.kysely.selectFrom('webhook_deliveries').selectAll().where('account_id', '=', a.accountId).executeTakeFirst();
          return d?.status === 'succeeded' ? d : undefined;
        });
        assert.equal(delivery.job_kind, 'enrichment_job');
        // Its places: the twelve the quota granted, not the others on their sites.
        const own = await t.db.kysely
          .selectFrom('enrichment_job_places as jp')
          .innerJoin('enrichment_jobs as j', 'j.id', 'jp.job_id')
          .innerJoin('places as p', 'p.id', 'jp.place_id')
          .select(['p.email', 'p.found_email'])
          .where('j.public_id', '=', job.id)
          .execute();
        assert.equal(own.length, 12);
        assert.equal(ended.places_with_email, own.filter((p) => p.email !== null || p.found_email !== null).length);
      } finally {
        await hook.close();
      }
    });

    test('a job that fails tells its webhook enrichment_job.failed with the reason', async () => {
      const hook = await receiver([]);
      try {
        const a = await createAccountWithToken(t.db);
        await t.app.quotas.setQuotas(a.accountId, { enrichPlacesPerMonth: 0 });
        // Past the up-front check: the quota is found spent when the job is queued.
        const job = await insertJob(t.db, {
          public_id: 'enr_failingjob00001',
          account_id: a.accountId,
          search_id: await saveWorld(a),
          webhook_url: hook.url,
          created_at: new Date().toISOString(),
        });
        await eventually('the delivery', async () => (hook.received.length >= 1 ? true : undefined));
        const event = JSON.parse(hook.received[0]!.body);
        assert.equal(event.type, 'enrichment_job.failed');
        assert.equal(event.data.job.id, job.public_id);
        assert.match(event.data.job.failure, /^quota_exceeded/);
      } finally {
        await hook.close();
      }
    });

    test('a webhook_url that is not http(s) answers 400 naming the field', async () => {
      const a = await createAccountWithToken(t.db);
      const bad = await post(a, { search_id: await saveWorld(a), webhook_url: 'ftp://example.com/x' });
      assert.equal(bad.statusCode, 400, bad.body);
      assert.match(bad.body, /webhook_url/);
    });

    test('a search that does not exist answers 404 and a body with other fields 400', async () => {
      const a = await createAccountWithToken(t.db);
      const missing = await post(a, { search_id: 'srch_aaaaaaaaaaaaaaaa' });
      assert.equal(missing.statusCode, 404, missing.body);
      const extra = await post(a, { search_id: 'srch_aaaaaaaaaaaaaaaa', colour: 'red' });
      assert.equal(extra.statusCode, 400, extra.body);
      assert.equal(extra.headers['content-type'], 'application/problem+json; charset=utf-8');
    });
  });
