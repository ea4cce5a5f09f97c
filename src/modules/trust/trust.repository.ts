import type { Kysely } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { PlaceTrustColumns } from '../../infra/db/schema.trust.ts';
import type { Database } from '../../infra/db/schema.ts';

/**
 * The SQL of the trust pass: its state (`trust_state`, this module's table), and what it reads to judge a
 * place's contacts. `places` is written through the places module (`setPlaceTrust`); `enrich_sites` and
 * `email_domains` are the enrichment's, read here as a read model (the status of a site's last fetch, the
 * last DNS verdict of a domain) and never written.
 */

export interface TrustState {
  placesVersion: number;
  modelVersion: string;
}

export async function trustState(db: Db): Promise<TrustState | null> {
  const row = await db.kysely.selectFrom('trust_state').select(['places_version', 'model_version']).where('id', '=', 1).executeTakeFirst();
  return row ? { placesVersion: Number(row.places_version), modelVersion: row.model_version } : null;
}

export async function saveTrustState(trx: Kysely<Database>, state: TrustState, at: string): Promise<void> {
  await trx
    .insertInto('trust_state')
    .values({ id: 1, places_version: state.placesVersion, model_version: state.modelVersion, computed_at: at })
    .onConflict((oc) =>
      oc.column('id').doUpdateSet({ places_version: state.placesVersion, model_version: state.modelVersion, computed_at: at }),
    )
    .execute();
}

/** What the pass reads of a place (or of a record of a place of several sources). */
export interface TrustPlaceRow extends PlaceTrustColumns {
  id: number;
  source: string;
  email: string | null;
  phone: string | null;
  phone_e164: string | null;
  website: string | null;
  country_code: string | null;
  source_contacts: string | null;
  found_contacts: string | null;
  enrich_basis: string | null;
  enrich_site_id: number | null;
  merged_into: number | null;
  /** A place of several sources: the JSON list of its records (null for a place of one). */
  sources: string | null;
  closed_at: string | null;
  first_seen_at: string;
  updated_at: string;
  /** When the last import run that held the record started (null: no run recorded). */
  seen_at: string | null;
}

const placeColumns = [
  'places.id',
  'places.source',
  'places.email',
  'places.phone',
  'places.phone_e164',
  'places.website',
  'places.country_code',
  'places.source_contacts',
  'places.found_contacts',
  'places.enrich_basis',
  'places.enrich_site_id',
  'places.merged_into',
  'places.sources',
  'places.closed_at',
  'places.first_seen_at',
  'places.updated_at',
  'places.contact_trust',
  'places.email_status',
  'places.email_confidence',
  'places.phone_type',
  'places.phone_confidence',
  'places.website_status',
  'places.website_confidence',
  'places.lead_score',
  'places.verified_at',
] as const;

function placeQuery(db: Db) {
  return db.kysely
    .selectFrom('places')
    .leftJoin('import_runs', 'import_runs.id', 'places.seen_run_id')
    .select([...placeColumns, 'import_runs.started_at as seen_at']);
}

const asRow = (r: Record<string, unknown>): TrustPlaceRow =>
  ({
    ...r,
    id: Number(r.id),
    enrich_site_id: r.enrich_site_id === null ? null : Number(r.enrich_site_id),
    merged_into: r.merged_into === null ? null : Number(r.merged_into),
  }) as TrustPlaceRow;

/** The places of `ids` (records of a place of several sources included: the pass skips them). */
export async function placesForTrust(db: Db, ids: readonly number[]): Promise<TrustPlaceRow[]> {
  if (ids.length === 0) return [];
  return (await placeQuery(db).where('places.id', 'in', ids).execute()).map(asRow);
}

/** The records of the places of several sources among `ids`: each source's own values count as one voice. */
export async function recordsOfPlaces(db: Db, ids: readonly number[]): Promise<TrustPlaceRow[]> {
  if (ids.length === 0) return [];
  return (await placeQuery(db).where('places.merged_into', 'in', ids).execute()).map(asRow);
}

