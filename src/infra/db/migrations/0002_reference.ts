import type { Kysely } from 'kysely';
import { doubleType } from './helpers.ts';

/** Reference data (taxonomy, countries, cities), filled by `leadatlas migrate` from data packages. */
export async function up(db: Kysely<any>): Promise<void> {
  const double = doubleType(db);
  await db.schema
    .createTable('reference_data')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('row_count', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('categories')
    .addColumn('slug', 'text', (c) => c.primaryKey())
    .addColumn('parent_slug', 'text')
    .addColumn('preset_id', 'text', (c) => c.notNull())
    .addColumn('osm_tags', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('categories_parent_idx').on('categories').column('parent_slug').execute();
  await db.schema
    .createTable('category_names')
    .addColumn('name_norm', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull())
    .addColumn('lang', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('is_name', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('category_names_pk', ['name_norm', 'slug', 'lang'])
    .execute();
  await db.schema.createIndex('category_names_slug_idx').on('category_names').columns(['slug', 'lang']).execute();

  await db.schema
    .createTable('countries')
    .addColumn('code', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('native_name', 'text')
    .addColumn('continent', 'text')
    .addColumn('phone_prefix', 'text')
    .execute();
  await db.schema
    .createTable('country_names')
    .addColumn('name_norm', 'text', (c) => c.notNull())
    .addColumn('code', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('country_names_pk', ['name_norm', 'code'])
    .execute();

  await db.schema
    .createTable('cities')
    .addColumn('id', 'bigint', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('country_code', 'text', (c) => c.notNull())
    .addColumn('admin1', 'text')
    .addColumn('lat', double, (c) => c.notNull())
    .addColumn('lon', double, (c) => c.notNull())
    .addColumn('population', 'integer', (c) => c.notNull())
    .addColumn('feature_code', 'text')
    .execute();
  await db.schema
    .createTable('city_names')
    .addColumn('name_norm', 'text', (c) => c.notNull())
    .addColumn('city_id', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('city_names_pk', ['name_norm', 'city_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['city_names', 'cities', 'country_names', 'countries', 'category_names', 'categories', 'reference_data']) {
    await db.schema.dropTable(t).execute();
  }
}
