import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { mapBounded } from '../../infra/bounded-map.ts';
import type { Db } from '../../infra/db/database.ts';
import { registrableDomain } from '../../infra/web-domain.ts';
import type { EmailVerdict } from '../contacts/contacts.ts';
import { type FoundContacts, normaliseEmail, siteOf } from '../contacts/contacts.ts';
import type { CrawledPage, SiteCrawl } from './crawler/crawler.ts';
import * as repo from './enrichment.repository.ts';
import { type ExtractedContacts, extractContacts, type PageInput } from './extract/extract.ts';
import { websiteStatusOf } from './site-status.ts';

/**
 * The enrichment pipeline (README, "Pipeline"): places are tied to sites (`link`), due sites are taken from
 * the durable queue with a lease, crawled, their pages' contacts extracted and their emails' domains
 * checked, and the result is stored on the site and given to every place that shares it (`EnrichmentRun`).
 */

/** What the pipeline needs of the crawler (`crawler/crawler.ts`). */
export interface SiteCrawler {
  crawlSite(website: string, previous?: { etag: string | null; lastModified: string | null }, signal?: AbortSignal): Promise<SiteCrawl>;
}

/** What the pipeline needs of the email check (`email-check.ts`). */
export interface EmailChecker {
  check(address: string): Promise<EmailVerdict>;
}

/** Outcomes that say nothing about the site but that it could not be reached now: tried again sooner. */
const transientOutcomes: ReadonlySet<string> = new Set(['rate_limited', 'timeout', 'unreachable', 'dns_error']);
/** Tries of a site that keeps failing for a transient reason before it waits for the refresh period. */
const transientTries = 3;
const dayMs = 86_400_000;
/** Emails of one site whose domain is checked (a page that lists a hundred addresses is not a business's). */
const checkedEmails = 10;

/** Which places to enrich. `placeIds`: a saved search's; otherwise every open place, narrowed by the filter. */
export interface Selection extends repo.PlaceFilter {
  placeIds?: AsyncIterable<number[]>;
}

export interface LinkResult {
  /** Places with a site. */
  places: number;
  /** Their sites, in the order first met. */
  siteIds: number[];
  /** A saved search's places with a site, each with its site, in the order read (empty for a whole-catalog selection, which would hold them all in memory). */
  placeSites: Array<[placeId: number, siteId: number]>;
}

/** The found columns of places whose site found `contacts` (the site's JSON), and the keys suppression lists compare. */
export function foundColumnsOf(contacts: string | null): repo.FoundColumns {
  if (contacts === null) return repo.noneFound;
  const found = JSON.parse(contacts) as FoundContacts;
  const keys: repo.FoundColumns['keys'] = [];
  const seen = new Set<string>();
  const key = (kind: 'email' | 'domain' | 'phone', value: string | null) => {
    if (!value || seen.has(`${kind}:${value}`)) return;
    seen.add(`${kind}:${value}`);
    keys.push({ kind, key: value });
  };
  for (const e of found.emails) {
    const address = e.address.toLowerCase();
    key('email', address);
    key('domain', registrableDomain(address.slice(address.lastIndexOf('@') + 1)));
  }
  for (const p of found.phones) key('phone', p.e164);
  return {
    found_contacts: contacts,
    found_email: found.emails[0]?.address ?? null,
    found_phone: found.phones[0]?.e164 ?? null,
    found_social: found.socials.length > 0 ? 1 : 0,
    keys,
  };
}

/**
 * Ties the selected places to their sites (created, queued, where new) and gives a place tied anew what its
 * site has already found. A place whose website (or email) is what it was tied by keeps its site untouched;
 * one that has lost it is untied. Idempotent: run again, it changes nothing.
 */
