import type { Kysely } from 'kysely';

/**
 * `place_categories` repeated each place's `categories` (a JSON array, primary first) one row per category,
 * with two B-trees of its own, for one reader: the leads' category filter, which runs over one account's
 * leads and now looks into `places.categories` itself (leads.repository.ts). Every import wrote it for every
 * place.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('place_categories').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('place_categories')
    .addColumn('place_id', 'bigint', (c) => c.notNull().references('places.id').onDelete('cascade'))
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('is_primary', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('place_categories_pk', ['category', 'place_id'])
    .execute();
  await db.schema.createIndex('place_categories_place_idx').on('place_categories').column('place_id').execute();
  // Filled again from `places.categories`, as the writers filled it (a repeated slug once, the first one primary).
  const places = await db.selectFrom('places').select(['id', 'categories']).execute();
  for (let i = 0; i < places.length; i += 1000) {
    const rows = places.slice(i, i + 1000).flatMap((p: { id: number; categories: string }) =>
      [...new Set(JSON.parse(p.categories) as string[])].map((category, j) => ({
        place_id: p.id,
        category,
        is_primary: j === 0 ? 1 : 0,
      })),
    );
    if (rows.length > 0) await db.insertInto('place_categories').values(rows).execute();
  }
}
