import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../../../infra/db/database.ts';
import { indexedPlaceFacts } from '../../places/place-facts.ts';
import { type PublicPlaceRow, publicPlaceSelection } from '../../places/places.schema.ts';
import {
  distanceExpr,
  filtered,
  fuzzyListing,
  placeNarrowed,
  sortKeyExpr,
  textLeads,
  textOnlySearch,
  whereCriteria,
} from './criteria.sql.ts';
import type { PlaceCriteria, PlaceKey, PlaceSort } from './criteria.ts';

/**
 * The queries of a search over `places`: exact counts, keyset pages on a unique order, counts per value,
 * typo-tolerant candidates, rows by id. The conditions are `whereCriteria`'s (criteria.sql.ts).
 */

export type PlaceRowWithKey = PublicPlaceRow & { sort_key: number | string; distance_m: number | null };

/**
 * A search on one word alone, answered in one pass over the text index: every match with its relevance
 * key (`textTiers`), unsorted; null when the dialect cannot, or when
 * there are more than `cap` matches (then counting and the two lazy streams of `findPlacesPage` cost less
 * than reading them all).
 */
export async function findOneWordMatches(db: Db, criteria: PlaceCriteria, cap: number): Promise<Array<{ id: number; k: number }> | null> {
  const textOnly = textOnlySearch(db, criteria);
  if (!textOnly || criteria.text!.words.length !== 1) return null;
  const { rows } = await textOnly.allOfOneWord(criteria.text!.words[0]!, cap, !criteria.includeClosed).execute(db.kysely);
  return rows.length > cap ? null : rows;
}

