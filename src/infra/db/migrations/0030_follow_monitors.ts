import type { Kysely } from 'kysely';
import { serialType } from './helpers.ts';

/**
 * Following a replication feed, and monitors on saved searches.
 *
 * `replication_state`: per dataset, the replication feed it follows (`leadatlas follow`) and the last
 * change file applied (`sequence`, with the feed's `timestamp` of it). The row moves in the transaction that
 * completes the file's import run, so after a crash the file is either recorded or applied again (its
 * application is idempotent).
 *
 * `monitors`: a saved search's criteria (`criteria`, JSON, frozen when the monitor is made) watched for an
 * account; `events` the kinds it records (comma-separated: added, closed, changed); `status` active or
 * paused; `version` the places version it was last evaluated at (migration 0007).
 * `monitor_places`: the places the monitor's search holds now, with the content hash and the watched fields
 * (`snapshot`, JSON) each had when it was last evaluated: what an evaluation compares a changed place with.
 * Kept while a monitor is paused (its events are not recorded), so resuming it misses and repeats nothing.
 * `monitor_events`: what the evaluation found, in the order found (`id`, the feed's keyset).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('replication_state')
    .addColumn('dataset', 'text', (c) => c.primaryKey())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('sequence', 'bigint', (c) => c.notNull())
    .addColumn('timestamp', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('monitors')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('search_id', 'text', (c) => c.notNull())
    .addColumn('criteria', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('webhook_url', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .addColumn('place_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('monitors_account').on('monitors').columns(['account_id', 'id']).execute();

  await db.schema
    .createTable('monitor_places')
    .addColumn('monitor_id', 'bigint', (c) => c.notNull().references('monitors.id').onDelete('cascade'))
    .addColumn('place_id', 'bigint', (c) => c.notNull())
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('snapshot', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('monitor_places_pk', ['monitor_id', 'place_id'])
    .execute();

  await db.schema
    .createTable('monitor_events')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('monitor_id', 'bigint', (c) => c.notNull().references('monitors.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('place_id', 'bigint', (c) => c.notNull())
    .addColumn('changed_fields', 'text', (c) => c.notNull())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('monitor_events_feed').on('monitor_events').columns(['monitor_id', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('monitor_events').execute();
  await db.schema.dropTable('monitor_places').execute();
  await db.schema.dropTable('monitors').execute();
  await db.schema.dropTable('replication_state').execute();
}
