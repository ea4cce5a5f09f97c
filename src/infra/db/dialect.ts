import type SQLite from 'better-sqlite3';
import type PgModule from 'pg';
import type { Db } from './database.ts';

/** A database known to be SQLite, with its better-sqlite3 handle (the sqlite side of a dialect helper gets this). */
export type SqliteDb = Db & { readonly dialect: 'sqlite'; readonly sqlite: SQLite.Database; readonly pgPool: undefined };
/** A database known to be PostgreSQL, with its pool (for a client of its own: `COPY`). */
export type PostgresDb = Db & { readonly dialect: 'postgres'; readonly sqlite: undefined; readonly pgPool: PgModule.Pool };

export interface DialectImplementations<T> {
  sqlite: (db: SqliteDb) => T;
  postgres: (db: PostgresDb) => T;
}

/**
 * Declares one concern whose SQL or strategy differs per dialect (full text, bulk writes, streaming,
 * upserts…) with its two implementations side by side, and returns the function services and
 * repositories call: `placeWriter(db)` gives the right one, and they never ask which dialect they run on.
 * Every helper is listed in docs/architecture.md; `test/structure/layout.test.ts` keeps other branches out.
 */
export function byDialect<T>(implementations: DialectImplementations<T>): (db: Db) => T {
  return (db) => (db.dialect === 'sqlite' ? implementations.sqlite(db as SqliteDb) : implementations.postgres(db as PostgresDb));
}
