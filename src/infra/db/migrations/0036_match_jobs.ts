import type { Kysely } from 'kysely';
import { serialType } from './helpers.ts';

/**
 * Match jobs (`POST /api/v2/match/jobs`): a customer's list uploaded as CSV, XLSX or NDJSON, matched row by
 * row against the catalog in the background, and written back with the match appended to each row.
 *
 * `match_jobs` runs as `export_jobs` does (`queued` → `running` → `succeeded` | `failed`, a lease the
 * running process renews, a lapsed lease taken by any process and the job run again from scratch).
 * `input_name` is the upload kept under the data directory until the job ends; `mapping` the columns as
 * recognised or given (JSON: a record field → a header of the file); `charged_rows`/`charged_month` the
 * rows the job took from the month's quota when it was created, the unused part given back at its end.
 *
 * `match_row_usage` counts an account's rows matched in a calendar month, `account_quotas.match_rows_per_month`
 * overrides the configured quota for one account.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('match_jobs')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('input_format', 'text', (c) => c.notNull())
    .addColumn('input_name', 'text', (c) => c.notNull())
    .addColumn('input_file', 'text')
    .addColumn('input_bytes', 'bigint', (c) => c.notNull())
    .addColumn('mapping', 'text', (c) => c.notNull())
    .addColumn('threshold', 'real')
    .addColumn('as_leads', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('webhook_url', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('failure', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('row_count', 'integer', (c) => c.notNull())
    .addColumn('rows_done', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('matched', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('closed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('bad_rows', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('file_name', 'text')
    .addColumn('file_bytes', 'bigint')
    .addColumn('download_name', 'text')
    .addColumn('charged_rows', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('charged_month', 'text')
    .addColumn('runner', 'text')
    .addColumn('lease_until', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('finished_at', 'text')
    .execute();
  await db.schema.createIndex('match_jobs_account_idx').on('match_jobs').columns(['account_id', 'id']).execute();
  await db.schema.createIndex('match_jobs_status_idx').on('match_jobs').columns(['status', 'id']).execute();

  await db.schema.alterTable('account_quotas').addColumn('match_rows_per_month', 'bigint').execute();
  await db.schema
    .createTable('match_row_usage')
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('month', 'text', (c) => c.notNull())
    .addColumn('row_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('match_row_usage_pk', ['account_id', 'month'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('match_row_usage').execute();
  await db.schema.alterTable('account_quotas').dropColumn('match_rows_per_month').execute();
  await db.schema.dropTable('match_jobs').execute();
}
