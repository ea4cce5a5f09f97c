import { type Kysely, sql } from 'kysely';
import { dialectOf } from './helpers.ts';

/**
 * SQLite: the per-row triggers of `places` lose the `WHEN NOT EXISTS (SELECT 1 FROM places_deferred_indexing)`
 * clause of 0010, and the marker table goes. The import writer stopped using the marker (it takes the
 * triggers off for its own transaction and puts them back before it commits), so the clause only made
 * every other write to `places` run a subquery per row. The triggers' bodies are kept as they are in the
 * database: only the clause is cut out of their SQL.
 *
 * PostgreSQL never had the marker: nothing to do.
 */
const clause = ' WHEN NOT EXISTS (SELECT 1 FROM places_deferred_indexing)';
const withClause = ['places_search_ai', 'places_search_au_names', 'places_version_insert', 'places_version_update'];

async function triggersOfPlaces(db: Kysely<any>): Promise<Array<{ name: string; sql: string }>> {
  const { rows } = await sql<{
    name: string;
    sql: string;
  }>`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'places'`.execute(db);
  return rows;
}

export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'sqlite') return;
  for (const trigger of await triggersOfPlaces(db)) {
    if (!trigger.sql.includes(clause)) continue;
    await sql.raw(`DROP TRIGGER ${trigger.name}`).execute(db);
    await sql.raw(trigger.sql.replace(clause, '')).execute(db);
  }
  await sql`DROP TABLE places_deferred_indexing`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'sqlite') return;
  await sql`CREATE TABLE places_deferred_indexing (id integer PRIMARY KEY CHECK (id = 1))`.execute(db);
  for (const trigger of await triggersOfPlaces(db)) {
    if (!withClause.includes(trigger.name) || trigger.sql.includes(clause)) continue;
    await sql.raw(`DROP TRIGGER ${trigger.name}`).execute(db);
    await sql.raw(trigger.sql.replace(/ ON places /, ` ON places${clause} `)).execute(db);
  }
}
