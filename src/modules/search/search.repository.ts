import type { Generated, Kysely, Selectable } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { Database } from '../../infra/db/schema.ts';

/** Row type of `searches` (migration 0004_searches). */
export interface SearchesTable {
  id: Generated<number>;
  /** `srch_` + 16 base32 characters. */
  public_id: string;
  account_id: number;
  /** JSON: the parameters as the caller sent them, normalised. */
  params: string;
  /** JSON: `PlaceCriteria`, what they resolved to. */
  criteria: string;
  /** JSON: how `type`, `city` and `country` were resolved. */
  resolution: string;
  sort: string;
  /** Exact number of places when the search was created. */
  total: number;
  created_at: string;
}

export type SearchRow = Selectable<SearchesTable>;

function searches(db: Db): Kysely<Database & { searches: SearchesTable }> {
  return db.kysely.withTables<{ searches: SearchesTable }>();
}

export async function insertSearch(db: Db, row: Omit<SearchRow, 'id'>): Promise<SearchRow> {
  return searches(db).insertInto('searches').values(row).returningAll().executeTakeFirstOrThrow();
}

/** The search with that public id if `accountId` owns it; undefined otherwise (another account's looks absent). */
export async function findSearchForAccount(db: Db, accountId: number, publicId: string): Promise<SearchRow | undefined> {
  return searches(db).selectFrom('searches').selectAll().where('public_id', '=', publicId).where('account_id', '=', accountId).executeTakeFirst();
}
