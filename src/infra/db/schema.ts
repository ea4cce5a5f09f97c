import type { Generated } from 'kysely';

/**
 * Row types of every table, as the database stores them. These never reach the HTTP layer:
 * services map them to the public shapes in each module's *.schema.ts.
 *
 * Portable conventions (the same migration chain serves SQLite and PostgreSQL):
 * timestamps are ISO-8601 UTC strings (`2026-11-21T05:49:00.000Z`, lexically sortable),
 * booleans are 0/1 integers, structured values are JSON text.
 */
export interface Database {
  places: PlacesTable;
  place_categories: PlaceCategoriesTable;
  import_runs: ImportRunsTable;
  categories: CategoriesTable;
  category_names: CategoryNamesTable;
  countries: CountriesTable;
  country_names: CountryNamesTable;
  cities: CitiesTable;
  city_names: CityNamesTable;
  reference_data: ReferenceDataTable;
}

export interface PlacesTable {
  id: Generated<number>;
  /** Stable public id, `plc_` + 16 base32 chars derived from (source, source_id). */
  public_id: string;
  source: string;
  source_id: string;
  name: string;
  /** JSON object of alternative and localised names: {"en": "...", "alt": ["..."]}. */
  names: string | null;
  /** Primary category slug (taxonomy), null when nothing in the source maps onto it. */
  category: string | null;
  /** JSON array of every category slug, primary first. */
  categories: string;
  /** JSON array of the categories as the source wrote them (`amenity=restaurant`, `Italian restaurant`). */
  source_categories: string | null;
  phone: string | null;
  phone_e164: string | null;
  website: string | null;
  email: string | null;
  street: string | null;
  housenumber: string | null;
  postcode: string | null;
  /** One-line address as the source gave it, or assembled from the parts. */
  address: string | null;
  region: string | null;
  /** City name as displayed: the address city, else the assigned gazetteer city. */
  city: string | null;
  /** GeoNames id of the gazetteer city. */
  city_id: number | null;
  /** How the city was assigned: `address` (matched the address city), `address_unmatched`, `nearest` (nearest populated place), null. */
  city_source: string | null;
  /** Distance in metres to the gazetteer city's point when assigned by `nearest`. */
  city_distance_m: number | null;
  country_code: string | null;
  lat: number | null;
  lon: number | null;
  rating: number | null;
  review_count: number | null;
  opening_hours: string | null;
  /** JSON object of other attributes (cuisine, brand, price, OSM tags kept for reference...). */
  attributes: string | null;
  /** Hash of the normalised record: a re-import that finds the same hash leaves the row alone. */
  content_hash: string;
  import_run_id: number | null;
  first_seen_at: string;
  updated_at: string;
}

export interface PlaceCategoriesTable {
  place_id: number;
  category: string;
  is_primary: number;
}

export interface ImportRunsTable {
  id: Generated<number>;
  source: string;
  format: string;
  path: string;
  file_sha256: string;
  status: 'running' | 'done' | 'failed';
  started_at: string;
  finished_at: string | null;
  read_count: Generated<number>;
  imported_count: Generated<number>;
  updated_count: Generated<number>;
  unchanged_count: Generated<number>;
  skipped_count: Generated<number>;
  /** JSON object reason -> count. */
  skipped_reasons: Generated<string>;
  error: string | null;
}

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
