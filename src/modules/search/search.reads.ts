import type { Db } from '../../infra/db/database.ts';
import { checkTimeBudget } from '../../infra/db/time-budget.ts';
import { Lru } from '../../infra/lru.ts';
import { foldText } from '../../infra/text.ts';
import { placesVersion } from '../places/place-changes.repository.ts';
import type { PublicPlaceRow } from '../places/places.schema.ts';
import { type ContactHit, ContactIndex } from './engine/contact-index.ts';
import { placeFactsCarrying } from './engine/engine.repository.ts';
import { inPolygon } from './polygon.ts';
import type { PlaceCriteria, PlaceKey, PlaceSort } from './query/criteria.ts';
import {
  countPlaces,
  countPlacesBy,
  findCityIdsWithMatches,
  findFuzzyCandidates,
  findOneWordMatches,
  findPlacesByIds,
  findPlacesPage,
  type PlaceFacetColumn,
} from './query/place-query.repository.ts';
import { findPlacesAfterId } from './query/place-stream.ts';
import { editDistance, fuzzyCandidateLimit, fuzzyDistance } from './query/typos.ts';

/**
 * The read side of search: what runs in the read pool's worker threads (or inline). Every function
 * takes the Db first and only structured-cloneable arguments, and returns plain data.
 */

export interface PlacePage {
  total: number;
  rows: Array<PublicPlaceRow & { distance_m: number | null }>;
  /** Key of the last row when more rows may follow, else null. */
  next: PlaceKey | null;
  /** Typo-tolerant text only: set (to the limit) when there were more candidates than it, so none was checked. */
  candidateLimit?: number;
}

/** Fuzzy relevance keys: edits in the words × this, plus the display name's distance from the query (capped below it). */
const nameDistanceCap = 1000;

/**
 * Exact counts, remembered while `places` does not change: paging a search, or the same popular search from
 * many clients, counts once. Checked against the places version read first, so a count taken while an import
 * commits is at worst recounted, never stale. Each set of read tasks (`createSearchReads`: one per read-pool
 * thread) has its own; a call without one counts every time.
 */
export type CountCache = Lru<string, { version: number; total: number }>;
const countCacheEntries = 1000;

/**
 * The read tasks of search with their count cache: made once per read-pool thread, and once for the tasks a
 * pool runs inline (read-tasks.ts).
 */
export function createSearchReads() {
  const counts: CountCache = new Lru(countCacheEntries);
  return {
    searchPage: (db: Db, criteria: PlaceCriteria, sort: PlaceSort, after: PlaceKey | null, limit: number, candidateLimit?: number) =>
      searchPage(db, criteria, sort, after, limit, candidateLimit, counts),
    countMatches: (db: Db, criteria: PlaceCriteria) => countMatches(db, criteria, counts),
    facetCounts,
    citiesWithMatches,
    placesAfterId,
    placesByIds,
    contactHits,
  };
}

/** The open places carrying each key, as the in-memory index answers it (`ContactIndex`), by SQL. */
export async function contactHits(db: Db, keys: string[]): Promise<ContactHit[]> {
  return ContactIndex.build([await placeFactsCarrying(db, keys)]).lookup(keys);
}

async function exactCount(db: Db, criteria: PlaceCriteria, counts: CountCache | undefined): Promise<number> {
  const version = await placesVersion(db);
  const key = JSON.stringify(criteria);
  const hit = counts?.get(key);
  if (hit && hit.version === version) return hit.total;
  const total = await countPlaces(db, criteria);
  // Kept with the version read before counting, so a later write only forces a recount.
  counts?.set(key, { version, total });
  return total;
}

/** The order of findPlacesPage: by key, then by id, both in the key's direction. */
function compareKeys(a: PlaceKey, b: PlaceKey, descending: boolean): number {
  const sign = descending ? -1 : 1;
  if (a.key !== b.key) return (a.key < b.key ? -1 : 1) * sign;
  return (a.id - b.id) * sign;
}

