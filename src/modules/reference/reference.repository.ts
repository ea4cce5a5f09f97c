import type { Db } from '../../infra/db/database.ts';

/** SQL for the reference lists: countries as stored, and place counts per category and country. */

export async function listCountryRows(db: Db) {
  return db.kysely.selectFrom('countries').select(['code', 'name', 'native_name', 'continent']).orderBy('code').execute();
}

/** Places per primary category: one pass over the category index. */
export async function countPlacesByCategory(db: Db): Promise<Array<[string, number]>> {
  const rows = await db.kysely
    .selectFrom('places')
    .select(['category', (eb) => eb.fn.countAll<number>().as('n')])
    .where('category', 'is not', null)
    .groupBy('category')
    .execute();
  return rows.map((r) => [r.category as string, Number(r.n)]);
}

/** Places per country: one pass over the country index. */
export async function countPlacesByCountry(db: Db): Promise<Array<[string, number]>> {
  const rows = await db.kysely
    .selectFrom('places')
    .select(['country_code', (eb) => eb.fn.countAll<number>().as('n')])
    .where('country_code', 'is not', null)
    .groupBy('country_code')
    .execute();
  return rows.map((r) => [r.country_code as string, Number(r.n)]);
}
