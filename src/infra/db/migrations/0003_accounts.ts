import type { Kysely } from 'kysely';
import { serialType } from './helpers.ts';

/** Accounts, dashboard sessions, personal access tokens and the daily API usage behind the dashboard chart. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    // Lower-cased and trimmed: the unique key, so `Ann@Example.com` and `ann@example.com` are one account.
    .addColumn('email_norm', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('password_changed_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('sessions')
    // SHA-256 of the cookie value: a leaked database does not yield usable cookies.
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .execute();
  await db.schema.createIndex('sessions_account_idx').on('sessions').column('account_id').execute();

  await db.schema
    .createTable('api_tokens')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('display_prefix', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text')
    .addColumn('last_used_at', 'text')
    .addColumn('last_used_ip', 'text')
    .addColumn('revoked_at', 'text')
    .addColumn('rotated_to_id', 'bigint')
    .addColumn('grace_until', 'text')
    .execute();
  await db.schema.createIndex('api_tokens_account_idx').on('api_tokens').column('account_id').execute();

  await db.schema
    .createTable('usage_daily')
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('route', 'text', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_daily_pk', ['account_id', 'day', 'route'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['usage_daily', 'api_tokens', 'sessions', 'accounts']) await db.schema.dropTable(t).execute();
}