export async function linkPlaces(db: Db, selection: Selection, now = new Date()): Promise<LinkResult> {
  const siteIds = new Set<number>();
  const placeSites: LinkResult['placeSites'] = [];
  let places = 0;
  const linkBatch = async (batch: repo.PlaceToLink[]) => {
    const wanted = new Map<string, { key: string; url: string; countryCode: string | null }>();
    const refs = batch.map((p) => {
      const site = siteOf(p.website, p.email);
      if (site && !wanted.has(site.key)) wanted.set(site.key, { ...site, countryCode: p.country_code });
      return site;
    });
    const sites = await repo.ensureSites(db, [...wanted.values()], now.toISOString());
    const links: Parameters<typeof repo.linkPlaces>[1] = [];
    const unlinked: Parameters<typeof repo.linkPlaces>[1] = [];
    batch.forEach((p, i) => {
      const ref = refs[i];
      const basis = p.website ?? p.email;
      const site = ref ? sites.get(ref.key) : undefined;
      if (!site || basis === null) {
        if (p.enrich_site_id !== null) unlinked.push({ placeId: p.id, siteId: 0, basis: '', found: repo.noneFound });
        return;
      }
      places++;
      siteIds.add(site.id);
      if (selection.placeIds) placeSites.push([p.id, site.id]);
      if (p.enrich_site_id === site.id && p.enrich_basis === basis) return;
      links.push({ placeId: p.id, siteId: site.id, basis, found: foundColumnsOf(site.contacts) });
    });
    await repo.linkPlaces(db, links);
    await repo.unlinkPlaces(
      db,
      unlinked.map((u) => u.placeId),
    );
  };
  if (selection.placeIds) {
    for await (const ids of selection.placeIds) await linkBatch(await repo.placesByIds(db, ids));
  } else {
    let after = 0;
    for (;;) {
      const batch = await repo.placesToLink(db, selection, after, 1000);
      if (batch.length === 0) break;
      await linkBatch(batch);
      after = batch[batch.length - 1]!.id;
    }
  }
  return { places, siteIds: [...siteIds], placeSites };
}

export interface PipelineOptions {
  db: Db;
  crawler: SiteCrawler;
  checker: EmailChecker;
  refreshDays: number;
  leaseSeconds: number;
  /** A site's email domains checked at once (ENRICH_ADDRESS_CONCURRENCY). */
  addressConcurrency: number;
  /** Extraction off the main thread (`ExtractionPool`, ENRICH_EXTRACT_THREADS); on it when absent. */
  extract?: (pages: PageInput[], context: { countryCode: string | null; siteDomain: string }) => Promise<ExtractedContacts>;
}

export interface SiteDone {
  site: string;
  outcome: string;
  reason: string | null;
  places: number;
  emails: number;
  phones: number;
  socials: number;
}

/** Counts of a run, for its summary. */
export interface RunSummary {
  sites: number;
  outcomes: Record<string, number>;
  /** Places given contacts by the sites crawled (all their places, found or not). */
  places: number;
  sitesWithEmail: number;
  sitesWithPhone: number;
  sitesWithSocial: number;
  /** Sites another process took or held (they were not crawled here). */
  skipped: number;
}

/**
 * Crawls queued sites, `concurrency` at a time: each is taken with a lease (renewed while it is crawled), so a
 * process that dies (`kill -9`) leaves its sites to be taken again once their leases lapse, and a site whose
 * crawl has been recorded is not due again before the refresh period. Stopping (`signal`) puts the sites in
 * hand back in the queue.
 */
export class EnrichmentRun {
  readonly runner = `enr_${randomBytes(8).toString('hex')}`;
  private readonly held = new Set<number>();

  constructor(private readonly o: PipelineOptions) {}

