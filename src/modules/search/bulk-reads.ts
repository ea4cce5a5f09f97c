import type { Db } from '../../infra/db/database.ts';
import type { PublicPlaceRow } from '../places/places.schema.ts';
import { trueOpenCriteria } from './open-filter.ts';
import { noCriteria, type PlaceCriteria } from './query/criteria.ts';
import { streamPlaces } from './query/place-stream.ts';
import { countMatches, rowCheck } from './search.reads.ts';
import type { SavedSearch, SearchDeps } from './search.types.ts';

/**
 * Reads of every place of a search, for exports, enrichment jobs and the dashboard's map: in id order, in
 * batches, each row still checked where the SQL does not decide alone (`rowCheck`).
 */

/** Up to `limit` places of the catalog inside a box (whatever they are), in id order. */
export async function placesInBox(
  deps: SearchDeps,
  box: [minLon: number, minLat: number, maxLon: number, maxLat: number],
  limit: number,
): Promise<PublicPlaceRow[]> {
  const criteria: PlaceCriteria = { ...noCriteria, bbox: box };
  return (await deps.reads.run('placesAfterId', criteria, 0, limit)).rows;
}

/**
 * Every place of a saved search, in batches of at most `batchSize`, in ascending internal id order
 * (no row repeats). One streamed query on SQLite (`streamPlaces`); nothing is held beyond a batch.
 */
export async function* iterateSearchPlaces(db: Db, search: SavedSearch, batchSize = 1000): AsyncIterable<PublicPlaceRow[]> {
  const check = rowCheck(search.criteria);
  for await (const rows of streamPlaces(db, await trueOpenCriteria(db, search.criteria), batchSize)) {
    const matches = check ? rows.filter((r) => check(r.name, r.names, r.lon, r.lat)) : rows;
    if (matches.length > 0) yield matches;
  }
}

/**
 * What a bulk read of a saved search must still check on each row, or null when the SQL decides alone
 * (`rowCheck`: the edit distance of fuzzy text, the point-in-polygon test of a drawn area).
 */
export function searchRowCheck(search: SavedSearch): ReturnType<typeof rowCheck> {
  return rowCheck(search.criteria);
}

/** Exact number of places a saved search matches now (it may differ from `total` as data changes). */
export async function countSearchPlaces(db: Db, search: SavedSearch): Promise<number> {
  return countMatches(db, await trueOpenCriteria(db, search.criteria));
}
