import { type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import type { PlaceTrustColumns } from '../../infra/db/schema.trust.ts';
import type { Database } from '../../infra/db/schema.ts';

/**
 * The writes to `places` that other modules ask for, each joining the caller's open transaction (`trx`): what
 * enrichment found for a place (`found_*`, with the site it came from) and the retirement of the records an
 * import no longer holds. `places` is this module's table: nothing else writes it (test/structure/tables.test.ts).
 */

/** What a place's website gave, as stored on the place (`contacts/contacts.ts` reads it back). */
export interface FoundOnPlace {
  found_contacts: string | null;
  found_email: string | null;
  found_phone: string | null;
  found_social: number;
}

/** Ties a place to its enrichment site and stores what the site found so far. */
export async function linkFoundContacts(
  trx: Kysely<Database>,
  placeId: number,
  link: { siteId: number; basis: string; found: FoundOnPlace },
): Promise<void> {
  await trx
    .updateTable('places')
    .set({ enrich_site_id: link.siteId, enrich_basis: link.basis, ...foundColumns(link.found) })
    .where('id', '=', placeId)
    .execute();
}

/** Unties places from their site: nothing found counts for them any more. */
export async function unlinkFoundContacts(trx: Kysely<Database>, placeIds: number[]): Promise<void> {
  await trx
    .updateTable('places')
    .set({ enrich_site_id: null, enrich_basis: null, found_contacts: null, found_email: null, found_phone: null, found_social: 0 })
    .where('id', 'in', placeIds)
    .execute();
}

/** What a site found, given to every place tied to it. */
export async function setFoundContactsOfSite(trx: Kysely<Database>, siteId: number, found: FoundOnPlace): Promise<void> {
  await trx.updateTable('places').set(foundColumns(found)).where('enrich_site_id', '=', siteId).execute();
}

function foundColumns(found: FoundOnPlace): FoundOnPlace {
  return {
    found_contacts: found.found_contacts,
    found_email: found.found_email,
    found_phone: found.found_phone,
    found_social: found.found_social,
  };
}

/**
 * Retires the open (or closed but not retired) records of `source` that `scope` picks: `sourceIds`, exactly
 * those (a change file's deletions); `seenByRuns`, those last seen by one of the runs the subquery lists.
 * Retired records keep their rows, ids and content. Answers how many were retired.
 */
export async function retirePlaces(
  trx: Kysely<Database>,
  at: string,
  scope: { source: string; sourceIds: string[] } | { seenByRuns: SelectQueryBuilder<Database, 'import_runs', { id: number }> },
): Promise<number> {
  const retire = trx
    .updateTable('places')
    .set({ closed_reason: 'retired', closed_at: sql<string>`coalesce(closed_at, ${at})` })
    .where((eb) => eb.or([eb('closed_reason', 'is', null), eb('closed_reason', '!=', 'retired')]));
  const retired =
    'sourceIds' in scope
      ? await retire.where('source', '=', scope.source).where('source_id', 'in', scope.sourceIds).executeTakeFirst()
      : await retire.where('seen_run_id', 'in', scope.seenByRuns).executeTakeFirst();
  return Number(retired.numUpdatedRows);
}

/**
 * The trust pass's result for one place (`trust/`, migration 0037): the evidence of each contact value
 * (`contact_trust`, JSON `StoredTrust`) and the summary searches filter on.
 */
export type TrustOnPlace = PlaceTrustColumns;

/** Stores what the trust pass computed for each place (only the places whose result changed are passed). */
export async function setPlaceTrust(trx: Kysely<Database>, rows: ReadonlyArray<{ id: number; trust: TrustOnPlace }>): Promise<void> {
  for (const { id, trust } of rows) await trx.updateTable('places').set(trust).where('id', '=', id).execute();
}
