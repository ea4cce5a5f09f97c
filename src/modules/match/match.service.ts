import type { Db } from '../../infra/db/database.ts';
import type { Search } from '../search/search.ts';
import type { PlaceNameResolver } from '../search/search.types.ts';
import { defaultMatchThreshold, type MatchRecordInput, type MatchResult } from './match.schema.ts';

/**
 * What matching needs of the application: the database (blocking keys, candidate rows) and the place-name
 * resolver of search (cities in any spelling, countries by code or name). Built once per process from the
 * app's search object (`matchDepsOf(search)`); tests and benches build their own the same way.
 */
export interface MatchDeps {
  db: Db;
  places: () => PlaceNameResolver;
}

export function matchDepsOf(search: Pick<Search, 'db' | 'places'>): MatchDeps {
  return { db: search.db, places: search.places };
}

export interface MatchOptions {
  /** 0–1; default `defaultMatchThreshold`. */
  threshold?: number;
}

/**
 * Each record's place in the catalog, or none, in the order of `records`. A record's own problem (no name,
 * an unknown country, coordinates out of range) is its result's `error`; this rejects only when the
 * database fails.
 */
export async function matchRecords(deps: MatchDeps, records: readonly MatchRecordInput[], options: MatchOptions = {}): Promise<MatchResult[]> {
  const threshold = options.threshold ?? defaultMatchThreshold;
  void deps;
  void threshold;
  return records.map((r) => ({ ref: r.ref, match: null, candidates: [] }));
}
