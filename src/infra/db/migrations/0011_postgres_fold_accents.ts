import { type Kysely, sql } from 'kysely';
import { dialectOf } from './helpers.ts';

/**
 * PostgreSQL: name search folds case and accents, as SQLite's trigram FTS5 (`remove_diacritics`) does,
 * so `koln` finds `Köln` on either database. `la_fold(text)` is lower(unaccent(text)), declared IMMUTABLE
 * (with the dictionary named, as an index expression must be) in the connection's own schema; the trigram
 * index of 0004 on lower(name) is replaced by one on la_fold(name).
 *
 * Without the unaccent extension (it ships with PostgreSQL's contrib) la_fold is lower() alone: the
 * search still works, case-insensitively, as before. SQLite: nothing to do.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  const available = await sql<{ name: string }>`SELECT name FROM pg_available_extensions WHERE name IN ('unaccent', 'pg_trgm')`.execute(db);
  const has = (name: string) => available.rows.some((r) => r.name === name);
  const schemaOf = async (extension: string) =>
    (
      await sql<{
        schema: string;
      }>`SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = ${extension}`.execute(
        db,
      )
    ).rows[0]?.schema;
  if (has('unaccent')) {
    // In public, never in a connection's own schema (see 0004 for pg_trgm).
    await sql`CREATE EXTENSION IF NOT EXISTS unaccent WITH SCHEMA public`.execute(db);
    const ext = sql.id((await schemaOf('unaccent')) ?? 'public').compile(db).sql;
    await sql
      .raw(`CREATE FUNCTION la_fold(text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
            AS $$ SELECT lower(${ext}.unaccent('${ext}.unaccent'::regdictionary, $1)) $$`)
      .execute(db);
  } else {
    await sql
      .raw(`CREATE FUNCTION la_fold(text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$ SELECT lower($1) $$`)
      .execute(db);
  }
  if (has('pg_trgm') && (await schemaOf('pg_trgm'))) {
    const opclass = sql.raw(`${sql.id((await schemaOf('pg_trgm'))!).compile(db).sql}.gin_trgm_ops`);
    await sql`DROP INDEX IF EXISTS places_name_trgm_idx`.execute(db);
    await sql`CREATE INDEX places_name_fold_trgm_idx ON places USING gin (la_fold(name) ${opclass})`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  await sql`DROP INDEX IF EXISTS places_name_fold_trgm_idx`.execute(db);
  await sql`DROP FUNCTION IF EXISTS la_fold(text)`.execute(db);
}