  /**
   * Crawls the sites of `siteIds` that are due (or, without ids, whatever the queue holds, highest priority
   * first, until it is empty), at most `limit`.
   */
  async run(options: {
    siteIds?: readonly number[];
    concurrency: number;
    limit?: number;
    signal?: AbortSignal;
    onSite?: (done: SiteDone) => void;
    onTotal?: (sites: number) => void;
  }): Promise<RunSummary> {
    const { db } = this.o;
    const summary: RunSummary = { sites: 0, outcomes: {}, places: 0, sitesWithEmail: 0, sitesWithPhone: 0, sitesWithSocial: 0, skipped: 0 };
    let pending = options.siteIds
      ? await repo.dueSiteIds(db, options.siteIds, new Date().toISOString())
      : await repo.nextDueSiteIds(db, new Date().toISOString(), 500);
    if (options.limit !== undefined) pending = pending.slice(0, options.limit);
    let budget = options.limit ?? Infinity;
    options.onTotal?.(pending.length);
    const renew = setInterval(
      () => {
        void repo.renewSiteLeases(db, this.runner, [...this.held], this.leaseFrom(new Date())).catch(() => {});
      },
      (this.o.leaseSeconds * 1000) / 3,
    );
    renew.unref();
    // One refill at a time, awaited by every worker that runs out: a worker must not end while another
    // waits for a dead process's leases, or the sites they free would be crawled by that one worker alone.
    let refilling: Promise<number[]> | undefined;
    const refill = () =>
      (refilling ??= this.refill(options.siteIds, options.signal).finally(() => {
        refilling = undefined;
      }));
    try {
      const take = async (): Promise<repo.SiteRow | undefined> => {
        while (!options.signal?.aborted && budget > 0) {
          if (pending.length === 0) {
            const more = await refill();
            if (more.length === 0 && pending.length === 0) return undefined;
            // Every waiting worker gets the same list: the first puts it in hand, the others share it.
            if (pending.length === 0) pending = more;
            continue;
          }
          const ids = pending.splice(0, 1);
          const now = new Date();
          const [site] = await repo.claimSites(db, ids, this.runner, now.toISOString(), this.leaseFrom(now));
          if (site) {
            budget--;
            this.held.add(site.id);
            return site;
          }
          summary.skipped++;
        }
        return undefined;
      };
      const worker = async () => {
        for (let site = await take(); site; site = await take()) {
          let done: SiteDone | undefined;
          try {
            done = await this.enrichSite(site, options.signal).catch((error: unknown) => this.recordError(site, error));
          } finally {
            // A site stopped mid-crawl stays in hand until the run's end, which puts it back in the queue.
            if (done || !options.signal?.aborted) this.held.delete(site.id);
          }
          if (!done) continue;
          summary.sites++;
          summary.outcomes[done.outcome] = (summary.outcomes[done.outcome] ?? 0) + 1;
          summary.places += done.places;
          if (done.emails > 0) summary.sitesWithEmail++;
          if (done.phones > 0) summary.sitesWithPhone++;
          if (done.socials > 0) summary.sitesWithSocial++;
          options.onSite?.(done);
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
    } finally {
      clearInterval(renew);
      await repo.releaseSites(db, this.runner, [...this.held]);
    }
    return summary;
  }

  /**
   * More sites once the list in hand is used up: the queue's next (no selection); for a selection, its sites
   * that became due meanwhile, after waiting, if another process holds some, for its lease to end (it
   * finishes them, or it died and they are taken here), so that a run ends with its whole selection done.
   */
  private async refill(siteIds: readonly number[] | undefined, signal: AbortSignal | undefined): Promise<number[]> {
    const { db } = this.o;
    if (!siteIds) return repo.nextDueSiteIds(db, new Date().toISOString(), 500);
    for (;;) {
      const due = await repo.dueSiteIds(db, siteIds, new Date().toISOString());
      if (due.length > 0) return due;
      const lease = await repo.firstForeignLease(db, siteIds, this.runner);
      if (lease === null || signal?.aborted) return [];
      const wait = Math.min(Math.max(Date.parse(lease) - Date.now() + 50, 50), this.o.leaseSeconds * 1000);
      await sleep(wait, undefined, { signal }).catch(() => {});
    }
  }

  private leaseFrom(at: Date): string {
    return new Date(at.getTime() + this.o.leaseSeconds * 1000).toISOString();
  }

  /** Crawls one site this process holds and records the result; undefined when it was stopped (the site goes back to the queue). */
  private async enrichSite(site: repo.SiteRow, signal: AbortSignal | undefined): Promise<SiteDone | undefined> {
    const { db, crawler, refreshDays } = this.o;
    const previous = site.etag !== null || site.last_modified !== null ? { etag: site.etag, lastModified: site.last_modified } : undefined;
    let crawl: SiteCrawl;
    try {
      crawl = await crawler.crawlSite(site.url, previous, signal);
    } catch (error) {
      // Stopped mid-crawl (the crawler rejects on its signal's abort): the site goes back, not recorded as an error.
      if (signal?.aborted) return undefined;
      throw error;
    }
    if (signal?.aborted) return undefined;
    const now = new Date();
    const refreshed = new Date(now.getTime() + refreshDays * dayMs).toISOString();
    let contacts: string | null | undefined;
    let found: FoundContacts | null = null;
    let attempts = 0;
    let due = refreshed;
    if (crawl.outcome === 'ok') {
      found = await this.contactsOf(site, crawl.pages);
      contacts = found ? JSON.stringify(found) : null;
    } else if (transientOutcomes.has(crawl.outcome) && site.attempts < transientTries) {
      attempts = site.attempts;
      const wait = Math.max(dayMs, (crawl.retryAfterSeconds ?? 0) * 1000);
      due = new Date(now.getTime() + Math.min(wait, refreshDays * dayMs)).toISOString();
    }
    const record: repo.CrawlRecord = {
      crawled_at: now.toISOString(),
      outcome: crawl.outcome,
      reason: crawl.reason,
      status: { ...websiteStatusOf(crawl, site.url, site), status_checked_at: now.toISOString() },
      emailDomains: found ? emailDomainVerdicts(found) : undefined,
      pages: crawl.pages.length,
      etag: crawl.outcome === 'ok' || crawl.outcome === 'not_modified' ? (crawl.etag ?? site.etag) : site.etag,
      last_modified:
        crawl.outcome === 'ok' || crawl.outcome === 'not_modified' ? (crawl.lastModified ?? site.last_modified) : site.last_modified,
      due_at: due,
      attempts,
      contacts,
    };
    // A crawl that read no pages keeps what an earlier one found (the places keep it too).
    const result = await repo.finishSite(db, site.id, this.runner, record, contacts === undefined ? undefined : foundColumnsOf(contacts));
    if (!result.held) return undefined;
    const kept = found ?? (site.contacts && contacts === undefined ? (JSON.parse(site.contacts) as FoundContacts) : null);
    return {
      site: site.url,
      outcome: crawl.outcome,
      reason: crawl.reason,
      places: result.places,
      emails: kept?.emails.length ?? 0,
      phones: kept?.phones.length ?? 0,
      socials: kept?.socials.length ?? 0,
    };
  }

  /**
   * A site whose crawl or extraction threw (a bug, not a site's doing: the crawler answers every failure of a
   * site with an outcome) is recorded as `error` with the message and tried again a day later, so that it
   * neither stops the run nor comes back at once in every round.
   */
  private async recordError(site: repo.SiteRow, error: unknown): Promise<SiteDone | undefined> {
    const now = new Date();
    const reason = error instanceof Error ? error.message : String(error);
    const record: repo.CrawlRecord = {
      crawled_at: now.toISOString(),
      outcome: 'error',
      reason: reason.slice(0, 500),
      pages: 0,
      etag: site.etag,
      last_modified: site.last_modified,
      due_at: new Date(now.getTime() + dayMs).toISOString(),
      attempts: site.attempts,
      contacts: undefined,
    };
    const result = await repo.finishSite(this.o.db, site.id, this.runner, record, undefined);
    return result.held
      ? { site: site.url, outcome: 'error', reason: record.reason, places: result.places, emails: 0, phones: 0, socials: 0 }
      : undefined;
  }

  /** The contacts of a site's pages, with each item's page and fetch time and each email's domain verdict; null when there are none. */
  private async contactsOf(site: repo.SiteRow, pages: CrawledPage[]): Promise<FoundContacts | null> {
    const fetchedAt = new Map(pages.map((p) => [p.url, p.fetchedAt]));
    const at = (page: string) => fetchedAt.get(page) ?? pages[0]?.fetchedAt ?? new Date().toISOString();
    const host = new URL(site.url).hostname;
    const inputs = pages.map((p) => ({ url: p.url, html: p.html }));
    const context = { countryCode: site.country_code, siteDomain: registrableDomain(host) ?? host };
    const extracted = this.o.extract ? await this.o.extract(inputs, context) : extractContacts(inputs, context);
    const unique: Array<(typeof extracted.emails)[number] & { address: string }> = [];
    for (const e of extracted.emails) {
      const address = normaliseEmail(e.address);
      if (address && !unique.some((x) => x.address === address)) unique.push({ ...e, address });
    }
    // The checks of one site's addresses wait on DNS, not on each other: a few at once, not one by one.
    const verdicts = await mapBounded(unique.slice(0, checkedEmails), this.o.addressConcurrency, (e) => this.o.checker.check(e.address));
    const emails: FoundContacts['emails'] = unique.map((e, i) => ({
      address: e.address,
      page: e.page,
      fetched_at: at(e.page),
      own_domain: e.own_domain,
      verdict: verdicts[i] ?? 'unknown',
    }));
    // An address whose domain has no mail server is kept (with its verdict) but never ranks first.
    emails.sort((a, b) => Number(a.verdict === 'no_mx') - Number(b.verdict === 'no_mx'));
    const found: FoundContacts = {
      site: site.url,
      emails,
      phones: extracted.phones.map((p) => ({ e164: p.e164, page: p.page, fetched_at: at(p.page) })),
      socials: extracted.socials.map((s) => ({ network: s.network, url: s.url, page: s.page, fetched_at: at(s.page) })),
      contact_url: extracted.contact_url,
    };
    return found.emails.length + found.phones.length + found.socials.length > 0 || found.contact_url !== null ? found : null;
  }
}

/** The verdict on each checked address's domain, in `email_domains`' words (`deliverable_domain` → `valid_domain`). */
function emailDomainVerdicts(found: FoundContacts): Array<{ domain: string; status: 'valid_domain' | 'no_mx' | 'unknown' }> {
  const out = new Map<string, 'valid_domain' | 'no_mx' | 'unknown'>();
  for (const e of found.emails) {
    const domain = e.address.slice(e.address.lastIndexOf('@') + 1).toLowerCase();
    const status = e.verdict === 'deliverable_domain' ? 'valid_domain' : e.verdict;
    if (!out.has(domain) || out.get(domain) === 'unknown') out.set(domain, status);
  }
  return [...out].map(([domain, status]) => ({ domain, status }));
}
