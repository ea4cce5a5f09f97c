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
