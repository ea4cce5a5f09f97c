import { type SqlBool, sql } from 'kysely';

/**
 * Facts of a place record as SQL over `places`, the one definition each: what its contacts are (the source's and
 * what enrichment found), for the search conditions, the exclusions, the search engine's index and the catalog's
 * statistics alike.
 */

/**
 * What enrichment found counts only while the website (or email) it was found from is still the place's
 * (`contacts/contacts.ts`, `foundStillValid`): a re-import that changed it hides the found values at once.
 */
export const foundValid = sql<SqlBool>`places.enrich_basis = coalesce(places.website, places.email)`;

/** 1 when the place has `column` (found by enrichment) and it still counts, else 0 (never null, so it negates). */
export const foundHas = (column: 'found_email' | 'found_phone') =>
  sql<number>`(CASE WHEN places.${sql.ref(column)} IS NOT NULL AND ${foundValid} THEN 1 ELSE 0 END)`;

/**
 * 1 when the place has a social profile: in its source's lists (`source_contacts`, JSON whose `socials` key
 * is only written when the list has items) or found on its website; else 0.
 */
export const hasSocialExpr = sql<number>`(CASE WHEN places.source_contacts LIKE '%"socials":%' OR (places.found_social = 1 AND ${foundValid}) THEN 1 ELSE 0 END)`;

/**
 * Whether a place has each kind of contact, from its source alone (`source`) and with what its website gave
 * (`enriched`): 1 or 0, for coverage counts (`leadatlas stats`).
 */
export const contactPresence = {
  source: {
    phone: sql<number>`(CASE WHEN places.phone IS NOT NULL THEN 1 ELSE 0 END)`,
    website: sql<number>`(CASE WHEN places.website IS NOT NULL THEN 1 ELSE 0 END)`,
    email: sql<number>`(CASE WHEN places.email IS NOT NULL THEN 1 ELSE 0 END)`,
    social: sql<number>`(CASE WHEN places.source_contacts LIKE '%"socials":%' THEN 1 ELSE 0 END)`,
  },
  enriched: {
    phone: sql<number>`(CASE WHEN places.phone IS NOT NULL OR ${foundHas('found_phone')} = 1 THEN 1 ELSE 0 END)`,
    email: sql<number>`(CASE WHEN places.email IS NOT NULL OR ${foundHas('found_email')} = 1 THEN 1 ELSE 0 END)`,
    social: hasSocialExpr,
  },
};

/**
 * What a search's conditions (`whereCriteria` in search/query/criteria.sql.ts) decide about a place without text,
 * geography or an account, as 0/1 (or the value)
 * per row: the facts the search engine's in-memory index holds (`search/engine/`). Each says exactly what
 * the condition of the same name there says; the engine's parity test compares the two on real data.
 */
export const indexedPlaceFacts = {
  open: sql<number>`(CASE WHEN places.closed_at IS NULL THEN 1 ELSE 0 END)`,
  visible: sql<number>`(CASE WHEN places.merged_into IS NULL THEN 1 ELSE 0 END)`,
  has_phone: sql<number>`(CASE WHEN (places.phone IS NOT NULL AND places.phone != '') OR ${foundHas('found_phone')} = 1 THEN 1 ELSE 0 END)`,
  has_website: sql<number>`(CASE WHEN places.website IS NOT NULL AND places.website != '' THEN 1 ELSE 0 END)`,
  has_email: sql<number>`(CASE WHEN (places.email IS NOT NULL AND places.email != '') OR ${foundHas('found_email')} = 1 THEN 1 ELSE 0 END)`,
  has_social: hasSocialExpr,
  /** The default order's key (relevance without text or `near`, and `review_count`): see `sortKeyExpr`. */
  review_key: sql<number>`coalesce(places.review_count, -1)`,
};