/**
 * A one-word search whose total is not known yet reads up to this many matches in one pass (see
 * findOneWordMatches): the total and the first page for the price of the count alone. Once the total is
 * cached the count is free and the lazy streams cost less than reading every match again, so the pass is only for the first time a word is searched at this version of the catalog.
 */
const oneWordCap = 1000;

/**
 * One page of a search plus the exact total. Typo-tolerant text checks at most `candidateLimit` candidates
 * (more: an empty page that says so, `candidateLimit`).
 */
export async function searchPage(
  db: Db,
  criteria: PlaceCriteria,
  sort: PlaceSort,
  after: PlaceKey | null,
  limit: number,
  candidateLimit = fuzzyCandidateLimit,
  counts?: CountCache,
): Promise<PlacePage> {
  if (criteria.text?.mode === 'fuzzy') return checkedPage(db, criteria, sort, after, limit, candidateLimit);
  if (criteria.polygon) return checkedPage(db, criteria, sort, after, limit, polygonCandidateLimit);
  if (after === null && sort === 'relevance' && criteria.text?.words.length === 1) {
    const version = await placesVersion(db);
    const key = JSON.stringify(criteria);
    const known = counts?.get(key);
    const matches = known && known.version === version ? null : await findOneWordMatches(db, criteria, oneWordCap);
    if (matches) {
      counts?.set(key, { version, total: matches.length });
      matches.sort((a, b) => a.k - b.k || a.id - b.id);
      const slice = matches.slice(0, limit);
      const last = slice.at(-1);
      return {
        total: matches.length,
        rows: await findPlacesByIds(
          db,
          slice.map((m) => m.id),
          null,
        ),
        next: matches.length > limit && last ? { key: last.k, id: last.id } : null,
      };
    }
  }
  const [total, rows] = await Promise.all([exactCount(db, criteria, counts), findPlacesPage(db, criteria, sort, after, limit + 1)]);
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    total,
    rows: page.map(({ sort_key: _key, ...row }) => row),
    next: more && last ? { key: last.sort_key, id: last.id } : null,
  };
}

/**
 * A drawn area's candidates checked at most (its bounding box, with the other criteria): beyond, the
 * search is refused (400 naming the polygon) rather than checked place by place.
 */
export const polygonCandidateLimit = 100_000;

/**
 * Searches the SQL cannot decide alone. Fuzzy text: the SQL narrows to candidates sharing an exact piece
 * of each word; the edit distance decides. A drawn area: the SQL narrows to its bounding box; the
 * point-in-polygon test decides. The whole checked set is ordered here, so the total stays exact.
 */
async function checkedPage(
  db: Db,
  criteria: PlaceCriteria,
  sort: PlaceSort,
  after: PlaceKey | null,
  limit: number,
  candidateLimit: number | null,
): Promise<PlacePage> {
  const fuzzy = criteria.text?.mode === 'fuzzy';
  const words = criteria.text?.words ?? [];
  const polygon = criteria.polygon ?? null;
  const listed = await findFuzzyCandidates(db, criteria, sort, candidateLimit);
  if (listed === null || (candidateLimit !== null && listed.rows.length > candidateLimit))
    return { total: 0, rows: [], next: null, candidateLimit: candidateLimit ?? 0 };
  const { rows: candidates, descending: keyDescending } = listed;
  // Fuzzy relevance is the edit count, fewest first, then how far the display name is from the whole query
  // (`Bulder` puts the place named Boulder before Boulder Beer); other keys run as the SQL's sort says.
  const fuzzyRelevance = fuzzy && sort === 'relevance';
  const descending = fuzzyRelevance ? false : keyDescending;
  const query = foldText(words.join(' '));
  const matched: PlaceKey[] = [];
  for (const [i, c] of candidates.entries()) {
    if ((i & 255) === 255) checkTimeBudget();
    if (polygon && !inPolygon(polygon, c.lon, c.lat)) continue;
    const d = fuzzy ? fuzzyDistance(words, c.name, c.names) : 0;
    if (d === null) continue;
    matched.push({
      key: fuzzyRelevance ? d * nameDistanceCap + Math.min(nameDistanceCap - 1, editDistance(query, foldText(c.name))) : c.sort_key,
      id: c.id,
    });
  }
  matched.sort((a, b) => compareKeys(a, b, descending));
  const start = after ? matched.findIndex((k) => compareKeys(k, after, descending) > 0) : 0;
  const slice = start < 0 ? [] : matched.slice(start, start + limit);
  const rows = await findPlacesByIds(
    db,
    slice.map((k) => k.id),
    criteria.near,
  );
  const more = start >= 0 && start + limit < matched.length;
  return { total: matched.length, rows, next: more ? (slice.at(-1) ?? null) : null };
}

