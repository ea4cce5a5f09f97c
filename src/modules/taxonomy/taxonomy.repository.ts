import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema.ts';
import type { TaxonomyCategory, TaxonomyName } from './taxonomy.build.ts';

const REFERENCE_NAME = 'categories';
/** Rows per INSERT: 5 columns × 1,000 stays under SQLite's 32,766 and PostgreSQL's 65,535 bound parameters. */
const CHUNK = 1000;

export async function findTaxonomyVersion(db: Kysely<Database>): Promise<{ version: string; rowCount: number } | undefined> {
  const row = await db.selectFrom('reference_data').select(['version', 'row_count']).where('name', '=', REFERENCE_NAME).executeTakeFirst();
  return row ? { version: row.version, rowCount: row.row_count } : undefined;
}

async function insertChunked<T>(items: readonly T[], insert: (chunk: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += CHUNK) await insert(items.slice(i, i + CHUNK));
}

/** Replaces both tables and records the version, in the caller's transaction. */
export async function replaceTaxonomy(
  trx: Transaction<Database>,
  version: string,
  categories: readonly TaxonomyCategory[],
  names: readonly TaxonomyName[],
  now: string,
): Promise<number> {
  await trx.deleteFrom('category_names').execute();
  await trx.deleteFrom('categories').execute();
  await insertChunked(categories, (chunk) =>
    trx
      .insertInto('categories')
      .values(chunk.map((c) => ({ slug: c.slug, parent_slug: c.parent, preset_id: c.presetId, osm_tags: JSON.stringify(c.osmTags), name: c.name })))
      .execute(),
  );
  await insertChunked(names, (chunk) =>
    trx
      .insertInto('category_names')
      .values(chunk.map((n) => ({ name_norm: n.norm, slug: n.slug, lang: n.lang, name: n.name, is_name: n.isName ? 1 : 0 })))
      .execute(),
  );
  const rowCount = categories.length + names.length;
  await trx
    .insertInto('reference_data')
    .values({ name: REFERENCE_NAME, version, row_count: rowCount, updated_at: now })
    .onConflict((oc) => oc.column('name').doUpdateSet({ version, row_count: rowCount, updated_at: now }))
    .execute();
  return rowCount;
}
