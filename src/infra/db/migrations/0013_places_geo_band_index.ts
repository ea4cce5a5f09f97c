import { type Kysely, sql } from 'kysely';
import { dialectOf } from './helpers.ts';

/**
 * SQLite: the places' coordinates are indexed by an ordinary B-tree index on `places` instead of the
 * R*Tree `places_geo`, for the import's sake: an R*Tree insert costs several times a B-tree insert (its
 * node choice and splits).
 *
 * The index holds each place's latitude band (0.1°, ~11 km: `cast((lat + 90) * 10 as integer)`, 0 to
 * 1,800) followed by its longitude. A box query lists the bands it spans and reads, in each, the entries
 * of its longitude range only (places.repository.ts, `inBox`): a city-sized box is a few short index
 * ranges, as with the R*Tree. Being an index of `places`, SQLite keeps it in step with every write: no trigger and no
 * separate table, and an import has nothing to fill set-wise.
 *
 * PostgreSQL has its B-tree on (lat, lon) since 0004 and keeps it.
 */
const band = 'cast((lat + 90) * 10 as integer)';

const allNames = (row: string) =>
  `${row}.name || coalesce(' ' || (SELECT group_concat(value, ' ') FROM json_tree(${row}.names) WHERE type = 'text'), '')`;
const deferred = 'WHEN NOT EXISTS (SELECT 1 FROM places_deferred_indexing)';

async function exec(db: Kysely<any>, statements: string[]): Promise<void> {
  for (const s of statements) await sql.raw(s).execute(db);
}

export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'sqlite') return;
  await exec(db, [
    'DROP TRIGGER places_search_ai',
    'DROP TRIGGER places_search_ad',
    'DROP TRIGGER places_search_au_geo',
    'DROP TABLE places_geo',
    `CREATE INDEX places_geo_band_idx ON places (${band}, lon)`,
    `CREATE TRIGGER places_search_ai AFTER INSERT ON places ${deferred} BEGIN
       INSERT INTO places_fts(rowid, names) VALUES (new.id, ${allNames('new')});
     END`,
    `CREATE TRIGGER places_search_ad AFTER DELETE ON places BEGIN
       DELETE FROM places_fts WHERE rowid = old.id;
     END`,
  ]);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'sqlite') return;
  await exec(db, [
    'DROP TRIGGER places_search_ai',
    'DROP TRIGGER places_search_ad',
    'DROP INDEX places_geo_band_idx',
    'CREATE VIRTUAL TABLE places_geo USING rtree(id, min_lat, max_lat, min_lon, max_lon)',
    'INSERT INTO places_geo (id, min_lat, max_lat, min_lon, max_lon) SELECT id, lat, lat, lon, lon FROM places WHERE lat IS NOT NULL AND lon IS NOT NULL',
    `CREATE TRIGGER places_search_ai AFTER INSERT ON places ${deferred} BEGIN
       INSERT INTO places_fts(rowid, names) VALUES (new.id, ${allNames('new')});
       INSERT INTO places_geo(id, min_lat, max_lat, min_lon, max_lon)
         SELECT new.id, new.lat, new.lat, new.lon, new.lon WHERE new.lat IS NOT NULL AND new.lon IS NOT NULL;
     END`,
    `CREATE TRIGGER places_search_ad AFTER DELETE ON places BEGIN
       DELETE FROM places_fts WHERE rowid = old.id;
       DELETE FROM places_geo WHERE id = old.id;
     END`,
    `CREATE TRIGGER places_search_au_geo AFTER UPDATE OF lat, lon ON places ${deferred} BEGIN
       DELETE FROM places_geo WHERE id = old.id;
       INSERT INTO places_geo(id, min_lat, max_lat, min_lon, max_lon)
         SELECT new.id, new.lat, new.lat, new.lon, new.lon WHERE new.lat IS NOT NULL AND new.lon IS NOT NULL;
     END`,
  ]);
}
