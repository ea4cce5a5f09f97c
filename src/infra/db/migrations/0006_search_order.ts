import { type Kysely, sql } from 'kysely';

/**
 * The commonest search is a kind of business in a city, in the default order (most reviewed first; the
 * search's sort key is `coalesce(review_count, -1)`, ties by id in the same direction). This index holds
 * exactly that key, so for one category the page is a short walk down the index, and for a category
 * with subcategories the sort runs on index entries alone: only the page's
 * 20 rows are ever read. Nothing follows the key but the row id, so ties come in id order without a sort.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`CREATE INDEX places_city_category_reviews_idx ON places (city_id, category, (coalesce(review_count, -1)))`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX places_city_category_reviews_idx`.execute(db);
}
