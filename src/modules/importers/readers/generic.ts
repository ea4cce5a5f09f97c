import { createHash } from 'node:crypto';
import { AppError } from '../../../infra/errors.ts';
import type { PlaceInput } from '../../places/place-input.ts';
import type { ReaderFactory, ReadResult } from '../importer.types.ts';
import { country, distinct, isObject, number, splitList, text, unwrapFeature } from './fields.ts';
import { type CsvRow, csvHeader, firstJsonObject, type JsonObject, openCsvReader, openNdjsonReader } from './rows.ts';

/**
 * The fields a generic CSV or NDJSON file can fill, each with the header names recognised for it, in order
 * of preference. Header names are compared folded: lower case, without spaces, `_`, `-` or `.`.
 */
export const columnSynonyms = {
  id: ['id', 'source_id', 'place_id', 'external_id', 'business_id', 'uid', 'uuid', 'cid'],
  name: ['name', 'title', 'business_name', 'company', 'company_name', 'place_name', 'restaurant_name'],
  category: ['category', 'categories', 'type', 'types', 'business_type', 'cuisine', 'cuisines'],
  phone: ['phone', 'telephone', 'phone_number', 'tel', 'mobile', 'contact_phone', 'phones'],
  website: ['website', 'web', 'homepage', 'website_url', 'site', 'url', 'websites'],
  email: ['email', 'e_mail', 'email_address', 'mail', 'emails'],
  street: ['street', 'street_address', 'address1', 'address_line_1'],
  housenumber: ['housenumber', 'house_number'],
  postcode: ['postcode', 'postal_code', 'zip', 'zip_code', 'zipcode', 'plz'],
  address: ['address', 'full_address', 'formatted_address'],
  city: ['city', 'town', 'locality', 'municipality'],
  region: ['region', 'state', 'province', 'county'],
  country: ['country_code', 'country', 'countrycode'],
  lat: ['lat', 'latitude'],
  lon: ['lon', 'lng', 'long', 'longitude'],
  rating: ['rating', 'stars', 'review_rating', 'aggregate_rating', 'score'],
  review_count: ['review_count', 'reviews', 'reviews_count', 'votes', 'rating_count', 'user_ratings_total', 'num_reviews'],
  opening_hours: ['opening_hours', 'hours', 'open_hours', 'opening_times'],
} as const;

export type MappedField = keyof typeof columnSynonyms;
export const mappedFields = Object.keys(columnSynonyms) as MappedField[];

const fold = (s: string) => s.toLowerCase().replace(/[\s_.-]+/g, '');

/** Field → column (or, for NDJSON, key or dotted path). */
export type ColumnMapping = Partial<Record<MappedField, string>>;

/**
 * Parses `--columns name=Business Name,phone=Tel`: pairs of field and column separated by commas. Unknown
 * fields are refused, naming the allowed ones.
 */
export function parseColumnMapping(spec: string): Record<string, string> {
  const mapping: Record<string, string> = {};
  for (const pair of spec.split(',')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    const field = (eq < 0 ? pair : pair.slice(0, eq)).trim();
    const column = eq < 0 ? '' : pair.slice(eq + 1).trim();
    if (!column) {
      throw new AppError('validation_failed', `--columns: "${pair.trim()}" is not field=column`, {
        errors: [{ field: 'columns', message: 'each entry is field=column', allowed: mappedFields }],
      });
    }
    mapping[field] = column;
  }
  return checkColumnFields(mapping);
}

function checkColumnFields(mapping: Record<string, string>): Record<string, string> {
  const unknown = Object.keys(mapping).filter((f) => !(mappedFields as string[]).includes(f));
  if (unknown.length > 0) {
    throw new AppError('validation_failed', `unknown field in the column mapping: ${unknown.join(', ')}`, {
      errors: unknown.map((f) => ({ field: `columns.${f}`, message: 'not a mappable field', allowed: mappedFields })),
    });
  }
  return mapping;
}

/** Picks a column for every field: the explicit mapping first, else the first synonym found in the header. */
export function resolveColumns(header: string[], explicit: Record<string, string> = {}): ColumnMapping {
  checkColumnFields(explicit);
  const byFolded = new Map<string, string>();
  for (const h of header) if (!byFolded.has(fold(h))) byFolded.set(fold(h), h);
  const mapping: ColumnMapping = {};
  for (const field of mappedFields) {
    const given = explicit[field];
    if (given !== undefined) {
      const found = header.includes(given) ? given : byFolded.get(fold(given));
      if (!found) {
        throw new AppError('validation_failed', `column "${given}" for ${field} is not in the header`, {
          errors: [{ field: `columns.${field}`, message: 'no such column', allowed: header }],
        });
      }
      mapping[field] = found;
      continue;
    }
    const synonym = columnSynonyms[field].map((s) => byFolded.get(fold(s))).find((h) => h !== undefined);
    if (synonym !== undefined) mapping[field] = synonym;
  }
  // One column is never two fields: `address` stays the one-line address even when no street column exists.
  return mapping;
}

/**
 * An id for a row without one, stable across re-imports of the same data: `h-` and the first 20 hex digits of
 * SHA-256 over the name, address, postcode, city and coordinates (rounded to 5 decimals, about 1 m), each
 * trimmed, lower-cased and with runs of spaces collapsed. Editing any of those gives the row a new id.
 */
