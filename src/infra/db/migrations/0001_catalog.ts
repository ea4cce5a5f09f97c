import type { Kysely } from 'kysely';
import { doubleType, serialType } from './helpers.ts';

export async function up(db: Kysely<any>): Promise<void> {
  const double = doubleType(db);
  await db.schema
    .createTable('import_runs')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('format', 'text', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('file_sha256', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .addColumn('read_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('imported_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('unchanged_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('skipped_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('skipped_reasons', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('error', 'text')
    .execute();

  await db.schema
    .createTable('places')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('source_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('names', 'text')
    .addColumn('category', 'text')
    .addColumn('categories', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('source_categories', 'text')
    .addColumn('phone', 'text')
    .addColumn('phone_e164', 'text')
    .addColumn('website', 'text')
    .addColumn('email', 'text')
    .addColumn('street', 'text')
    .addColumn('housenumber', 'text')
    .addColumn('postcode', 'text')
    .addColumn('address', 'text')
    .addColumn('region', 'text')
    .addColumn('city', 'text')
    .addColumn('city_id', 'bigint')
    .addColumn('city_source', 'text')
    .addColumn('city_distance_m', 'integer')
    .addColumn('country_code', 'text')
    .addColumn('lat', double)
    .addColumn('lon', double)
    .addColumn('rating', double)
    .addColumn('review_count', 'integer')
    .addColumn('opening_hours', 'text')
    .addColumn('attributes', 'text')
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('import_run_id', 'bigint', (c) => c.references('import_runs.id').onDelete('set null'))
    .addColumn('first_seen_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('places_source_source_id_unique', ['source', 'source_id'])
    .execute();
  await db.schema.createIndex('places_city_category_idx').on('places').columns(['city_id', 'category']).execute();
  await db.schema.createIndex('places_category_idx').on('places').column('category').execute();
  await db.schema.createIndex('places_country_idx').on('places').columns(['country_code', 'category']).execute();

  await db.schema
    .createTable('place_categories')
    .addColumn('place_id', 'bigint', (c) => c.notNull().references('places.id').onDelete('cascade'))
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('is_primary', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('place_categories_pk', ['category', 'place_id'])
    .execute();
  await db.schema.createIndex('place_categories_place_idx').on('place_categories').column('place_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('place_categories').execute();
  await db.schema.dropTable('places').execute();
  await db.schema.dropTable('import_runs').execute();
}
