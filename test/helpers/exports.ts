import { randomBytes } from 'node:crypto';
import type { Db } from '../../src/infra/db/database.ts';
import { noCriteria, type PlaceCriteria } from '../../src/modules/search/query/criteria.ts';
import { insertSearch } from '../../src/modules/search/search.repository.ts';
import type { SearchResolution } from '../../src/modules/search/search.types.ts';

export const munichExtract = new URL('../../../shared/data/osm/munich-center-2020.osm.pbf', import.meta.url).pathname;

export interface TestCity {
  id: number;
  name: string;
  country_code: string;
  admin1: string | null;
  population: number;
  lat: number;
  lon: number;
}

/** The city most of the catalog's restaurants are in (Munich, with the Munich extract imported). */
export async function topRestaurantCity(db: Db): Promise<TestCity> {
  const top = await db.kysely
    .selectFrom('places')
    .select(['city_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('category', '=', 'restaurant')
    .where('city_id', 'is not', null)
    .groupBy('city_id')
    .orderBy('n', 'desc')
    .executeTakeFirstOrThrow();
  return db.kysely.selectFrom('cities').selectAll().where('id', '=', Number(top.city_id)).executeTakeFirstOrThrow();
}

/**
 * Saves a search for the account the way the search side stores one: places of `category` in the city,
 * or every place of the catalog when `category` is null.
 */
export async function saveSearch(db: Db, accountId: number, city: TestCity, category: string | null): Promise<string> {
  const criteria: PlaceCriteria = {
    ...noCriteria,
    categories: category === null ? null : [category],
    cityId: category === null ? null : city.id,
  };
  const chosen = {
    id: city.id,
    name: city.name,
    country: city.country_code,
    admin1: city.admin1,
    population: city.population,
    lat: city.lat,
    lon: city.lon,
  };
  const resolution: SearchResolution = {
    type: category === null ? null : { input: category, slug: category, name: category, includes: [category] },
    city: category === null ? null : { input: city.name, chosen, alternatives: [] },
    country: null,
  };
  const base32 = 'abcdefghijklmnopqrstuvwxyz234567';
  const publicId = `srch_${[...randomBytes(16)].map((b) => base32[b % 32]).join('')}`;
  await insertSearch(db, {
    public_id: publicId,
    account_id: accountId,
    params: JSON.stringify(category === null ? { bbox: '-180,-90,180,90' } : { type: category, city: city.name }),
    criteria: JSON.stringify(criteria),
    resolution: JSON.stringify(resolution),
    sort: 'name',
    total: 0,
    created_at: new Date().toISOString(),
  });
  return publicId;
}