export function derivedId(
  p: Pick<PlaceInput, 'name' | 'address' | 'street' | 'housenumber' | 'postcode' | 'city' | 'lat' | 'lon'>,
): string {
  const norm = (v: string | null | undefined) => (v ?? '').toLowerCase().replace(/\s+/g, ' ').trim();
  const coord = (v: number | null | undefined) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(5) : '');
  const parts = [p.name, p.address ?? [p.street, p.housenumber].filter(Boolean).join(' '), p.postcode, p.city].map(norm);
  const hash = createHash('sha256')
    .update([...parts, coord(p.lat), coord(p.lon)].join('\u001f'))
    .digest('hex');
  return `h-${hash.slice(0, 20)}`;
}

/** A value from a CSV row, or from an NDJSON object by key or dotted path. */
function pick(row: Record<string, unknown>, column: string | undefined): unknown {
  if (column === undefined) return undefined;
  if (column in row) return row[column];
  let v: unknown = row;
  for (const key of column.split('.')) {
    if (!isObject(v)) return undefined;
    v = v[key];
  }
  return v;
}

const firstOf = (v: unknown): unknown => (Array.isArray(v) ? v.find((x) => text(x) !== null) : v);

/** One generic row as a place, with the resolved mapping. */
export function genericRowToPlace(row: Record<string, unknown>, m: ColumnMapping): ReadResult {
  const name = text(firstOf(pick(row, m.name)));
  if (!name) return { ok: false, reason: 'no name' };
  const categories = pick(row, m.category);
  const geometry =
    isObject(row.geometry) && row.geometry.type === 'Point' && Array.isArray(row.geometry.coordinates)
      ? row.geometry.coordinates
      : undefined;
  const place: Omit<PlaceInput, 'sourceId'> = {
    name,
    sourceCategories: Array.isArray(categories) ? distinct(categories.map(text)) : splitList(categories),
    phone: text(firstOf(pick(row, m.phone))),
    website: text(firstOf(pick(row, m.website))),
    email: text(firstOf(pick(row, m.email))),
    street: text(pick(row, m.street)),
    housenumber: text(pick(row, m.housenumber)),
    postcode: text(pick(row, m.postcode)),
    address: text(pick(row, m.address)),
    city: text(pick(row, m.city)),
    region: text(pick(row, m.region)),
    ...country(pick(row, m.country)),
    lat: number(pick(row, m.lat)) ?? (geometry ? number(geometry[1]) : null),
    lon: number(pick(row, m.lon)) ?? (geometry ? number(geometry[0]) : null),
    rating: number(pick(row, m.rating)),
    reviewCount: number(pick(row, m.review_count)),
    openingHours: text(pick(row, m.opening_hours)),
  };
  const sourceId = text(pick(row, m.id)) ?? derivedId(place);
  return { ok: true, place: { sourceId, ...place } };
}

function requireName(mapping: ColumnMapping, available: string[]): void {
  if (mapping.name) return;
  throw new AppError('validation_failed', 'no name column: none of the known names and no --columns name=…', {
    errors: [{ field: 'columns.name', message: `no column is a name (${columnSynonyms.name.join(', ')})`, allowed: available }],
  });
}

const csvName = /\.(csv|tsv|txt)(\.gz)?$/i;
const ndjsonName = /\.(ndjson|jsonl|geojsonl|geojsonseq|json)(\.gz)?$/i;
/** Binary files (PBF, Parquet, zip…) have control bytes in their first kilobyte; text does not. */
const looksBinary = (head: Buffer) => head.subarray(0, 1024).some((b) => b < 0x09 || (b > 0x0d && b < 0x20 && b !== 0x1b));

export const genericCsv: ReaderFactory = {
  format: 'csv',
  description: 'any CSV with a header row (comma, semicolon, tab or |); columns by name synonyms or --columns',
  detect: (path, head) => {
    if (looksBinary(head) || firstJsonObject(head)) return false;
    const header = csvHeader(head);
    return header.length >= 2 && (csvName.test(path) || resolveColumns(header).name !== undefined);
  },
  open: async (path, options) =>
    openCsvReader({
      path,
      options,
      format: 'csv',
      source: 'csv',
      prepare: (header: string[]) => {
        const mapping = resolveColumns(header, options.columns);
        requireName(mapping, header);
        return (row: CsvRow) => genericRowToPlace(row, mapping);
      },
    }),
};

export const genericNdjson: ReaderFactory = {
  format: 'ndjson',
  description: 'any NDJSON (one JSON object per line, GeoJSON Point geometry understood); keys by synonyms or --columns',
  detect: (path, head) => !looksBinary(head) && (firstJsonObject(head) !== undefined || ndjsonName.test(path)),
  open: async (path, options) => {
    const explicit = checkColumnFields(options.columns ?? {});
    return openNdjsonReader({
      path,
      options,
      format: 'ndjson',
      source: 'ndjson',
      // Keys come from the first object; an explicit mapping may also name dotted paths into nested objects.
      prepare: (first) => {
        const keys = first ? Object.keys(unwrapFeature(first)) : [];
        const mapping: ColumnMapping = { ...resolveColumns(keys), ...explicit };
        requireName(mapping, keys);
        return (o: JsonObject) => genericRowToPlace(unwrapFeature(o), mapping);
      },
    });
  },
};