/** Exact number of places matching (the fuzzy mode counts candidates: the caller verifies them). */
export async function countPlaces(db: Db, criteria: PlaceCriteria): Promise<number> {
  const textOnly = textOnlySearch(db, criteria);
  if (textOnly) return Number((await textOnly.count(criteria.text!.words, !criteria.includeClosed).execute(db.kysely)).rows[0]?.n ?? 0);
  const row = await filtered(db, criteria)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * One page in the requested order, strictly after `after`. Sorting happens on ids and sort keys only
 * (a covering index serves city/category searches by review count or rating), then the page's rows are read:
 * thousands of matches cost an index scan, not thousands of row reads.
 */
export async function findPlacesPage(
  db: Db,
  criteria: PlaceCriteria,
  sort: PlaceSort,
  after: PlaceKey | null,
  limit: number,
): Promise<PlaceRowWithKey[]> {
  const { expr, descending } = sortKeyExpr(db, criteria, sort);
  // Ties break on the id in the same direction as the key, so an index on the key gives the whole order.
  const direction = descending ? 'desc' : 'asc';
  const past = descending ? '<' : '>';
  const textOnly = sort === 'relevance' ? textOnlySearch(db, criteria) : null;
  if (textOnly) {
    const page = sql<{ id: number; k: number }>`(${textOnly.page(criteria.text!.words, after, limit, !criteria.includeClosed)})`;
    return (await db.kysely
      .selectFrom(page.as('page'))
      .innerJoin('places', 'places.id', 'page.id')
      .select(publicPlaceSelection)
      .select(['page.k as sort_key', sql<null>`NULL`.as('distance_m')])
      .orderBy('page.k')
      .orderBy('page.id')
      .execute()) as PlaceRowWithKey[];
  }
  let ids = filtered(db, criteria).select('places.id');
  if (after)
    ids = ids.where((eb) => eb.or([eb(expr, past, after.key), eb.and([eb(expr, '=', after.key), eb('places.id', past, after.id)])]));
  const rows = await db.kysely
    .selectFrom('places')
    .select(publicPlaceSelection)
    .select(expr.as('sort_key'))
    .select(criteria.near ? distanceExpr(criteria.near.lat, criteria.near.lon).as('distance_m') : sql<null>`NULL`.as('distance_m'))
    .where('places.id', 'in', ids.orderBy(expr, direction).orderBy('places.id', direction).limit(limit))
    .orderBy(expr, direction)
    .orderBy('places.id', direction)
    .execute();
  return rows as PlaceRowWithKey[];
}

/** The columns and facts facet counts group by (see `indexedPlaceFacts`). */
export const placeFacetColumns = {
  category: sql<string | null>`places.category`,
  city: sql<number | null>`places.city_id`,
  country: sql<string | null>`places.country_code`,
  has_phone: indexedPlaceFacts.has_phone,
  has_website: indexedPlaceFacts.has_website,
  has_email: indexedPlaceFacts.has_email,
  has_social: indexedPlaceFacts.has_social,
};
export type PlaceFacetColumn = keyof typeof placeFacetColumns;

/** Matches per value of a column or fact (nulls left out), exact. Substring text, geography and exclusions apply as in a count. */
export async function countPlacesBy(
  db: Db,
  criteria: PlaceCriteria,
  by: PlaceFacetColumn,
): Promise<Array<{ value: string | number; n: number }>> {
  const column: RawBuilder<unknown> = placeFacetColumns[by];
  const rows = await filtered(db, criteria)
    .select(column.as('value'))
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .groupBy(column)
    .execute();
  return rows.filter((r) => r.value !== null).map((r) => ({ value: r.value as string | number, n: Number(r.n) }));
}

/**
 * Which of `cityIds` have places matching the criteria (their own `cityId` aside): the cities a search may
 * turn to when the city it chose has none. In fuzzy mode, cities with candidates (the caller verifies them).
 */
export async function findCityIdsWithMatches(db: Db, criteria: PlaceCriteria, cityIds: number[]): Promise<number[]> {
  if (cityIds.length === 0) return [];
  const rows = await filtered(db, { ...criteria, cityId: null })
    .where('places.city_id', 'in', cityIds)
    .select('places.city_id')
    .distinct()
    .execute();
  return rows.map((r) => Number(r.city_id));
}

/**
 * Candidates the caller checks (fuzzy text, a drawn area) with what it needs to check and order them: the
 * names, the coordinates, the sort key and its direction. At
 * most `limit + 1` (more than `limit`: too many to check; `limit` null: all of them); null when the text
 * index alone lists more than `limit`. When the text index leads and nothing else
 * narrows, the cap is on the index's listing itself (it is then a candidate set of its own: more than
 * `limit` places hold a piece); otherwise on the rows the other indexes give.
 */
export async function findFuzzyCandidates(
  db: Db,
  criteria: PlaceCriteria,
  sort: PlaceSort,
  limit: number | null,
): Promise<{
  descending: boolean;
  rows: Array<{ id: number; name: string; names: string | null; lat: number | null; lon: number | null; sort_key: number | string }>;
} | null> {
  // Typo-tolerant relevance is computed by the caller (the edits): the name is only its tie-breaker.
  const { expr, descending } = sortKeyExpr(db, criteria, sort === 'relevance' && criteria.text?.mode === 'fuzzy' ? 'name' : sort);
  const cap = limit !== null && criteria.text?.mode === 'fuzzy' && textLeads(criteria) && !placeNarrowed(criteria) ? limit + 1 : undefined;
  if (cap !== undefined && criteria.text) {
    // The capped listing is then filtered by the other criteria (a box, places without coordinates): whether
    // it was cut is known from the listing itself.
    const listed = fuzzyListing(db, criteria.text.words, cap);
    if (listed && Number((await listed.execute(db.kysely)).rows[0]?.n ?? 0) >= cap) return null;
  }
  const query = db.kysely
    .selectFrom('places')
    .where((eb) => whereCriteria(db, criteria, eb, cap))
    .select(['places.id', 'places.name', 'places.lat', 'places.lon'])
    // The names only for the edit distance: a drawn area's candidates can be many.
    .select(criteria.text?.mode === 'fuzzy' ? sql<string | null>`places.names`.as('names') : sql<null>`NULL`.as('names'))
    .select(expr.as('sort_key'));
  return { descending, rows: await (limit === null ? query : query.limit(limit + 1)).execute() };
}

export async function findPlacesByIds(
  db: Db,
  ids: number[],
  near: PlaceCriteria['near'],
): Promise<Array<PublicPlaceRow & { distance_m: number | null }>> {
  if (ids.length === 0) return [];
  const rows = await db.kysely
    .selectFrom('places')
    .select(publicPlaceSelection)
    .select(near ? distanceExpr(near.lat, near.lon).as('distance_m') : sql<null>`NULL`.as('distance_m'))
    .where('places.id', 'in', ids)
    .execute();
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)).filter((r): r is PublicPlaceRow & { distance_m: number | null } => r !== undefined);
}
