import { placeRowToTuple, type PlaceRow, type PublicPlaceTuple } from '../../places/places.schema.ts';

/** A place row as the database returns it, for format tests that need exact cell contents. */
export function placeRow(id: number, overrides: Partial<PlaceRow> = {}): PlaceRow {
  return {
    id,
    public_id: `plc_test${String(id).padStart(12, '0')}`,
    source: 'osm',
    source_id: `n${id}`,
    name: `Place ${id}`,
    names: null,
    category: 'restaurant',
    categories: '["restaurant","cafe"]',
    source_categories: null,
    phone: null,
    phone_e164: null,
    website: null,
    website_domain: null,
    email: null,
    street: null,
    housenumber: null,
    postcode: null,
    address: null,
    region: null,
    city: 'München',
    city_id: 2867714,
    city_source: 'address',
    city_distance_m: null,
    country_code: 'DE',
    lat: 48.137,
    lon: 11.575,
    rating: null,
    review_count: null,
    opening_hours: null,
    attributes: null,
    content_hash: 'hash',
    closed: 0,
    import_run_id: null,
    seen_run_id: null,
    closed_at: null,
    closed_reason: null,
    merged_into: null,
    sources: null,
    field_sources: null,
    merge_state: null,
    source_contacts: null,
    enrich_site_id: null,
    enrich_basis: null,
    found_contacts: null,
    found_email: null,
    found_phone: null,
    found_social: 0,
    first_seen_at: '2026-11-21T00:00:00.000Z',
    updated_at: '2026-11-21T00:00:00.000Z',
    ...overrides,
  };
}

/** The rows in batches of `size`, as the search side hands them over (row arrays). */
export async function* inBatches(rows: PlaceRow[], size: number): AsyncGenerator<PublicPlaceTuple[]> {
  for (let i = 0; i < rows.length; i += size) yield rows.slice(i, i + size).map(placeRowToTuple);
}
