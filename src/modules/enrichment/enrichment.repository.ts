import { type ExpressionBuilder, type Kysely, type Selectable, sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { Database, EnrichSitesTable } from '../../infra/db/schema.ts';
import { type FoundOnPlace, linkFoundContacts, setFoundContactsOfSite, unlinkFoundContacts } from '../places/place-updates.repository.ts';

export type SiteRow = Selectable<EnrichSitesTable>;

/** A place as the linking step reads it. */
export interface PlaceToLink {
  id: number;
  website: string | null;
  email: string | null;
  country_code: string | null;
  enrich_site_id: number | null;
  enrich_basis: string | null;
}

/** What a site gives each of its places (`places.found_*`, written by the places module), and the keys suppression lists compare. */
export interface FoundColumns extends FoundOnPlace {
  keys: Array<{ kind: 'email' | 'domain' | 'phone'; key: string }>;
}

export const noneFound: FoundColumns = { found_contacts: null, found_email: null, found_phone: null, found_social: 0, keys: [] };

/** Which places to enrich: open places (a record of a place of several sources is closed: its place is enriched). */
export interface PlaceFilter {
  countryCode?: string;
  source?: string;
}

const placeColumnsToLink = ['id', 'website', 'email', 'country_code', 'enrich_site_id', 'enrich_basis'] as const;

const normalisePlace = (r: PlaceToLink): PlaceToLink => ({
  ...r,
  id: Number(r.id),
  enrich_site_id: r.enrich_site_id === null ? null : Number(r.enrich_site_id),
});

/** The next `limit` open places after `afterId` with a website or an email, in id order. */
export async function placesToLink(db: Db, filter: PlaceFilter, afterId: number, limit: number): Promise<PlaceToLink[]> {
  let q = db.kysely
    .selectFrom('places')
    .select(placeColumnsToLink)
    .where('closed_at', 'is', null)
    .where('id', '>', afterId)
    .where((eb) => eb.or([eb('website', 'is not', null), eb('email', 'is not', null)]));
  if (filter.countryCode) q = q.where('country_code', '=', filter.countryCode);
  if (filter.source) q = q.where('source', '=', filter.source);
  const rows = await q.orderBy('id').limit(limit).execute();
  return rows.map(normalisePlace);
}

/** Open places by id (a saved search's), with a website or an email. */
export async function placesByIds(db: Db, ids: number[]): Promise<PlaceToLink[]> {
  if (ids.length === 0) return [];
  const rows = await db.kysely
    .selectFrom('places')
    .select(placeColumnsToLink)
    .where('id', 'in', ids)
    .where('closed_at', 'is', null)
    .where((eb) => eb.or([eb('website', 'is not', null), eb('email', 'is not', null)]))
    .execute();
  return rows.map(normalisePlace);
}

/** Sites by key, created (queued, due now) where missing: of several processes creating one, the first insert wins. */
export async function ensureSites(
  db: Db,
  sites: Array<{ key: string; url: string; countryCode: string | null }>,
  now: string,
): Promise<Map<string, SiteRow>> {
  const out = new Map<string, SiteRow>();
  if (sites.length === 0) return out;
  await db.kysely
    .insertInto('enrich_sites')
    .values(sites.map((s) => ({ site_key: s.key, url: s.url, country_code: s.countryCode, status: 'queued' as const, due_at: now })))
    .onConflict((oc) => oc.column('site_key').doNothing())
    .execute();
  const rows = await db.kysely
    .selectFrom('enrich_sites')
    .selectAll()
    .where(
      'site_key',
      'in',
      sites.map((s) => s.key),
    )
    .execute();
  for (const r of rows) out.set(r.site_key, normaliseSite(r));
  return out;
}

/** Ties places to their sites and gives each what its site has found so far (nothing for a site not crawled yet). */
export async function linkPlaces(
  db: Db,
  links: Array<{ placeId: number; siteId: number; basis: string; found: FoundColumns }>,
): Promise<void> {
  if (links.length === 0) return;
  await db.kysely.transaction().execute(async (trx) => {
    for (const l of links) await linkFoundContacts(trx, l.placeId, l);
    const ids = links.map((l) => l.placeId);
    await trx.deleteFrom('place_found_keys').where('place_id', 'in', ids).execute();
    const keys = links.flatMap((l) => l.found.keys.map((k) => ({ place_id: l.placeId, kind: k.kind, key: k.key })));
    for (let i = 0; i < keys.length; i += 500)
      await trx
        .insertInto('place_found_keys')
        .values(keys.slice(i, i + 500))
        .execute();
  });
}

/** Unties places that no longer have a site (their website and email are gone): nothing found counts for them any more. */
export async function unlinkPlaces(db: Db, placeIds: number[]): Promise<void> {
  if (placeIds.length === 0) return;
  await db.kysely.transaction().execute(async (trx) => {
    await unlinkFoundContacts(trx, placeIds);
    await trx.deleteFrom('place_found_keys').where('place_id', 'in', placeIds).execute();
  });
}

/** A site this process may take: queued or done and due, or held by a process whose lease lapsed. */
const claimable = (eb: ExpressionBuilder<Database, 'enrich_sites'>, now: string) =>
  eb.or([
    eb.and([eb('status', 'in', ['queued', 'done']), eb('due_at', '<=', now)]),
    eb.and([eb('status', '=', 'running'), eb('lease_until', '<', now)]),
  ]);

/** Of `ids`, those that may be taken now, highest priority first. */
export async function dueSiteIds(db: Db, ids: readonly number[], now: string): Promise<number[]> {
  const out: Array<{ id: number; priority: number }> = [];
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await db.kysely
      .selectFrom('enrich_sites')
      .select(['id', 'priority'])
      .where('id', 'in', ids.slice(i, i + 500))
      .where((eb) => claimable(eb, now))
      .execute();
    for (const r of rows) out.push({ id: Number(r.id), priority: Number(r.priority) });
  }
  return out.sort((a, b) => b.priority - a.priority || a.id - b.id).map((r) => r.id);
}

