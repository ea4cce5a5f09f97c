import { type Kysely, sql } from 'kysely';

/**
 * The country counterpart of 0006: a kind of business in a country, most reviewed first, from index
 * entries alone. The two older indexes on (city_id, category) and (country_code, category) are exact
 * prefixes of the search indexes, which serve every query they served: dropping them keeps the number
 * of indexes an import maintains where it was.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`CREATE INDEX places_country_category_reviews_idx ON places (country_code, category, (coalesce(review_count, -1)))`.execute(db);
  await db.schema.dropIndex('places_country_idx').execute();
  await db.schema.dropIndex('places_city_category_idx').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('places_city_category_idx').on('places').columns(['city_id', 'category']).execute();
  await db.schema.createIndex('places_country_idx').on('places').columns(['country_code', 'category']).execute();
  await sql`DROP INDEX places_country_category_reviews_idx`.execute(db);
}
