import type { Kysely } from 'kysely';
import { registrableDomain } from '../../web-domain.ts';
import { serialType } from './helpers.ts';

/**
 * Suppression lists (issue 14): what an account never wants to see again, as normalised keys, and what
 * a place is matched by.
 *
 * - `places.website_domain`: the registrable domain of the website (`registrableDomain`), written by
 *   the importers and filled here for the places already stored. A domain entry matches it by equality.
 * - `suppressions`: one row per (account, kind, key); `kind` is `phone` (key E.164), `domain` (registrable
 *   domain), `email` (lower case) or `place` (public id); `value` keeps what the client sent. The unique
 *   index is also the one the searches' anti-join probes: (account_id, kind, key).
 * - `suppression_lists`: per account, the entries per kind and a revision that moves with every change,
 *   which cached search answers are keyed by.
 * - `suppression_uploads`: entries of an upload in progress, moved into `suppressions` in one statement
 *   once the whole upload has been read, so a list is never half-written (rows of an upload that never
 *   finished are removed by the next upload of that account or after a day).
 * - `leads_account_id_idx`: the newest lead of an account in one probe, the revision of `only_new`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('places').addColumn('website_domain', 'text').execute();
  let after = 0;
  for (;;) {
    const rows: Array<{ id: number; website: string }> = await db
      .selectFrom('places')
      .select(['id', 'website'])
      .where('website', 'is not', null)
      .where('id', '>', after)
      .orderBy('id')
      .limit(5000)
      .execute();
    if (rows.length === 0) break;
    for (const r of rows) {
      const domain = registrableDomain(r.website);
      if (domain !== null) await db.updateTable('places').set({ website_domain: domain }).where('id', '=', r.id).execute();
    }
    after = Number(rows[rows.length - 1]!.id);
  }

  await db.schema
    .createTable('suppressions')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('suppressions_account_kind_key_unique', ['account_id', 'kind', 'key'])
    .execute();
  // The list, by id (cursor paging).
  await db.schema.createIndex('suppressions_account_id_idx').on('suppressions').columns(['account_id', 'id']).execute();

  await db.schema
    .createTable('suppression_lists')
    .addColumn('account_id', 'bigint', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
    .addColumn('revision', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('phone_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('domain_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('email_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('place_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('suppression_uploads')
    .addColumn('upload_id', 'text', (c) => c.notNull())
    // The entry's place in the upload: entries keep the upload's order in the list.
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('suppression_uploads_upload_idx').on('suppression_uploads').columns(['upload_id']).execute();
  await db.schema.createIndex('suppression_uploads_account_idx').on('suppression_uploads').columns(['account_id', 'created_at']).execute();

  await db.schema.createIndex('leads_account_id_idx').on('leads').columns(['account_id', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('leads_account_id_idx').execute();
  await db.schema.dropTable('suppression_uploads').execute();
  await db.schema.dropTable('suppression_lists').execute();
  await db.schema.dropTable('suppressions').execute();
  await db.schema.alterTable('places').dropColumn('website_domain').execute();
}