/** Place ids from `after` on, in id order: a full pass walks the catalog with it. */
export async function placeIdsAfter(db: Db, after: number, limit: number): Promise<number[]> {
  const rows = await db.kysely.selectFrom('places').select('id').where('id', '>', after).orderBy('id').limit(limit).execute();
  return rows.map((r) => Number(r.id));
}

export interface SiteStatusRow {
  id: number;
  site_status: string | null;
  final_domain: string | null;
  status_checked_at: string | null;
  crawled_at: string | null;
}

/** The status of each site's last fetch (`enrich_sites`, the enrichment's). */
export async function siteStatuses(db: Db, siteIds: readonly number[]): Promise<Map<number, SiteStatusRow>> {
  if (siteIds.length === 0) return new Map();
  const rows = await db.kysely
    .selectFrom('enrich_sites')
    .select(['id', 'site_status', 'final_domain', 'status_checked_at', 'crawled_at'])
    .where('id', 'in', siteIds)
    .execute();
  return new Map(rows.map((r) => [Number(r.id), { ...r, id: Number(r.id) }]));
}

/** The last DNS verdict of each domain (`email_domains`, the enrichment's). */
export async function emailDomainVerdicts(
  db: Db,
  domains: readonly string[],
): Promise<Map<string, { status: string; checked_at: string }>> {
  if (domains.length === 0) return new Map();
  const rows = await db.kysely
    .selectFrom('email_domains')
    .select(['domain', 'status', 'checked_at'])
    .where('domain', 'in', domains)
    .execute();
  return new Map(rows.map((r) => [r.domain, { status: r.status, checked_at: r.checked_at }]));
}

/** The places tied to these enrichment sites (what a re-check of the sites changes). */
export async function placesOfSites(db: Db, siteIds: readonly number[]): Promise<number[]> {
  if (siteIds.length === 0) return [];
  const rows = await db.kysely.selectFrom('places').select('id').where('enrich_site_id', 'in', siteIds).execute();
  return rows.map((r) => Number(r.id));
}

/**
 * The places with an email at one of these domains (what a re-check of the domains changes): every email the
 * pass judged is in `contact_trust`, and a place it has not seen yet has its `email`. One walk over the places
 * that hold an address, in pages by id, the domains matched in a set: its cost does not grow with the number of
 * domains (a `LIKE` per domain did: ten thousand domains took minutes on ten thousand places).
 */
export async function placesOfEmailDomains(db: Db, domains: readonly string[]): Promise<number[]> {
  if (domains.length === 0) return [];
  const wanted = new Set(domains.map((d) => d.toLowerCase()));
  const found: number[] = [];
  for (let after = 0; ; ) {
    const rows = await db.kysely
      .selectFrom('places')
      .select(['id', 'email', 'contact_trust'])
      .where('id', '>', after)
      .where((eb) => eb.or([eb('email', 'is not', null), eb('contact_trust', 'like', '%@%')]))
      .orderBy('id')
      .limit(EMAIL_SCAN_PAGE)
      .execute();
    for (const row of rows) if (holdsDomain(row.email, row.contact_trust, wanted)) found.push(Number(row.id));
    if (rows.length < EMAIL_SCAN_PAGE) return found;
    after = Number(rows.at(-1)!.id);
  }
}

const EMAIL_SCAN_PAGE = 5000;
/** The domain of each address in a JSON text: what follows an `@` up to the closing quote. */
const quotedDomain = /@([^"@\s]+)"/g;

function holdsDomain(email: string | null, contactTrust: string | null, wanted: ReadonlySet<string>): boolean {
  const at = email?.lastIndexOf('@') ?? -1;
  if (
    email &&
    at >= 0 &&
    wanted.has(
      email
        .slice(at + 1)
        .trim()
        .toLowerCase(),
    )
  )
    return true;
  if (!contactTrust) return false;
  for (const m of contactTrust.matchAll(quotedDomain)) if (wanted.has(m[1]!.toLowerCase())) return true;
  return false;
}
