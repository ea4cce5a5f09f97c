/**
 * Row types of the reference tables (taxonomy categories, GeoNames countries and cities, and what each was
 * built from), with the conventions of schema.ts. Filled by `leadatlas migrate`, read by the resolvers.
 */

export interface CategoriesTable {
  slug: string;
  parent_slug: string | null;
  /** iD preset id, e.g. `shop/optician`. */
  preset_id: string;
  /** JSON object of the OSM tags that identify the preset. */
  osm_tags: string;
  /** English name. */
  name: string;
}

export interface CategoryNamesTable {
  /** Normalised (lower-case, accents folded) name or synonym. */
  name_norm: string;
  slug: string;
  lang: string;
  /** The name as written. */
  name: string;
  /** 1 for a preset name, 0 for a search term/synonym. */
  is_name: number;
  /** `name`, `alias` or `term` (migration 0012); null only before the first sync after that migration. */
  kind: 'name' | 'alias' | 'term' | null;
}

export interface CountriesTable {
  code: string;
  name: string;
  native_name: string | null;
  continent: string | null;
  phone_prefix: string | null;
}

export interface CountryNamesTable {
  name_norm: string;
  code: string;
}

export interface CitiesTable {
  /** GeoNames id. */
  id: number;
  name: string;
  country_code: string;
  admin1: string | null;
  lat: number;
  lon: number;
  population: number;
  feature_code: string | null;
}

export interface CityNamesTable {
  name_norm: string;
  city_id: number;
}

export interface ReferenceDataTable {
  /** `countries`, `cities`, `categories`. */
  name: string;
  /** The data package and version it was built from. */
  version: string;
  row_count: number;
  updated_at: string;
}
