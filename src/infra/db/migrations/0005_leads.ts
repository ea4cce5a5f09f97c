import type { Kysely } from 'kysely';
import { serialType } from './helpers.ts';

/**
 * Leads (the places an account has exported) and the export log the dashboard lists.
 *
 * `leads` has one row per (account, place): re-exporting a place moves `last_exported_at` and
 * `search_id` forward and keeps `first_exported_at`. `search_id` and `export_id` are plain columns,
 * not foreign keys, so deleting a saved search or pruning the export log never deletes leads.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('exports')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('search_id', 'text', (c) => c.notNull())
    .addColumn('format', 'text', (c) => c.notNull())
    // JSON array of the exported field names.
    .addColumn('fields', 'text', (c) => c.notNull())
    .addColumn('row_count', 'integer', (c) => c.notNull().defaultTo(0))
    // running → done | aborted (client went away) | failed (server error).
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .execute();
  await db.schema.createIndex('exports_account_idx').on('exports').columns(['account_id', 'id']).execute();

  await db.schema
    .createTable('leads')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('place_id', 'bigint', (c) => c.notNull().references('places.id').onDelete('cascade'))
    .addColumn('search_id', 'text', (c) => c.notNull())
    .addColumn('export_id', 'bigint', (c) => c.notNull())
    .addColumn('first_exported_at', 'text', (c) => c.notNull())
    .addColumn('last_exported_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('leads_account_place_unique', ['account_id', 'place_id'])
    .execute();
  // The leads list: newest first per account, keyset on (last_exported_at, id).
  await db.schema.createIndex('leads_account_recent_idx').on('leads').columns(['account_id', 'last_exported_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('leads').execute();
  await db.schema.dropTable('exports').execute();
}
