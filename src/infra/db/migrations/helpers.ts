import { type Kysely, PostgresAdapter } from 'kysely';

/** Which dialect a migration runs on; the only branch a migration may take. */
export function dialectOf(db: Kysely<any>): 'sqlite' | 'postgres' {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/** An auto-incrementing integer primary key in either dialect. */
export function serialType(db: Kysely<any>): 'integer' | 'bigserial' {
  return dialectOf(db) === 'postgres' ? 'bigserial' : 'integer';
}

/** 8-byte float: `real` is 8 bytes in SQLite but 4 in PostgreSQL. */
export function doubleType(db: Kysely<any>): 'real' | 'double precision' {
  return dialectOf(db) === 'postgres' ? 'double precision' : 'real';
}
