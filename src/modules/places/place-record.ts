import { hash } from 'node:crypto';

/** A place ready to store: enriched and normalised, one row of `places` minus the bookkeeping columns. */
export interface PlaceRecord {
  public_id: string;
  source: string;
  source_id: string;
  name: string;
  names: string | null;
  category: string | null;
  categories: string[];
  source_categories: string | null;
  phone: string | null;
  phone_e164: string | null;
  website: string | null;
  email: string | null;
  street: string | null;
  housenumber: string | null;
  postcode: string | null;
  address: string | null;
  region: string | null;
  city: string | null;
  city_id: number | null;
  city_source: string | null;
  city_distance_m: number | null;
  country_code: string | null;
  lat: number | null;
  lon: number | null;
  rating: number | null;
  review_count: number | null;
  opening_hours: string | null;
  attributes: string | null;
  content_hash: string;
}

/** The `places` columns a PlaceRecord fills, in the order of a PlaceRows row. */
export const placeColumns = [
  'public_id', 'source', 'source_id', 'name', 'names', 'category', 'categories', 'source_categories',
  'phone', 'phone_e164', 'website', 'email', 'street', 'housenumber', 'postcode', 'address', 'region',
  'city', 'city_id', 'city_source', 'city_distance_m', 'country_code', 'lat', 'lon', 'rating', 'review_count',
  'opening_hours', 'attributes', 'content_hash',
] as const satisfies ReadonlyArray<keyof PlaceRecord>;

export type PlaceValue = string | number | null;

/**
 * Places as one flat array of column values, row after row, in `placeColumns` order (`categories` as its
 * JSON text, as stored). The import worker sends its chunks in this shape: a structured clone of plain
 * values costs about half what one of objects does (no property names per place), and the SQLite
 * writer binds a row's values as they are.
 */
export interface PlaceRows {
  count: number;
  values: PlaceValue[];
}

/** Values per row of a PlaceRows. */
export const placeRowWidth = placeColumns.length;

export function emptyPlaceRows(): PlaceRows {
  return { count: 0, values: [] };
}

/** Appends a record as the next row (spelled out: a loop over the column names costs several times more). */
export function appendPlaceRow(rows: PlaceRows, r: PlaceRecord): void {
  rows.values.push(
    r.public_id, r.source, r.source_id, r.name, r.names, r.category, JSON.stringify(r.categories), r.source_categories,
    r.phone, r.phone_e164, r.website, r.email, r.street, r.housenumber, r.postcode, r.address, r.region,
    r.city, r.city_id, r.city_source, r.city_distance_m, r.country_code, r.lat, r.lon, r.rating, r.review_count,
    r.opening_hours, r.attributes, r.content_hash,
  );
  rows.count++;
}

export function placeRowsOf(records: readonly PlaceRecord[]): PlaceRows {
  const rows = emptyPlaceRows();
  for (const r of records) appendPlaceRow(rows, r);
  return rows;
}

/** Row `i` back as a record. */
export function placeRecordAt(rows: PlaceRows, i: number): PlaceRecord {
  const record: Record<string, unknown> = {};
  const offset = i * placeRowWidth;
  for (let c = 0; c < placeRowWidth; c++) {
    const column = placeColumns[c]!;
    const value = rows.values[offset + c];
    record[column] = column === 'categories' ? JSON.parse(value as string) : value;
  }
  return record as unknown as PlaceRecord;
}

const base32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** Stable public id: the same (source, source_id) always gets the same `plc_…`, in any database. */
export function publicPlaceId(source: string, sourceId: string): string {
  // One-shot hashing: a Hash object per call costs more than the digest of a few bytes.
  const digest = hash('sha256', `${source}\0${sourceId}`, 'buffer');
  let out = 'plc_';
  let bits = 0;
  let value = 0;
  for (const byte of digest) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < 20) {
      out += base32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    if (out.length >= 20) break;
  }
  return out;
}

/** Hash of everything stored about a place, so a re-import can tell unchanged rows apart. */
export function contentHash(record: Omit<PlaceRecord, 'content_hash'>): string {
  return hash('sha1', JSON.stringify(record), 'base64url');
}
