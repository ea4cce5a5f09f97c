import type { Kysely } from 'kysely';
import { serialType } from './helpers.ts';

/**
 * Export jobs (`POST /api/v2/exports`), the webhook deliveries announcing their end with every attempt,
 * each account's webhook signing secret, and server-wide secrets (the download links' signing key when
 * none is configured).
 *
 * `export_jobs`: `queued` → `running` → `succeeded` | `failed`. A running job holds a lease
 * (`lease_until`) that its process renews; a job whose lease has lapsed (its process died) is taken
 * again by any process and run from scratch. `export_id` is the `exports` row of the current attempt;
 * `charged_rows`/`charged_month` what that attempt took from the month's row quota, given back when
 * the attempt is abandoned.
 *
 * `webhook_deliveries`: one event per job end, body fixed when the job ended; `pending` until it
 * succeeds, exhausts its attempts (`failed`) or is refused by the outbound address guard (`refused`).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('export_jobs')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('search_id', 'text', (c) => c.notNull())
    .addColumn('format', 'text', (c) => c.notNull())
    // Comma-separated fields as asked; null: all.
    .addColumn('fields', 'text')
    .addColumn('webhook_url', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('failure', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('export_id', 'bigint')
    .addColumn('row_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('limited', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('file_name', 'text')
    .addColumn('file_bytes', 'bigint')
    // The attachment's Content-Disposition (the synchronous export's name: city, type, day).
    .addColumn('download_name', 'text')
    .addColumn('charged_rows', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('charged_month', 'text')
    .addColumn('runner', 'text')
    .addColumn('lease_until', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('finished_at', 'text')
    .execute();
  await db.schema.createIndex('export_jobs_account_idx').on('export_jobs').columns(['account_id', 'id']).execute();
  await db.schema.createIndex('export_jobs_status_idx').on('export_jobs').columns(['status', 'id']).execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('job_id', 'bigint', (c) => c.notNull().references('export_jobs.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text')
    .addColumn('lease_until', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .execute();
  await db.schema.createIndex('webhook_deliveries_due_idx').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
  await db.schema.createIndex('webhook_deliveries_job_idx').on('webhook_deliveries').columns(['job_id']).execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('delivery_id', 'bigint', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    // The receiver's HTTP status; null when there was no answer (network error, refused address).
    .addColumn('response_status', 'integer')
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_attempts_delivery_idx').on('webhook_attempts').columns(['delivery_id', 'attempt']).execute();

  await db.schema
    .createTable('account_webhook_secrets')
    .addColumn('account_id', 'bigint', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('server_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('server_secrets').execute();
  await db.schema.dropTable('account_webhook_secrets').execute();
  await db.schema.dropTable('webhook_attempts').execute();
  await db.schema.dropTable('webhook_deliveries').execute();
  await db.schema.dropTable('export_jobs').execute();
}
