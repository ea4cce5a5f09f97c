import { type Expression, type SqlBool, sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';
import { foldText } from '../../infra/text.ts';

/**
 * The folded address city equals the folded written city: SQLite compares the stored `city_fold` (migration
 * 0027: the file needs no function of ours), PostgreSQL folds in the database (`la_fold`, migration 0011).
 * Either way the expression of the partial index of unmatched cities.
 */
const sameFoldedCity = byDialect<(writtenCity: string) => Expression<SqlBool>>({
  sqlite: () => (writtenCity) => sql<SqlBool>`city_fold = ${foldText(writtenCity)}`,
  postgres: () => (writtenCity) => sql<SqlBool>`la_fold(city) = la_fold(${writtenCity})`,
});

/**
 * Address cities GeoNames does not know (villages under 1,000 people, Tokyo's wards, US townships): the
 * importers keep such a name as written and file the place under the city its point belongs to
 * (`city_source = 'address_unmatched'`, gazetteer.ts). A search for `city=` that name looks here for where
 * those places are filed: the GeoNames ids, most places first. One look-up in the partial index of
 * migrations 0016 and 0027 (the folded city of those places only).
 */
export async function findCitiesFiledAs(db: Db, writtenCity: string, countryCode: string | null, limit = 10): Promise<number[]> {
  let query = db.kysely
    .selectFrom('places')
    .select(['city_id', (eb) => eb.fn.countAll<number>().as('n')])
    // The index's own condition, as a literal: the planner matches a partial index on the query's text.
    .where('city_source', '=', sql.lit('address_unmatched'))
    .where(sameFoldedCity(db)(writtenCity))
    .where('city_id', 'is not', null);
  // `country_code || ''` keeps the planner off the country indexes: with a country, SQLite would otherwise
  // walk every place of the country (without statistics for those indexes, an equality on their first
  // column looks selective) instead of the few the partial index holds for the name.
  if (countryCode !== null) query = query.where(sql`country_code || ''`, '=', countryCode);
  const rows = await query.groupBy('city_id').orderBy('n', 'desc').orderBy('city_id').limit(limit).execute();
  return rows.map((r) => Number(r.city_id));
}
