import type { Kysely } from 'kysely';

/**
 * `category_names.kind`: `name`, `alias` or `term`, as the taxonomy derives it (`TaxonomyName.kind`). The
 * API's `type=` resolver weighs a match by it, and with it stored the resolver reads the names from this
 * table instead of holding all 120,000 of them in every server process. Null until the next taxonomy sync
 * fills it (the derivation rules' revision moved with this migration, so the next start rewrites the rows).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('category_names').addColumn('kind', 'text').execute();
}