/** When the first lease of another process on sites of `ids` lapses (null: none holds any): a run waits for it, so a site a dead process held is done too. */
export async function firstForeignLease(db: Db, ids: readonly number[], runner: string): Promise<string | null> {
  let first: string | null = null;
  for (let i = 0; i < ids.length; i += 500) {
    const r = await db.kysely
      .selectFrom('enrich_sites')
      .select((eb) => eb.fn.min('lease_until').as('first'))
      .where('id', 'in', ids.slice(i, i + 500))
      .where('status', '=', 'running')
      .where('runner', '!=', runner)
      .executeTakeFirst();
    const lease = (r?.first as string | null | undefined) ?? null;
    if (lease !== null && (first === null || lease < first)) first = lease;
  }
  return first;
}

/** The next sites anyone may take, highest priority first (the background worker's queue). */
export async function nextDueSiteIds(db: Db, now: string, limit: number): Promise<number[]> {
  const rows = await db.kysely
    .selectFrom('enrich_sites')
    .select('id')
    .where((eb) => claimable(eb, now))
    .orderBy('priority', 'desc')
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => Number(r.id));
}

/**
 * Takes the sites of `ids` nobody holds for this process, in one conditional UPDATE: of several processes
 * asking at once, each site goes to exactly one. Returns the sites taken.
 */
export async function claimSites(db: Db, ids: readonly number[], runner: string, now: string, leaseUntil: string): Promise<SiteRow[]> {
  if (ids.length === 0) return [];
  const rows = await db.kysely
    .updateTable('enrich_sites')
    .set({ status: 'running', runner, lease_until: leaseUntil, attempts: sql<number>`attempts + 1` })
    .where('id', 'in', [...ids])
    .where((eb) => claimable(eb, now))
    .returningAll()
    .execute();
  return rows.map(normaliseSite);
}

/** Renews this process's lease on the sites it is crawling. */
export async function renewSiteLeases(db: Db, runner: string, ids: readonly number[], leaseUntil: string): Promise<void> {
  if (ids.length === 0) return;
  await db.kysely
    .updateTable('enrich_sites')
    .set({ lease_until: leaseUntil })
    .where('id', 'in', [...ids])
    .where('runner', '=', runner)
    .where('status', '=', 'running')
    .execute();
}

/** Puts sites this process holds back in the queue, due now (it is stopping). */
export async function releaseSites(db: Db, runner: string, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.kysely
    .updateTable('enrich_sites')
    .set({ status: 'queued', runner: null, lease_until: null, attempts: sql<number>`attempts - 1` })
    .where('id', 'in', [...ids])
    .where('runner', '=', runner)
    .where('status', '=', 'running')
    .execute();
}

