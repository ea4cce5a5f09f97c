import type { Db } from '../../infra/db/database.ts';
import { type FoundContacts, validFound } from '../contacts/contacts.ts';
import { emailDomainsOf, judgeContacts, type TrustSubject, type TrustVoice } from '../contacts/trust.ts';
import type { StoredTrust } from '../contacts/trust.types.ts';
import { type TrustModel, trustModel } from '../contacts/trust-model.ts';
import { placeChangesSince, placesVersion } from '../places/place-changes.repository.ts';
import { setPlaceTrust, type TrustOnPlace } from '../places/place-updates.repository.ts';
import {
  emailDomainVerdicts,
  placeIdsAfter,
  placesForTrust,
  recordsOfPlaces,
  saveTrustState,
  siteStatuses,
  type TrustPlaceRow,
  trustState,
} from './trust.repository.ts';

/**
 * The trust pass (docs/trust.md): judges the contacts of places and stores the result on them
 * (`places.contact_trust` and the summary a search filters on). Incremental: it follows the change log from
 * the places version it last reached, so an import or a crawl costs the places it touched; a new model
 * version, or a log pruned past its version, judges every place again. Only places whose result changed are
 * written; its own writes come back through the log once and are found unchanged.
 */

/** Places judged per read and per write transaction. */
const BATCH = 500;
/** Change-log rows read at once. */
const CHANGES_PAGE = 50_000;

export interface TrustPassResult {
  /** Places judged. */
  places: number;
  /** Places whose stored result changed. */
  changed: number;
  /** Every place was judged (first pass, new model, or the log no longer reached back). */
  full: boolean;
  /** The places version the pass has caught up to. */
  version: number;
}

export interface TrustPassOptions {
  model?: TrustModel;
  /** Judge every place, whatever the state says. */
  all?: boolean;
}

function voiceOf(row: TrustPlaceRow): TrustVoice {
  return {
    source: row.source,
    email: row.email,
    phone: row.phone,
    phone_e164: row.phone_e164,
    website: row.website,
    source_contacts: row.source_contacts,
    first_seen_at: row.first_seen_at,
    last_seen_at: row.seen_at ?? row.updated_at,
  };
}

const summaryColumns = [
  'email_status',
  'email_confidence',
  'phone_type',
  'phone_confidence',
  'website_status',
  'website_confidence',
  'lead_score',
  'verified_at',
] as const;

function unchanged(row: TrustPlaceRow, next: TrustOnPlace): boolean {
  return row.contact_trust === next.contact_trust && summaryColumns.every((c) => row[c] === next[c]);
}

/** Judges these places now and stores what changed; answers how many changed. */
export async function recomputeTrust(db: Db, placeIds: readonly number[], model: TrustModel = trustModel): Promise<number> {
  let changed = 0;
  for (let i = 0; i < placeIds.length; i += BATCH) changed += await judgeBatch(db, placeIds.slice(i, i + BATCH), model);
  return changed;
}

async function judgeBatch(db: Db, ids: readonly number[], model: TrustModel): Promise<number> {
  // Records of a place of several sources are not shown as themselves: their place is judged with them.
  const rows = (await placesForTrust(db, ids)).filter((r) => r.merged_into === null);
  if (rows.length === 0) return 0;
  const records = await recordsOfPlaces(
    db,
    rows.filter((r) => r.sources !== null).map((r) => r.id),
  );
  const recordsOf = new Map<number, TrustPlaceRow[]>();
  for (const r of records) {
    const list = recordsOf.get(r.merged_into!);
    if (list) list.push(r);
    else recordsOf.set(r.merged_into!, [r]);
  }
  const subjects = rows.map((row) => {
    const found: FoundContacts | null = validFound(row);
    const subject: TrustSubject = {
      countryCode: row.country_code,
      website: row.website,
      open: row.closed_at === null,
      voices: (recordsOf.get(row.id) ?? [row]).map(voiceOf),
      found,
      previous: row.contact_trust === null ? null : (JSON.parse(row.contact_trust) as StoredTrust),
    };
    return { row, subject };
  });
  // The site's status speaks of the place's website only while the site was derived from it.
  const siteIds = rows
    .filter((r) => r.enrich_site_id !== null && r.enrich_basis === r.website && r.website !== null)
    .map((r) => r.enrich_site_id!);
  const sites = await siteStatuses(db, [...new Set(siteIds)]);
  const domains = await emailDomainVerdicts(db, [...new Set(subjects.flatMap((s) => emailDomainsOf(s.subject)))]);
  const writes: Array<{ id: number; trust: TrustOnPlace }> = [];
  for (const { row, subject } of subjects) {
    const site = row.enrich_site_id !== null && row.enrich_basis === row.website ? sites.get(row.enrich_site_id) : undefined;
    const { trust, summary } = judgeContacts(
      subject,
      {
        emailDomains: domains,
        site: site ? { status: site.site_status, final_domain: site.final_domain, checked_at: site.status_checked_at } : null,
      },
      model,
    );
    const next: TrustOnPlace = { contact_trust: JSON.stringify(trust), ...summary };
    if (!unchanged(row, next)) writes.push({ id: row.id, trust: next });
  }
  if (writes.length > 0) await db.kysely.transaction().execute((trx) => setPlaceTrust(trx, writes));
  return writes.length;
}

/**
 * Brings every place's judgement up to date: the places changed since the pass's last version, or every
 * place when the model is new, the log was pruned past the pass, or `all` is asked.
 */
export async function refreshTrust(db: Db, options: TrustPassOptions = {}): Promise<TrustPassResult> {
  const model = options.model ?? trustModel;
  const state = await trustState(db);
  const start = await placesVersion(db);
  const result: TrustPassResult = { places: 0, changed: 0, full: false, version: start };
  let full = options.all === true || state === null || state.modelVersion !== model.version;
  let through = state?.placesVersion ?? 0;
  while (!full) {
    const page = await placeChangesSince(db, through, CHANGES_PAGE);
    if (!page.complete) {
      full = true;
      break;
    }
    result.places += page.placeIds.length;
    result.changed += await recomputeTrust(db, page.placeIds, model);
    through = page.through;
    if (!page.more) break;
  }
  if (full) {
    result.full = true;
    // Changes made while the walk goes on are after `start`: the next pass reads them from the log.
    through = start;
    for (let after = 0; ; ) {
      const ids = await placeIdsAfter(db, after, BATCH * 10);
      if (ids.length === 0) break;
      result.places += ids.length;
      result.changed += await recomputeTrust(db, ids, model);
      after = ids[ids.length - 1]!;
    }
  }
  await db.kysely
    .transaction()
    .execute((trx) => saveTrustState(trx, { placesVersion: through, modelVersion: model.version }, new Date().toISOString()));
  result.version = through;
  return result;
}

/** How far the pass has caught up (`trust_state`), for the reads that must not answer before it (search/trust-filter.ts). */
export { trustState } from './trust.repository.ts';
