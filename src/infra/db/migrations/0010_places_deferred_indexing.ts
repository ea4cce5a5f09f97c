import { type Kysely, sql } from 'kysely';
import { dialectOf } from './helpers.ts';

/**
 * SQLite: lets the import writer keep the search indexes (places_fts, places_geo) and places_version
 * up to date set-wise, once per batch, instead of through a trigger per written row (a trigger run
 * with its json_tree costs several times the row's own INSERT).
 *
 * The writer adds a row to `places_deferred_indexing` at the start of a batch's transaction, writes
 * the places, fills the indexes for exactly the rows it wrote and deletes the row again before the
 * transaction commits. Other connections therefore never see the row, every other writer still gets
 * the per-row triggers, and a crash rolls back the marker together with the batch: the indexes are
 * never behind the table. The triggers' bodies are those of 0004 and 0007, unchanged; only the WHEN
 * clause is new (the delete triggers are left alone, importers never delete).
 *
 * PostgreSQL keeps its indexes itself and bumps the version once per statement: nothing to do.
 */
const deferred = 'NOT EXISTS (SELECT 1 FROM places_deferred_indexing)';

const allNames = (row: string) =>
  `${row}.name || coalesce(' ' || (SELECT group_concat(value, ' ') FROM json_tree(${row}.names) WHERE type = 'text'), '')`;

function triggers(when: string): string[] {
  return [
    `CREATE TRIGGER places_search_ai AFTER INSERT ON places ${when} BEGIN
       INSERT INTO places_fts(rowid, names) VALUES (new.id, ${allNames('new')});
       INSERT INTO places_geo(id, min_lat, max_lat, min_lon, max_lon)
         SELECT new.id, new.lat, new.lat, new.lon, new.lon WHERE new.lat IS NOT NULL AND new.lon IS NOT NULL;
     END`,
    `CREATE TRIGGER places_search_au_names AFTER UPDATE OF name, names ON places ${when} BEGIN
       DELETE FROM places_fts WHERE rowid = old.id;
       INSERT INTO places_fts(rowid, names) VALUES (new.id, ${allNames('new')});
     END`,
    `CREATE TRIGGER places_search_au_geo AFTER UPDATE OF lat, lon ON places ${when} BEGIN
       DELETE FROM places_geo WHERE id = old.id;
       INSERT INTO places_geo(id, min_lat, max_lat, min_lon, max_lon)
         SELECT new.id, new.lat, new.lat, new.lon, new.lon WHERE new.lat IS NOT NULL AND new.lon IS NOT NULL;
     END`,
    `CREATE TRIGGER places_version_insert AFTER INSERT ON places ${when} BEGIN UPDATE places_version SET version = version + 1 WHERE id = 1; END`,
    `CREATE TRIGGER places_version_update AFTER UPDATE ON places ${when} BEGIN UPDATE places_version SET version = version + 1 WHERE id = 1; END`,
  ];
}

const names = ['places_search_ai', 'places_search_au_names', 'places_search_au_geo', 'places_version_insert', 'places_version_update'];

export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'sqlite') return;
  await sql`CREATE TABLE places_deferred_indexing (id integer PRIMARY KEY CHECK (id = 1))`.execute(db);
  for (const name of names) await sql.raw(`DROP TRIGGER ${name}`).execute(db);
  for (const create of triggers(`WHEN ${deferred}`)) await sql.raw(create).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'sqlite') return;
  for (const name of names) await sql.raw(`DROP TRIGGER ${name}`).execute(db);
  for (const create of triggers('')) await sql.raw(create).execute(db);
  await sql`DROP TABLE places_deferred_indexing`.execute(db);
}
