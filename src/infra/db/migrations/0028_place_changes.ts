import { type Kysely, sql } from 'kysely';
import { dialectOf } from './helpers.ts';

/**
 * A log of which places changed at which places version (migration 0007), so that a reader holding a copy
 * of the catalog (the search engine's in-memory index) can catch up by reading the places that changed
 * since its version instead of everything.
 *
 * - `place_changes (version, place_id)`: one row per inserted, updated or deleted place, at the version the
 *   write moved the catalog to. A reader at version V reads the rows with `version > V`: a write that
 *   commits after the reader saw V has a larger version (the version row is written by the same
 *   transaction, and writers queue on it).
 * - `place_changes_marks (version, marked_at)`: the version at a moment, so the log can be pruned by age.
 * - `place_changes_horizon`: the largest version pruned away. A reader behind it cannot catch up from the
 *   log and reloads everything.
 *
 * SQLite: the per-row version triggers of 0007 (same names, so the import writer still takes them off for
 * its transaction and writes the log set-wise itself) bump the version and log the row at the new version.
 * PostgreSQL: the statement-level trigger of 0007 becomes one per event with transition tables: the
 * statement bumps the version once and logs its rows at it; an UPDATE logs only the rows where more than
 * `seen_run_id` changed (a re-import touches every unchanged place to say it saw it).
 */
const sqliteTriggers = {
  insert: `CREATE TRIGGER places_version_insert AFTER INSERT ON places BEGIN
     UPDATE places_version SET version = version + 1 WHERE id = 1;
     INSERT INTO place_changes (version, place_id) SELECT version, new.id FROM places_version WHERE id = 1;
   END`,
  update: `CREATE TRIGGER places_version_update AFTER UPDATE ON places BEGIN
     UPDATE places_version SET version = version + 1 WHERE id = 1;
     INSERT INTO place_changes (version, place_id) SELECT version, new.id FROM places_version WHERE id = 1;
   END`,
  delete: `CREATE TRIGGER places_version_delete AFTER DELETE ON places BEGIN
     UPDATE places_version SET version = version + 1 WHERE id = 1;
     INSERT INTO place_changes (version, place_id) SELECT version, old.id FROM places_version WHERE id = 1;
   END`,
};

const pgEvents = [
  ['insert', 'INSERT', 'REFERENCING NEW TABLE AS new_rows'],
  ['update', 'UPDATE', 'REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows'],
  ['delete', 'DELETE', 'REFERENCING OLD TABLE AS old_rows'],
] as const;

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('place_changes')
    .addColumn('version', 'bigint', (c) => c.notNull())
    .addColumn('place_id', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('place_changes_pk', ['version', 'place_id'])
    .execute();
  await db.schema
    .createTable('place_changes_marks')
    .addColumn('version', 'bigint', (c) => c.primaryKey())
    .addColumn('marked_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('place_changes_horizon')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('pruned_through', 'bigint', (c) => c.notNull())
    .execute();
  // Nothing before this migration is in the log: a reader older than it reloads.
  await sql`INSERT INTO place_changes_horizon (id, pruned_through) SELECT 1, version FROM places_version WHERE id = 1`.execute(db);

  if (dialectOf(db) === 'sqlite') {
    for (const [event, create] of Object.entries(sqliteTriggers)) {
      await sql.raw(`DROP TRIGGER IF EXISTS places_version_${event}`).execute(db);
      await sql.raw(create).execute(db);
    }
    return;
  }
  await sql`CREATE FUNCTION place_changes_log() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE v bigint;
    BEGIN
      UPDATE places_version SET version = version + 1 WHERE id = 1 RETURNING version INTO v;
      IF TG_OP = 'INSERT' THEN
        INSERT INTO place_changes (version, place_id) SELECT v, id FROM new_rows;
      ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO place_changes (version, place_id)
        SELECT v, n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
        WHERE to_jsonb(n) - 'seen_run_id' IS DISTINCT FROM to_jsonb(o) - 'seen_run_id'
        ON CONFLICT DO NOTHING;
      ELSE
        INSERT INTO place_changes (version, place_id) SELECT v, id FROM old_rows;
      END IF;
      RETURN NULL;
    END $$`.execute(db);
  await sql`DROP TRIGGER IF EXISTS places_version_bump ON places`.execute(db);
  for (const [event, op, referencing] of pgEvents) {
    await sql
      .raw(
        `CREATE TRIGGER place_changes_${event} AFTER ${op} ON places ${referencing} FOR EACH STATEMENT EXECUTE FUNCTION place_changes_log()`,
      )
      .execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'sqlite') {
    for (const event of ['INSERT', 'UPDATE', 'DELETE']) {
      await sql.raw(`DROP TRIGGER IF EXISTS places_version_${event.toLowerCase()}`).execute(db);
      await sql
        .raw(
          `CREATE TRIGGER places_version_${event.toLowerCase()} AFTER ${event} ON places BEGIN UPDATE places_version SET version = version + 1 WHERE id = 1; END`,
        )
        .execute(db);
    }
  } else {
    for (const [event] of pgEvents) await sql.raw(`DROP TRIGGER IF EXISTS place_changes_${event} ON places`).execute(db);
    await sql`DROP FUNCTION IF EXISTS place_changes_log()`.execute(db);
    await sql`CREATE TRIGGER places_version_bump AFTER INSERT OR UPDATE OR DELETE ON places FOR EACH STATEMENT EXECUTE FUNCTION places_version_bump()`.execute(
      db,
    );
  }
  await db.schema.dropTable('place_changes_horizon').execute();
  await db.schema.dropTable('place_changes_marks').execute();
  await db.schema.dropTable('place_changes').execute();
}
