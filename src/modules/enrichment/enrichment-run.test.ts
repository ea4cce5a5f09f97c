import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import type { SiteCrawl } from './crawler/crawler.ts';
import * as repo from './enrichment.repository.ts';
import { EnrichmentRun, type SiteCrawler } from './enrichment.service.ts';

/** A crawler that answers every site after `ms` with one page, and records how many crawls were under way at each start. */
class CountingCrawler implements SiteCrawler {
  active = 0;
  readonly starts: Array<{ site: string; at: number; active: number }> = [];
  constructor(
    private readonly ms: number,
    private readonly html = '<p>nothing</p>',
  ) {}
  async crawlSite(website: string): Promise<SiteCrawl> {
    this.active++;
    this.starts.push({ site: website, at: Date.now(), active: this.active });
    await sleep(this.ms);
    this.active--;
    return {
      website,
      outcome: 'ok',
      reason: null,
      pages: [{ url: website, html: this.html, fetchedAt: new Date().toISOString() }] as SiteCrawl['pages'],
      etag: null,
      lastModified: null,
      retryAfterSeconds: null,
    };
  }
}

for (const dialect of dialects)
  describe(`an enrichment run (${dialect.name})`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await dialect.open('migrated');
    });
    after(async () => t?.dispose());

    test('every worker takes the dead process’s sites once their leases lapse, and the run ends with all of them done', async () => {
      const now = new Date();
      const sites = await repo.ensureSites(
        t.db,
        Array.from({ length: 20 }, (_, i) => ({ key: `shop-${i}.example.org`, url: `https://shop-${i}.example.org/`, countryCode: 'DE' })),
        now.toISOString(),
      );
      const ids = [...sites.values()].map((s) => s.id).sort((a, b) => a - b);
      // A process killed while it held 16 of them: its leases lapse in 400 ms.
      const lapse = Date.now() + 400;
      const dead = await repo.claimSites(t.db, ids.slice(4), 'enr_dead', now.toISOString(), new Date(lapse).toISOString());
      assert.equal(dead.length, 16);

      const crawler = new CountingCrawler(120);
      const run = new EnrichmentRun({
        db: t.db,
        crawler,
        checker: { check: async () => 'unknown' },
        refreshDays: 90,
        leaseSeconds: 30,
        addressConcurrency: 8,
      });
      const summary = await run.run({ siteIds: ids, concurrency: 4 });
      assert.equal(summary.sites, 20);
      const afterLapse = crawler.starts.filter((s) => s.at >= lapse);
      assert.equal(afterLapse.length, 16, 'the dead process’s sites are crawled after their leases lapse');
      assert.equal(Math.max(...afterLapse.map((s) => s.active)), 4, 'by all four workers, not by the one that waited');
      assert.equal(new Set(crawler.starts.map((s) => s.site)).size, 20, 'no site crawled twice');
      const left = await t.db.kysely.selectFrom('enrich_sites').select('status').where('status', '!=', 'done').execute();
      assert.deepEqual(left, []);
    });

    test('a site’s email domains are checked a few at once (ENRICH_ADDRESS_CONCURRENCY), not one by one nor all together', async () => {
      const domains = Array.from({ length: 10 }, (_, i) => `baeckerei-${i}.de`);
      const html = `<p>${domains.map((d) => `<a href="mailto:info@${d}">info@${d}</a>`).join(' ')}</p>`;
      const sites = await repo.ensureSites(
        t.db,
        [{ key: 'many-addresses.de', url: 'https://many-addresses.de/', countryCode: 'DE' }],
        new Date().toISOString(),
      );
      let active = 0;
      let most = 0;
      const checked: string[] = [];
      const run = new EnrichmentRun({
        db: t.db,
        crawler: new CountingCrawler(0, html),
        checker: {
          check: async (address) => {
            most = Math.max(most, ++active);
            await sleep(30);
            active--;
            checked.push(address);
            return 'deliverable_domain';
          },
        },
        refreshDays: 90,
        leaseSeconds: 30,
        addressConcurrency: 3,
      });
      await run.run({ siteIds: [...sites.values()].map((s) => s.id), concurrency: 1 });
      assert.equal(checked.length, 10);
      assert.equal(most, 3);
      const site = await t.db.kysely
        .selectFrom('enrich_sites')
        .select('contacts')
        .where('site_key', '=', 'many-addresses.de')
        .executeTakeFirstOrThrow();
      const stored = JSON.parse(site.contacts!) as { emails: Array<{ address: string; verdict: string }> };
      assert.deepEqual(
        stored.emails.map((e) => [e.address, e.verdict]),
        domains.map((d) => [`info@${d}`, 'deliverable_domain']),
        'in page order, each with its own verdict',
      );
    });
  });
