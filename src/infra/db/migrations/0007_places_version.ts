import { type Kysely, sql } from 'kysely';
import { dialectOf } from './helpers.ts';

/**
 * A counter that moves whenever `places` changes, so exact search totals can be cached and still be
 * exact: a cached count is used only while the counter is where it was when the count was taken.
 * SQLite bumps it per written row (one single-row UPDATE; importers keep writing plain rows),
 * PostgreSQL once per statement.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('places_version')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .execute();
  await db.insertInto('places_version').values({ id: 1, version: 0 }).execute();
  if (dialectOf(db) === 'sqlite') {
    for (const event of ['INSERT', 'UPDATE', 'DELETE']) {
      await sql
        .raw(
          `CREATE TRIGGER places_version_${event.toLowerCase()} AFTER ${event} ON places BEGIN UPDATE places_version SET version = version + 1 WHERE id = 1; END`,
        )
        .execute(db);
    }
  } else {
    await sql`CREATE FUNCTION places_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE places_version SET version = version + 1 WHERE id = 1; RETURN NULL; END $$`.execute(
      db,
    );
    await sql`CREATE TRIGGER places_version_bump AFTER INSERT OR UPDATE OR DELETE ON places FOR EACH STATEMENT EXECUTE FUNCTION places_version_bump()`.execute(
      db,
    );
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'sqlite') {
    for (const event of ['insert', 'update', 'delete']) await sql.raw(`DROP TRIGGER IF EXISTS places_version_${event}`).execute(db);
  } else {
    await sql`DROP TRIGGER IF EXISTS places_version_bump ON places`.execute(db);
    await sql`DROP FUNCTION IF EXISTS places_version_bump()`.execute(db);
  }
  await db.schema.dropTable('places_version').execute();
}
