import type { Db } from '../../infra/db/database.ts';
import { foldText } from '../../infra/text.ts';
import {
  allowedEdits,
  countPlaces,
  findFuzzyCandidates,
  findOneWordMatches,
  findPlacesByIds,
  findPlacesPage,
  placesVersion,
  type PlaceCriteria,
  type PlaceKey,
  type PlaceSort,
} from '../places/places.repository.ts';
import type { PublicPlaceRow } from '../places/places.schema.ts';
import { findPlacesAfterId } from '../places/places.stream.ts';

/**
 * The read side of search: what runs in the read pool's worker threads (or inline). Every function
 * takes the Db first and only structured-cloneable arguments, and returns plain data.
 */

export interface PlacePage {
  total: number;
  rows: Array<PublicPlaceRow & { distance_m: number | null }>;
  /** Key of the last row when more rows may follow, else null. */
  next: PlaceKey | null;
}

/** Smallest number of edits turning `pattern` into some substring of `text` (Sellers), capped at max+1. */
export function substringEditDistance(pattern: string, text: string, max: number): number {
  const p = [...pattern];
  const t = [...text];
  let prev = new Array<number>(t.length + 1).fill(0);
  let cur = new Array<number>(t.length + 1).fill(0);
  for (let i = 1; i <= p.length; i++) {
    cur[0] = i;
    let rowMin = i;
    for (let j = 1; j <= t.length; j++) {
      const cost = p[i - 1] === t[j - 1] ? 0 : 1;
      cur[j] = Math.min(prev[j - 1]! + cost, prev[j]! + 1, cur[j - 1]! + 1);
      if (cur[j]! < rowMin) rowMin = cur[j]!;
    }
    if (rowMin > max) return max + 1;
    [prev, cur] = [cur, prev];
  }
  return Math.min(max + 1, ...prev.slice(1), p.length);
}

/** Every name of a place, folded: the display name and each string in the `names` JSON. */
export function foldedNames(name: string, names: string | null): string {
  const all = [name];
  if (names) {
    const walk = (v: unknown): void => {
      if (typeof v === 'string') all.push(v);
      else if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') Object.values(v).forEach(walk);
    };
    try {
      walk(JSON.parse(names));
    } catch {
      // A names column that is not JSON still has the display name to match on.
    }
  }
  return foldText(all.join(' '));
}

/** Total edits a fuzzy match needed (sum over words), or null when a word is further off than it may be. */
export function fuzzyDistance(words: string[], name: string, names: string | null): number | null {
  const text = foldedNames(name, names);
  let total = 0;
  for (const word of words) {
    const w = foldText(word);
    const max = allowedEdits(w);
    const d = substringEditDistance(w, text, max);
    if (d > max) return null;
    total += d;
  }
  return total;
}

/** The order of findPlacesPage: by key, then by id, both in the key's direction. */
/**
 * Exact counts, remembered per thread while `places` does not change: paging a search, or the same
 * popular search from many clients, counts once. Checked against the places version read first, so a
 * count taken while an import commits is at worst recounted, never stale.
 */
const countCache = new Map<string, { version: number; total: number }>();
const countCacheSize = 1000;

async function exactCount(db: Db, criteria: PlaceCriteria): Promise<number> {
  const version = await placesVersion(db);
  const key = JSON.stringify(criteria);
  const hit = countCache.get(key);
  if (hit && hit.version === version) return hit.total;
  const total = await countPlaces(db, criteria);
  remember(key, version, total);
  return total;
}

/** Keeps a count taken at `version` (the version read before counting, so a later write only forces a recount). */
function remember(key: string, version: number, total: number): void {
  countCache.delete(key);
  if (countCache.size >= countCacheSize) countCache.delete(countCache.keys().next().value!);
  countCache.set(key, { version, total });
}

function compareKeys(a: PlaceKey, b: PlaceKey, descending: boolean): number {
  const sign = descending ? -1 : 1;
  if (a.key !== b.key) return (a.key < b.key ? -1 : 1) * sign;
  return (a.id - b.id) * sign;
}

/**
 * A one-word search whose total is not known yet reads up to this many matches in one pass (see
 * findOneWordMatches): the total and the first page for the price of the count alone. Once the total is
 * cached the count is free and the two lazy streams cost less than reading every match again (about 7 µs
 * per match), so the pass is only for the first time a word is searched at this version of the catalog.
 */
const oneWordCap = 1000;

/** One page of a search plus the exact total. */
export async function searchPage(db: Db, criteria: PlaceCriteria, sort: PlaceSort, after: PlaceKey | null, limit: number): Promise<PlacePage> {
  if (criteria.text?.mode === 'fuzzy') return fuzzyPage(db, criteria, sort, after, limit);
  if (after === null && sort === 'relevance' && criteria.text?.words.length === 1) {
    const version = await placesVersion(db);
    const key = JSON.stringify(criteria);
    const known = countCache.get(key);
    const matches = known && known.version === version ? null : await findOneWordMatches(db, criteria, oneWordCap);
    if (matches) {
      remember(key, version, matches.length);
      matches.sort((a, b) => a.k - b.k || a.id - b.id);
      const slice = matches.slice(0, limit);
      const last = slice.at(-1);
      return {
        total: matches.length,
        rows: await findPlacesByIds(db, slice.map((m) => m.id), null),
        next: matches.length > limit && last ? { key: last.k, id: last.id } : null,
      };
    }
  }
  const [total, rows] = await Promise.all([exactCount(db, criteria), findPlacesPage(db, criteria, sort, after, limit + 1)]);
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
 * Fuzzy text: the SQL narrows to candidates sharing an exact piece of each word; the edit distance
 * decides. The whole verified set is ordered here, so the total stays exact.
 */
async function fuzzyPage(db: Db, criteria: PlaceCriteria, sort: PlaceSort, after: PlaceKey | null, limit: number): Promise<PlacePage> {
  const words = criteria.text?.words ?? [];
  const candidates = await findFuzzyCandidates(db, criteria, sort);
  // Relevance here is the edit count, fewest first; rating and review count run highest first.
  const descending = sort === 'rating' || sort === 'review_count';
  const matched: PlaceKey[] = [];
  for (const c of candidates) {
    const d = fuzzyDistance(words, c.name, c.names);
    if (d === null) continue;
    matched.push({ key: sort === 'relevance' ? d : c.sort_key, id: c.id });
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

/** Exact number of matches. */
export async function countMatches(db: Db, criteria: PlaceCriteria): Promise<number> {
  if (criteria.text?.mode !== 'fuzzy') return exactCount(db, criteria);
  return (await searchPage(db, criteria, 'name', null, 0)).total;
}

/** A batch of matches in id order after `afterId` (fuzzy candidates verified), and where to continue. */
export async function placesAfterId(db: Db, criteria: PlaceCriteria, afterId: number, limit: number): Promise<{ rows: PublicPlaceRow[]; lastId: number | null }> {
  const rows = await findPlacesAfterId(db, criteria, afterId, limit);
  const lastId = rows.length === limit ? rows[rows.length - 1]!.id : null;
  if (criteria.text?.mode !== 'fuzzy') return { rows, lastId };
  const words = criteria.text.words;
  return { rows: rows.filter((r) => fuzzyDistance(words, r.name, r.names) !== null), lastId };
}
