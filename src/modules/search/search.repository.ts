import type SQLite from 'better-sqlite3';
import type { Generated, Kysely, Selectable } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';
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

const insertColumns = ['public_id', 'account_id', 'params', 'criteria', 'resolution', 'sort', 'total', 'created_at'] as const;

interface PendingInsert {
  values: unknown[];
  done: () => void;
  failed: (err: unknown) => void;
}

/**
 * Saved searches of one SQLite connection, written in groups: every search request writes one, and a
 * commit per row costs more than the rest of a cached search. The rows queued during one turn of the
 * event loop commit together in one transaction on the next (setImmediate), and each caller's promise
 * settles only after that commit: a search id is never answered before its row is in the database.
 */
class GroupedSearchInserts {
  private queue: PendingInsert[] = [];
  private readonly insert: SQLite.Statement;
  private readonly writeAll: (rows: PendingInsert[]) => void;

  constructor(handle: SQLite.Database) {
    this.insert = handle.prepare(`INSERT INTO searches (${insertColumns.join(', ')}) VALUES (${insertColumns.map(() => '?').join(', ')})`);
    this.writeAll = handle.transaction((rows: PendingInsert[]) => {
      for (const r of rows) this.insert.run(...r.values);
    });
  }

  add(values: unknown[]): Promise<void> {
    return new Promise((done, failed) => {
      if (this.queue.length === 0) setImmediate(() => this.flush());
      this.queue.push({ values, done, failed });
    });
  }

  private flush(): void {
    const rows = this.queue;
    this.queue = [];
    try {
      this.writeAll(rows);
      for (const r of rows) r.done();
    } catch {
      // The group rolled back: one row at a time, so one bad row fails only its own request.
      for (const r of rows) {
        try {
          this.insert.run(...r.values);
          r.done();
        } catch (err) {
          r.failed(err);
        }
      }
    }
  }
}

/**
 * Saves searches; each promise resolves once its search is committed. SQLite: the saves of one event-loop turn
 * given to the same inserter commit together (the search object holds one). PostgreSQL: an INSERT each (the
 * pool runs them side by side).
 */
export const createSearchInserter = byDialect<(row: Omit<SearchRow, 'id'>) => Promise<void>>({
  sqlite: (db) => {
    const inserts = new GroupedSearchInserts(db.sqlite);
    return (row) => inserts.add(insertColumns.map((c) => row[c]));
  },
  postgres: (db) => async (row) => {
    await searches(db).insertInto('searches').values(row).execute();
  },
});

/** Saves one search (tests, fixtures); the API saves through the search object's inserter (`SearchDeps.saveSearch`). */
export function insertSearch(db: Db, row: Omit<SearchRow, 'id'>): Promise<void> {
  return createSearchInserter(db)(row);
}

/** The account's most recent saved searches, newest first. */
export function listRecentSearches(
  db: Db,
  accountId: number,
  limit: number,
): Promise<Array<Pick<SearchRow, 'public_id' | 'params' | 'resolution' | 'total' | 'created_at'>>> {
  return searches(db)
    .selectFrom('searches')
    .select(['public_id', 'params', 'resolution', 'total', 'created_at'])
    .where('account_id', '=', accountId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** A saved search of any account (the operator's command line). */
export async function findSearchById(db: Db, publicId: string): Promise<SearchRow | undefined> {
  return searches(db).selectFrom('searches').selectAll().where('public_id', '=', publicId).executeTakeFirst();
}

/** The search with that public id if `accountId` owns it; undefined otherwise (another account's looks absent). */
export async function findSearchForAccount(db: Db, accountId: number, publicId: string): Promise<SearchRow | undefined> {
  return searches(db)
    .selectFrom('searches')
    .selectAll()
    .where('public_id', '=', publicId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}
