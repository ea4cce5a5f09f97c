import { hash } from 'node:crypto';
import type { PlacesTable } from '../../infra/db/schema.ts';

/**
 * A place ready to store, enriched and normalised: one row of `places` minus the columns the database and
 * the writer fill (id, import run, first seen, updated), with `categories` as a list rather than its JSON.
 */
export type PlaceRecord = Omit<
  PlacesTable,
  | 'id'
  | 'import_run_id'
  | 'seen_run_id'
  | 'first_seen_at'
  | 'updated_at'
  | 'closed_at'
  | 'closed_reason'
  | 'categories'
  | 'closed'
  // Conflation's (migration 0025): set by conflation after the writer, never by a record.
  | 'merged_into'
  | 'sources'
  | 'field_sources'
  | 'merge_state'
  // Derived by the SQLite writer from the record's names and city (migration 0027, `place-text.ts`).
  | 'search_document'
  | 'city_fold'
  // Enrichment's (migration 0026): what a place's website gave it, never part of a record.
  | 'enrich_site_id'
  | 'enrich_basis'
  | 'found_contacts'
  | 'found_email'
  | 'found_phone'
  | 'found_social'
  | 'source_contacts'
  // The trust pass's (migration 0037): judged from the record and the checks, never part of a record.
  | 'contact_trust'
  | 'email_status'
  | 'email_confidence'
  | 'phone_type'
  | 'phone_confidence'
  | 'website_status'
  | 'website_confidence'
  | 'lead_score'
  | 'verified_at'
> & {
  categories: string[];
  /** The source's own contact lists (`contacts/contacts.ts`, JSON); absent or null: none. */
  source_contacts?: string | null;
  /** 1: the source says the place is closed; absent or 0: open. */
  closed?: number;
};

/** Columns derived from other columns (`website_domain` from `website`): the content hash covers their source, not them. */
export const derivedPlaceColumns = ['website_domain'] as const;

/** The `places` columns a PlaceRecord fills, in the order of a PlaceRows row. */
export const placeColumns = [
  'public_id',
  'source',
  'source_id',
  'name',
  'names',
  'category',
  'categories',
  'source_categories',
  'phone',
  'phone_e164',
  'website',
  'website_domain',
  'email',
  'street',
  'housenumber',
  'postcode',
  'address',
  'region',
  'city',
  'city_id',
  'city_source',
  'city_distance_m',
  'country_code',
  'lat',
  'lon',
  'rating',
  'review_count',
  'opening_hours',
  'attributes',
  'source_contacts',
  'closed',
  'content_hash',
] as const satisfies ReadonlyArray<keyof PlaceRecord>;

/** Every field of PlaceRecord has its column in `placeColumns`: a column added to `places` fails to compile until it is listed. */
export const placeColumnsCoverRecord: [Exclude<keyof PlaceRecord, (typeof placeColumns)[number]>] extends [never] ? true : never = true;

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
    r.public_id,
    r.source,
    r.source_id,
    r.name,
    r.names,
    r.category,
    JSON.stringify(r.categories),
    r.source_categories,
    r.phone,
    r.phone_e164,
    r.website,
    r.website_domain,
    r.email,
    r.street,
    r.housenumber,
    r.postcode,
    r.address,
    r.region,
    r.city,
    r.city_id,
    r.city_source,
    r.city_distance_m,
    r.country_code,
    r.lat,
    r.lon,
    r.rating,
    r.review_count,
    r.opening_hours,
    r.attributes,
    r.source_contacts ?? null,
    r.closed ?? 0,
    r.content_hash,
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
    // An optional field without a value is left out, as a record without it has it.
    if (column === 'source_contacts' && value === null) continue;
    record[column] = column === 'categories' ? JSON.parse(value as string) : value;
  }
  return record as unknown as PlaceRecord;
}

const base32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** Stable public id: the same (source, source_id) always gets the same `plc_…`, in any database. */
export function publicPlaceId(source: string, sourceId: string): string {
  // `plc_` and the first 80 bits of the SHA-256 in base32. One-shot hashing to hex: a Hash object, or a
  // Buffer digest, costs more than hashing a few bytes.
  const hex = hash('sha256', `${source}\0${sourceId}`, 'hex');
  let out = 'plc_';
  for (let i = 0; i < 20; i += 5) {
    const v = parseInt(hex.slice(i, i + 5), 16); // 20 bits: four base32 digits
    out += base32[v >>> 15]! + base32[(v >>> 10) & 31]! + base32[(v >>> 5) & 31]! + base32[v & 31]!;
  }
  return out;
}

const float = new Float64Array(1);
const floatBytes = new Uint8Array(float.buffer);

/** A text value for contentHash: its length, a colon and the text; null as `-`. No two values read alike. */
const text = (v: string | null): string => (v === null ? '-' : v.length + ':' + v);

/** A number for contentHash: `#` and the eight bytes of its float64 as characters (cheaper than String(v) of a coordinate); null as `-`. */
const num = (v: number | null): string => {
  if (v === null) return '-';
  float[0] = v;
  const b = floatBytes;
  return String.fromCharCode(35, b[0]!, b[1]!, b[2]!, b[3]!, b[4]!, b[5]!, b[6]!, b[7]!);
};

/**
 * Hash of everything stored about a place, so a re-import can tell unchanged rows apart: SHA-1 over one
 * string that spells out every field in turn (texts with their length, numbers as their float64 bytes), so
 * that any change of any field changes the string (about half the cost of JSON of the record). A new
 * spelling gives every stored place a new hash: the next re-import rewrites each row once.
 */
export function contentHash(r: Omit<PlaceRecord, 'content_hash'>): string {
  let categories = r.categories.length + ':';
  for (const c of r.categories) categories += text(c);
  return hash(
    'sha1',
    text(r.public_id) +
      text(r.source) +
      text(r.source_id) +
      text(r.name) +
      text(r.names) +
      text(r.category) +
      categories +
      text(r.source_categories) +
      text(r.phone) +
      text(r.phone_e164) +
      text(r.website) +
      text(r.email) +
      text(r.street) +
      text(r.housenumber) +
      text(r.postcode) +
      text(r.address) +
      text(r.region) +
      text(r.city) +
      num(r.city_id) +
      text(r.city_source) +
      num(r.city_distance_m) +
      text(r.country_code) +
      num(r.lat) +
      num(r.lon) +
      num(r.rating) +
      num(r.review_count) +
      text(r.opening_hours) +
      text(r.attributes) +
      // Only a closed place spells its flag, and only a place with source contacts spells them: the hashes
      // of other places stay what they were before these existed.
      (r.closed === 1 ? 'closed' : '') +
      (r.source_contacts === null || r.source_contacts === undefined ? '' : 'contacts' + text(r.source_contacts)),
    'base64url',
  );
}
