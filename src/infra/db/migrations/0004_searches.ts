import { type Kysely, sql } from 'kysely';
import { dialectOf, serialType } from './helpers.ts';

/**
 * Saved searches, and the indexes search needs over `places`: full text over every name and
 * geography for `near`/`bbox`.
 *
 * SQLite: an FTS5 table with the trigram tokenizer (substring match, typo tolerance by pieces, CJK,
 * case and diacritics folded) and an R*Tree of coordinates, both kept in step with `places` by
 * triggers, so importers keep writing `places` with plain INSERT/UPDATE/DELETE.
 * PostgreSQL: a trigram GIN index when pg_trgm is available, and a btree on the coordinates.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('searches')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    // The parameters as the caller sent them (normalised), for display and for re-running.
    .addColumn('params', 'text', (c) => c.notNull())
    // What they resolved to: category slugs, city id, country code... The export runs from this.
    .addColumn('criteria', 'text', (c) => c.notNull())
    // How `type`/`city` were resolved: the chosen city and the alternatives, shown with every page.
    .addColumn('resolution', 'text', (c) => c.notNull())
    .addColumn('sort', 'text', (c) => c.notNull())
    .addColumn('total', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('searches_account_idx').on('searches').columns(['account_id', 'id']).execute();

  if (dialectOf(db) === 'sqlite') {
    await sql`CREATE VIRTUAL TABLE places_fts USING fts5(names, tokenize = 'trigram remove_diacritics 1')`.execute(db);
    await sql`CREATE VIRTUAL TABLE places_geo USING rtree(id, min_lat, max_lat, min_lon, max_lon)`.execute(db);
    // Every name a place has: the display name and each value of the `names` JSON (localised, alt…).
    const allNames = (row: string) =>
      `${row}.name || coalesce(' ' || (SELECT group_concat(value, ' ') FROM json_tree(${row}.names) WHERE type = 'text'), '')`;
    await sql
      .raw(
        `CREATE TRIGGER places_search_ai AFTER INSERT ON places BEGIN
           INSERT INTO places_fts(rowid, names) VALUES (new.id, ${allNames('new')});
           INSERT INTO places_geo(id, min_lat, max_lat, min_lon, max_lon)
             SELECT new.id, new.lat, new.lat, new.lon, new.lon WHERE new.lat IS NOT NULL AND new.lon IS NOT NULL;
         END`,
      )
      .execute(db);
    await sql
      .raw(
        `CREATE TRIGGER places_search_ad AFTER DELETE ON places BEGIN
           DELETE FROM places_fts WHERE rowid = old.id;
           DELETE FROM places_geo WHERE id = old.id;
         END`,
      )
      .execute(db);
    await sql
      .raw(
        `CREATE TRIGGER places_search_au_names AFTER UPDATE OF name, names ON places BEGIN
           DELETE FROM places_fts WHERE rowid = old.id;
           INSERT INTO places_fts(rowid, names) VALUES (new.id, ${allNames('new')});
         END`,
      )
      .execute(db);
    await sql
      .raw(
        `CREATE TRIGGER places_search_au_geo AFTER UPDATE OF lat, lon ON places BEGIN
           DELETE FROM places_geo WHERE id = old.id;
           INSERT INTO places_geo(id, min_lat, max_lat, min_lon, max_lon)
             SELECT new.id, new.lat, new.lat, new.lon, new.lon WHERE new.lat IS NOT NULL AND new.lon IS NOT NULL;
         END`,
      )
      .execute(db);
    // Places imported before this migration.
    await sql.raw(`INSERT INTO places_fts(rowid, names) SELECT id, ${allNames('places')} FROM places`).execute(db);
    await sql
      .raw(
        `INSERT INTO places_geo(id, min_lat, max_lat, min_lon, max_lon) SELECT id, lat, lat, lon, lon FROM places WHERE lat IS NOT NULL AND lon IS NOT NULL`,
      )
      .execute(db);
  } else {
    const trgm = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_available_extensions WHERE name = 'pg_trgm'`.execute(db);
    if ((trgm.rows[0]?.n ?? 0) > 0) {
      // In public, never in a connection's own schema: dropping that schema would drop the extension
      // and with it the trigram indexes of every other schema on the database.
      await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public`.execute(db);
      // The extension lives in one schema per database (often public), which need not be on this connection's search_path.
      const where = await sql<{
        schema: string;
      }>`SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'`.execute(
        db,
      );
      const opclass = sql.raw(`${sql.id(where.rows[0]?.schema ?? 'public').compile(db).sql}.gin_trgm_ops`);
      await sql`CREATE INDEX places_name_trgm_idx ON places USING gin (lower(name) ${opclass})`.execute(db);
    }
    await db.schema.createIndex('places_lat_lon_idx').on('places').columns(['lat', 'lon']).execute();
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'sqlite') {
    for (const t of ['places_search_ai', 'places_search_ad', 'places_search_au_names', 'places_search_au_geo']) {
      await sql.raw(`DROP TRIGGER IF EXISTS ${t}`).execute(db);
    }
    await sql`DROP TABLE IF EXISTS places_fts`.execute(db);
    await sql`DROP TABLE IF EXISTS places_geo`.execute(db);
  } else {
    await sql`DROP INDEX IF EXISTS places_name_trgm_idx`.execute(db);
    await db.schema.dropIndex('places_lat_lon_idx').ifExists().execute();
  }
  await db.schema.dropTable('searches').execute();
}
