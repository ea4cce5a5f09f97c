import type { Kysely } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { Database } from '../../infra/db/schema.ts';
import type { SearchesTable } from '../search/search.repository.ts';
import type { GeoBox } from './map.ts';

/**
 * Read-only queries behind the dashboard's lists: the account's saved searches and export log
 * (tables owned by the search and export modules, which have no list query of their own), and the
 * gazetteer names drawn on the map.
 */

function withSearches(db: Db): Kysely<Database & { searches: SearchesTable }> {
  return db.kysely.withTables<{ searches: SearchesTable }>();
}

export interface SearchListRow {
  public_id: string;
  params: string;
  resolution: string;
  total: number;
  created_at: string;
}

/** The account's most recent saved searches, newest first. */
export function listRecentSearches(db: Db, accountId: number, limit: number): Promise<SearchListRow[]> {
  return withSearches(db)
    .selectFrom('searches')
    .select(['public_id', 'params', 'resolution', 'total', 'created_at'])
    .where('account_id', '=', accountId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

export interface ExportListRow {
  public_id: string;
  search_id: string;
  format: string;
  row_count: number;
  status: string;
  created_at: string;
  finished_at: string | null;
}

/** The account's most recent exports, newest first. */
export function listRecentExports(db: Db, accountId: number, limit: number): Promise<ExportListRow[]> {
  return db.kysely
    .selectFrom('exports')
    .select(['public_id', 'search_id', 'format', 'row_count', 'status', 'created_at', 'finished_at'])
    .where('account_id', '=', accountId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** The most populous gazetteer places inside the box, for map labels. */
export function citiesInBox(db: Db, box: GeoBox, limit: number): Promise<Array<{ name: string; lat: number; lon: number }>> {
  return db.kysely
    .selectFrom('cities')
    .select(['name', 'lat', 'lon'])
    .where('lat', '>=', box.south)
    .where('lat', '<=', box.north)
    .where('lon', '>=', box.west)
    .where('lon', '<=', box.east)
    .orderBy('population', 'desc')
    .limit(limit)
    .execute();
}
