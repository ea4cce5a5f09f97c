import { decodeCursor, encodeCursor } from '../../infra/cursor.ts';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { randomBytesFromPool } from '../../infra/random.ts';
import type { AccountExclusion } from '../leads/exclusion.sql.ts';
import { accountExclusion } from '../leads/exclusion.ts';
import { type PlaceCriteria, type PlaceKey, type PlaceSort, parseStoredCriteria } from './query/criteria.ts';
import { findSearchById, findSearchForAccount, listRecentSearches, type SearchRow } from './search.repository.ts';
import type { SavedSearch, SearchInput, SearchResolution } from './search.types.ts';

/**
 * Saved searches as the other modules see them: their ids and page cursors, a saved search read back (its
 * criteria checked), the account's recent ones, and a saved search as it runs for its account now.
 */

/** Whether a text has the shape of a saved search's public id (`srch_` and 16 letters of base32). */
export function isSearchId(text: string): boolean {
  return /^srch_[a-z2-7]{16}$/.test(text);
}

/** A page cursor of a saved search: the search and the position after which the next page starts. */
export function encodeSearchCursor(searchId: string, key: PlaceKey): string {
  return encodeCursor({ s: searchId, k: key.key, i: key.id });
}

export function decodeSearchCursor(cursor: string): { searchId: string; key: PlaceKey } {
  return decodeCursor(
    cursor,
    (value) => {
      const v = value as { s?: unknown; k?: unknown; i?: unknown } | null;
      if (
        typeof v?.s === 'string' &&
        isSearchId(v.s) &&
        (typeof v.k === 'number' || typeof v.k === 'string') &&
        Number.isSafeInteger(v.i)
      ) {
        return { searchId: v.s, key: { key: v.k, id: v.i as number } };
      }
      return undefined;
    },
    { field: 'querystring.cursor', message: 'is not a cursor this API issued: use links.next of a previous page' },
  );
}

const searchIdAlphabet = 'abcdefghijklmnopqrstuvwxyz234567';

export function newSearchId(): string {
  const bytes = randomBytesFromPool(16);
  let id = 'srch_';
  for (let i = 0; i < 16; i++) id += searchIdAlphabet[bytes[i]! & 31];
  return id;
}

/** A saved search as a list shows it: what it looked for, how that resolved, how many places it found. */
export interface SearchSummary {
  id: string;
  params: SearchInput;
  resolution: SearchResolution;
  total: number;
  createdAt: string;
}

/** The account's most recent saved searches, newest first. */
export async function recentSearches(db: Db, accountId: number, limit: number): Promise<SearchSummary[]> {
  const rows = await listRecentSearches(db, accountId, limit);
  return rows.map((row) => ({
    id: row.public_id,
    params: JSON.parse(row.params) as SearchInput,
    resolution: JSON.parse(row.resolution) as SearchResolution,
    total: Number(row.total),
    createdAt: row.created_at,
  }));
}

function rowToSavedSearch(row: SearchRow): SavedSearch {
  return {
    id: row.public_id,
    accountId: Number(row.account_id),
    params: JSON.parse(row.params) as SearchInput,
    criteria: parseStoredCriteria(row.criteria),
    resolution: JSON.parse(row.resolution) as SearchResolution,
    sort: row.sort as PlaceSort,
    total: Number(row.total),
    createdAt: row.created_at,
  };
}

/**
 * A saved search of this account. Throws AppError `not_found` for an unknown id and for another
 * account's search alike, so ids cannot be probed.
 */
export async function getSearchForAccount(db: Db, accountId: number, searchId: string): Promise<SavedSearch> {
  const row = isSearchId(searchId) ? await findSearchForAccount(db, accountId, searchId) : undefined;
  if (!row) throw new AppError('not_found', `search ${searchId} does not exist`);
  return rowToSavedSearch(row);
}

/** A saved search of any account, for the operator's command line (`leadatlas enrich --search`). */
export async function getSearchById(db: Db, searchId: string): Promise<SavedSearch> {
  const row = isSearchId(searchId) ? await findSearchById(db, searchId) : undefined;
  if (!row) throw new AppError('not_found', `search ${searchId} does not exist`);
  return rowToSavedSearch(row);
}

/** The criteria as they run for this account now: the saved ones plus what the account leaves out. */
export function forAccount(criteria: PlaceCriteria, exclusion: AccountExclusion | null): PlaceCriteria {
  return exclusion ? { ...criteria, exclude: exclusion } : criteria;
}

/** The criteria as saved: an exclusion is added each time the search runs, never stored with it. */
export function asSaved(criteria: PlaceCriteria): PlaceCriteria {
  if (criteria.exclude === undefined) return criteria;
  const { exclude: _exclude, ...saved } = criteria;
  return saved;
}

/**
 * A saved search as it runs for its account now: its criteria plus what the account leaves out (its
 * suppression list, and with `onlyNew`, by default the search's own, its leads), for the bulk reads
 * (exports, the dashboard's map) that take a SavedSearch.
 */
export async function searchAsItRunsNow(db: Db, search: SavedSearch, onlyNew = onlyNewOf(search)): Promise<SavedSearch> {
  const exclusion = await accountExclusion(db, search.accountId, { onlyNew });
  return exclusion ? { ...search, criteria: forAccount(search.criteria, exclusion) } : search;
}

/** Whether a saved search asked for new places only (`only_new`). */
export function onlyNewOf(search: SavedSearch): boolean {
  return search.params.only_new === true;
}
