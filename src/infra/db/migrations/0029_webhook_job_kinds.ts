import { type Kysely, sql } from 'kysely';
import { dialectOf } from './helpers.ts';

/**
 * Webhook deliveries of more than one kind of job, and enrichment jobs that have webhooks and know their places.
 *
 * `webhook_deliveries.job_kind` names the table `job_id` points into (`export_job`, the only kind until now and
 * the default; `enrichment_job`; later kinds add their own). The foreign key to `export_jobs` goes: a column
 * cannot reference one of several tables. Deleting an account still deletes its deliveries (`account_id`).
 * SQLite cannot drop a constraint, so the table is rebuilt (every row and id kept, `job_kind` last as
 * PostgreSQL's `ADD COLUMN` puts it, so `db copy` compares the same rows), with foreign keys off for the rebuild:
 * dropping the old table would otherwise cascade into `webhook_attempts`.
 *
 * `enrichment_jobs.webhook_url`: told with a signed POST when the job ends, as export jobs do.
 *
 * `enrichment_job_places`: the places a job queued (within its quota), so that what it reports
 * (`places_with_email`) is about them and not about every place that shares their sites. Jobs queued before
 * this migration get the places on their sites, which is what they counted until now.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    await sql`ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_job_id_fkey`.execute(db);
    await db.schema
      .alterTable('webhook_deliveries')
      .addColumn('job_kind', 'text', (c) => c.notNull().defaultTo('export_job'))
      .execute();
  } else {
    await rebuildSqliteDeliveries(db);
  }
  await db.schema.dropIndex('webhook_deliveries_job_idx').ifExists().execute();
  await db.schema.createIndex('webhook_deliveries_job_idx').on('webhook_deliveries').columns(['job_kind', 'job_id']).execute();

  await db.schema.alterTable('enrichment_jobs').addColumn('webhook_url', 'text').execute();
  await db.schema
    .createTable('enrichment_job_places')
    .addColumn('job_id', 'bigint', (c) => c.notNull().references('enrichment_jobs.id').onDelete('cascade'))
    .addColumn('place_id', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('enrichment_job_places_pk', ['job_id', 'place_id'])
    .execute();
  await sql`INSERT INTO enrichment_job_places (job_id, place_id)
    SELECT js.job_id, p.id FROM enrichment_job_sites js JOIN places p ON p.enrich_site_id = js.site_id`.execute(db);
}

/** SQLite's way to drop a constraint (its documentation's twelve steps): a new table, the rows, the indexes. */
async function rebuildSqliteDeliveries(db: Kysely<any>): Promise<void> {
  // Not inside a transaction (the migrator runs SQLite migrations on one connection without one), so the
  // pragma takes effect; the rebuild itself is one transaction.
  await sql`PRAGMA foreign_keys = OFF`.execute(db);
  try {
    await sql`BEGIN IMMEDIATE`.execute(db);
    try {
      await sql`CREATE TABLE webhook_deliveries_new (
        id integer PRIMARY KEY,
        public_id text NOT NULL UNIQUE,
        account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
        job_id bigint NOT NULL,
        url text NOT NULL,
        event text NOT NULL,
        body text NOT NULL,
        status text NOT NULL,
        attempts integer DEFAULT 0 NOT NULL,
        next_attempt_at text,
        lease_until text,
        created_at text NOT NULL,
        finished_at text,
        job_kind text DEFAULT 'export_job' NOT NULL
      )`.execute(db);
      await sql`INSERT INTO webhook_deliveries_new
        (id, public_id, account_id, job_id, url, event, body, status, attempts, next_attempt_at, lease_until, created_at, finished_at, job_kind)
        SELECT id, public_id, account_id, job_id, url, event, body, status, attempts, next_attempt_at, lease_until, created_at, finished_at,
          'export_job'
        FROM webhook_deliveries`.execute(db);
      await sql`DROP TABLE webhook_deliveries`.execute(db);
      // `webhook_attempts` names `webhook_deliveries` in its foreign key: after the rename it is this table.
      await sql`ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries`.execute(db);
      await sql`CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (status, next_attempt_at)`.execute(db);
      const broken = await sql`PRAGMA foreign_key_check`.execute(db);
      if (broken.rows.length > 0) throw new Error(`webhook_deliveries rebuild: ${broken.rows.length} rows fail their foreign keys`);
      await sql`COMMIT`.execute(db);
    } catch (error) {
      await sql`ROLLBACK`.execute(db);
      throw error;
    }
  } finally {
    await sql`PRAGMA foreign_keys = ON`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('enrichment_job_places').execute();
  await db.schema.alterTable('enrichment_jobs').dropColumn('webhook_url').execute();
  // The foreign key to export_jobs does not come back: deliveries of other kinds may exist.
  await db.schema.dropIndex('webhook_deliveries_job_idx').ifExists().execute();
  await db.schema.alterTable('webhook_deliveries').dropColumn('job_kind').execute();
  await db.schema.createIndex('webhook_deliveries_job_idx').on('webhook_deliveries').columns(['job_id']).execute();
}