export interface CrawlRecord {
  crawled_at: string;
  outcome: string;
  reason: string | null;
  pages: number;
  etag: string | null;
  last_modified: string | null;
  due_at: string;
  /** Failures in a row (a success sets 0). */
  attempts: number;
  /** The site's contacts: the new ones, or undefined to keep what an earlier crawl found. */
  contacts: string | null | undefined;
  /** The website's status after this fetch (`site-status.ts`); absent when the crawl said nothing of it (an error of ours). */
  status?: { site_status: string; final_domain: string | null; status_checked_at: string };
  /** The DNS verdicts on the domains of the addresses found (`email_domains`). */
  emailDomains?: ReadonlyArray<{ domain: string; status: 'valid_domain' | 'no_mx' | 'unknown' }>;
}

/** Keeps the last DNS verdict of each domain (what the trust pass judges every address at that domain by). */
export async function recordEmailDomains(
  trx: Kysely<Database>,
  verdicts: ReadonlyArray<{ domain: string; status: 'valid_domain' | 'no_mx' | 'unknown' }>,
  at: string,
): Promise<void> {
  // A passing DNS failure does not overwrite what an earlier check established. In the domains' order, so that
  // concurrent crawls recording the same domains take their row locks in one order (no deadlock on PostgreSQL).
  for (const v of [...verdicts].sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0))) {
    await trx
      .insertInto('email_domains')
      .values({ domain: v.domain, status: v.status, checked_at: at })
      .onConflict((oc) =>
        v.status === 'unknown' ? oc.column('domain').doNothing() : oc.column('domain').doUpdateSet({ status: v.status, checked_at: at }),
      )
      .execute();
  }
}

/**
 * Records a crawl and gives its places what the site found, in one transaction; false (nothing written)
 * when the site is no longer this process's (its lease lapsed and another process took it).
 * `found` undefined: the places keep what they have.
 */
export async function finishSite(
  db: Db,
  siteId: number,
  runner: string,
  crawl: CrawlRecord,
  found: FoundColumns | undefined,
): Promise<{ held: boolean; places: number }> {
  const result = await recordCrawl(db, siteId, runner, crawl, found);
  // After the crawl's transaction: a verdict is a fact about a domain, whoever holds the site.
  if (result.held && crawl.emailDomains && crawl.emailDomains.length > 0)
    await db.kysely.transaction().execute((trx) => recordEmailDomains(trx, crawl.emailDomains!, crawl.crawled_at));
  return result;
}

function recordCrawl(
  db: Db,
  siteId: number,
  runner: string,
  crawl: CrawlRecord,
  found: FoundColumns | undefined,
): Promise<{ held: boolean; places: number }> {
  return db.kysely.transaction().execute(async (trx) => {
    const { contacts, status, emailDomains: _, ...rest } = crawl;
    const r = await trx
      .updateTable('enrich_sites')
      .set({ ...rest, ...(contacts === undefined ? {} : { contacts }), ...status, status: 'done', runner: null, lease_until: null })
      .where('id', '=', siteId)
      .where('runner', '=', runner)
      .where('status', '=', 'running')
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) return { held: false, places: 0 };
    const placeIds = (await trx.selectFrom('places').select('id').where('enrich_site_id', '=', siteId).execute()).map((p) => Number(p.id));
    if (found === undefined || placeIds.length === 0) return { held: true, places: placeIds.length };
    await setFoundContactsOfSite(trx, siteId, found);
    for (let i = 0; i < placeIds.length; i += 500) {
      const chunk = placeIds.slice(i, i + 500);
      await trx.deleteFrom('place_found_keys').where('place_id', 'in', chunk).execute();
      const keys = chunk.flatMap((placeId) => found.keys.map((k) => ({ place_id: placeId, kind: k.kind, key: k.key })));
      for (let j = 0; j < keys.length; j += 500)
        await trx
          .insertInto('place_found_keys')
          .values(keys.slice(j, j + 500))
          .execute();
    }
    return { held: true, places: placeIds.length };
  });
}

/** Raises sites to the front of the queue (an enrichment job's). */
export async function prioritiseSites(db: Db, ids: readonly number[], priority: number): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) {
    await db.kysely
      .updateTable('enrich_sites')
      .set({ priority })
      .where('id', 'in', ids.slice(i, i + 500))
      .where('priority', '<', priority)
      .execute();
  }
}

/** PostgreSQL answers bigint columns as strings. */
function normaliseSite(r: SiteRow): SiteRow {
  return { ...r, id: Number(r.id), priority: Number(r.priority), attempts: Number(r.attempts), pages: Number(r.pages) };
}