/** Which of `cityIds` have places matching the criteria, in the order given (see `findCityIdsWithMatches`). */
export async function citiesWithMatches(db: Db, criteria: PlaceCriteria, cityIds: number[]): Promise<number[]> {
  const found = new Set(await findCityIdsWithMatches(db, criteria, cityIds));
  return cityIds.filter((id) => found.has(id));
}

/** Exact number of matches. */
export async function countMatches(db: Db, criteria: PlaceCriteria, counts?: CountCache): Promise<number> {
  if (criteria.text?.mode !== 'fuzzy' && !criteria.polygon) return exactCount(db, criteria, counts);
  // A saved checked search had few enough candidates when it was made: counted as an export reads it, all of them.
  return (await checkedPage(db, criteria, 'name', null, 0, null)).total;
}

/** A batch of matches in id order after `afterId` (fuzzy candidates verified), and where to continue. */
/** The rows of a page the search engine's index chose, in the order of its ids (off the event loop, like any page). */
export function placesByIds(db: Db, ids: number[]): ReturnType<typeof findPlacesByIds> {
  return findPlacesByIds(db, ids, null);
}

export async function placesAfterId(
  db: Db,
  criteria: PlaceCriteria,
  afterId: number,
  limit: number,
): Promise<{ rows: PublicPlaceRow[]; lastId: number | null }> {
  const rows = await findPlacesAfterId(db, criteria, afterId, limit);
  const lastId = rows.length === limit ? rows[rows.length - 1]!.id : null;
  const check = rowCheck(criteria);
  return { rows: check ? rows.filter((r) => check(r.name, r.names, r.lon, r.lat)) : rows, lastId };
}

/**
 * What a bulk read of a search must still check on each row, or null when the SQL decides alone: fuzzy
 * criteria select candidates, and the edit distance on every name (`name` and the `names` JSON) decides; a
 * drawn area's box selects candidates, and the point-in-polygon test decides.
 */
export function rowCheck(
  criteria: PlaceCriteria,
): ((name: string, names: string | null, lon: number | null, lat: number | null) => boolean) | null {
  const text = criteria.text?.mode === 'fuzzy' ? criteria.text : null;
  const polygon = criteria.polygon ?? null;
  if (!text && !polygon) return null;
  return (name, names, lon, lat) =>
    (!polygon || inPolygon(polygon, lon, lat)) && (!text || fuzzyDistance(text.words, name, names) !== null);
}

/** Matches per value of a dimension (`countPlacesBy`), largest first; a boolean fact as true and false. */
export async function facetCounts(
  db: Db,
  criteria: PlaceCriteria,
  by: PlaceFacetColumn,
): Promise<Array<{ value: string | number | boolean; count: number }>> {
  const rows = await countPlacesBy(db, criteria, by);
  const boolean = by !== 'category' && by !== 'city' && by !== 'country';
  const out = rows.map((r) => ({ value: boolean ? Number(r.value) === 1 : by === 'city' ? Number(r.value) : r.value, count: r.n }));
  return out.sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
}
