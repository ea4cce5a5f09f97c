import { type Kysely, sql } from 'kysely';
import { dialectOf } from './helpers.ts';

/**
 * PostgreSQL: a trigram index on the other names too (`la_fold(names)`, the `names` JSON of alternative
 * and localised names). A full-text search matches a word in the name OR in the other names
 * (`anyName` in places.repository.ts); with an index on the name alone the planner could not serve the
 * OR from indexes and scanned every place for each search (about 0.8 s a word on 1M places). With both,
 * it ORs two bitmap index scans. Partial: most places have no other names.
 *
 * SQLite: nothing to do (its FTS5 document holds every name already).
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  const trgm = (
    await sql<{
      schema: string;
    }>`SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'`.execute(db)
  ).rows[0]?.schema;
  if (!trgm) return;
  const opclass = sql.raw(`${sql.id(trgm).compile(db).sql}.gin_trgm_ops`);
  await sql`CREATE INDEX IF NOT EXISTS places_names_fold_trgm_idx ON places USING gin (la_fold(names) ${opclass}) WHERE names IS NOT NULL`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  await sql`DROP INDEX IF EXISTS places_names_fold_trgm_idx`.execute(db);
}
