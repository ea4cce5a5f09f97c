import type { Kysely } from 'kysely';

/**
 * Per-account quotas set by an administrator (`leadatlas account quota`), and the rows each account
 * has exported per calendar month.
 *
 * `account_quotas`: a null column means "the default from the configuration", so changing a default
 * reaches every account that was never given its own value. `export_row_usage` is the counter the
 * monthly row quota is taken from, row by row as exports write (a reservation in one short
 * transaction), so concurrent exports of one account cannot pass the quota together.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('account_quotas')
    .addColumn('account_id', 'bigint', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
    .addColumn('requests_per_day', 'bigint')
    .addColumn('export_rows_per_month', 'bigint')
    .addColumn('concurrent_exports', 'integer')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('export_row_usage')
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    // `2026-11`: the UTC calendar month.
    .addColumn('month', 'text', (c) => c.notNull())
    .addColumn('row_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('export_row_usage_pk', ['account_id', 'month'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('export_row_usage').execute();
  await db.schema.dropTable('account_quotas').execute();
}
