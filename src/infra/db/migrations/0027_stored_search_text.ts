import { type Kysely, sql } from 'kysely';
import { dialectOf } from './helpers.ts';

/**
 * SQLite: an ordinary file that any SQLite tool can check, vacuum and write (the `sqlite3` shell, Datasette,
 * DB Browser). Until now the full-text triggers called `la_search_document(name, names)` and the index of
 * unmatched address cities was on `la_fold(city)` (migration 0016): JavaScript functions only the application
 * registers, so every other tool failed on `PRAGMA integrity_check`, `VACUUM` or an UPDATE of a place.
 *
 * The folded values become columns the writers fill (`places/place-text.ts`):
 * - `search_document`: the place's search document (`searchDocument` in infra/text.ts); the triggers copy it
 *   into `places_fts` (on insert, and on an UPDATE that sets it).
 * - `city_fold`: the folded address city of the places filed under a city GeoNames does not know
 *   (`city_source = 'address_unmatched'`), null for the others; the partial index is on it.
 * Filling them here still calls the application's functions: this migration runs on its connection.
 *
 * PostgreSQL: `la_fold` is an SQL function in the database (migration 0011), which every client has:
 * nothing to do.
 */
const triggersToRebuild = ['places_search_ai', 'places_search_au_names', 'places_version_update'];
const cityIndex = 'places_unmatched_city_idx';

const searchTriggers = [
  `CREATE TRIGGER places_search_ai AFTER INSERT ON places BEGIN
     INSERT INTO places_fts(rowid, names) VALUES (new.id, new.search_document);
   END`,
  `CREATE TRIGGER places_search_au_document AFTER UPDATE OF search_document ON places BEGIN
     DELETE FROM places_fts WHERE rowid = old.id;
     INSERT INTO places_fts(rowid, names) VALUES (new.id, new.search_document);
   END`,
];

/** The 0016 triggers, as 0017 left them (without the marker clause). */
const functionTriggers = [
  `CREATE TRIGGER places_search_ai AFTER INSERT ON places BEGIN
       INSERT INTO places_fts(rowid, names) VALUES (new.id, la_search_document(new.name, new.names));
     END`,
  `CREATE TRIGGER places_search_au_names AFTER UPDATE OF name, names ON places BEGIN
       DELETE FROM places_fts WHERE rowid = old.id;
       INSERT INTO places_fts(rowid, names) VALUES (new.id, la_search_document(new.name, new.names));
     END`,
];

async function versionTrigger(db: Kysely<any>): Promise<string> {
  const { rows } = await sql<{
    sql: string;
  }>`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'places_version_update'`.execute(db);
  return rows[0]!.sql;
}

export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'sqlite') return;
  // Filling the columns rewrites every row: without the per-row triggers (the FTS rows do not change, and
  // the catalog's version steps once below, not once per row).
  const version = await versionTrigger(db);
  for (const name of triggersToRebuild) await sql.raw(`DROP TRIGGER IF EXISTS ${name}`).execute(db);
  await sql.raw(`DROP INDEX IF EXISTS ${cityIndex}`).execute(db);
  await db.schema.alterTable('places').addColumn('search_document', 'text').execute();
  await db.schema.alterTable('places').addColumn('city_fold', 'text').execute();
  await sql`UPDATE places SET search_document = la_search_document(name, names),
    city_fold = CASE WHEN city_source = 'address_unmatched' THEN la_fold(city) END`.execute(db);
  await sql.raw(`CREATE INDEX ${cityIndex} ON places (city_fold) WHERE city_source = 'address_unmatched'`).execute(db);
  for (const create of [...searchTriggers, version]) await sql.raw(create).execute(db);
  await sql`UPDATE places_version SET version = version + 1 WHERE id = 1`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'sqlite') return;
  for (const name of ['places_search_ai', 'places_search_au_document']) await sql.raw(`DROP TRIGGER IF EXISTS ${name}`).execute(db);
  await sql.raw(`DROP INDEX IF EXISTS ${cityIndex}`).execute(db);
  await db.schema.alterTable('places').dropColumn('city_fold').execute();
  await db.schema.alterTable('places').dropColumn('search_document').execute();
  await sql.raw(`CREATE INDEX ${cityIndex} ON places (la_fold(city)) WHERE city_source = 'address_unmatched'`).execute(db);
  for (const create of functionTriggers) await sql.raw(create).execute(db);
}
