import type { SourceContacts } from '../../contacts/contacts.ts';
import type { PlaceInput } from '../../places/place-input.ts';
import type { ReaderFactory, ReadResult } from '../importer.types.ts';
import { attributes, distinct, isObject, number, text, unwrapFeature } from './fields.ts';
import type { ParquetDialect } from './parquet.ts';
import { firstJsonObject, type JsonObject, openNdjsonReader, refuseColumns } from './rows.ts';

const texts = (v: unknown): string[] => (Array.isArray(v) ? distinct(v.map(text)) : distinct([text(v)]));

/** A point from a GeoJSON Point geometry, else the centre of the bbox. */
function position(o: JsonObject): { lat: number | null; lon: number | null } {
  const g = isObject(o.geometry) ? o.geometry : undefined;
  if (g && g.type === 'Point' && Array.isArray(g.coordinates)) return { lon: number(g.coordinates[0]), lat: number(g.coordinates[1]) };
  const b = isObject(o.bbox) ? o.bbox : undefined;
  const [xmin, xmax, ymin, ymax] = [number(b?.xmin), number(b?.xmax), number(b?.ymin), number(b?.ymax)];
  if (xmin !== null && xmax !== null && ymin !== null && ymax !== null) return { lon: (xmin + xmax) / 2, lat: (ymin + ymax) / 2 };
  return { lat: null, lon: null };
}

/**
 * The place's categories, in the schema it was written with: the current taxonomy (`taxonomy.primary` as its
 * path from the top, `food_and_drink > restaurant > pizza_restaurant`, so a code newer than the mapping table
 * is filed under its nearest known parent; then `taxonomy.alternates`), else `basic_category`, else the older
 * `categories.primary`/`alternate`, which releases from autumn 2026 no longer carry.
 */
function overtureCategories(o: JsonObject): string[] {
  const taxonomy = isObject(o.taxonomy) ? o.taxonomy : {};
  const primary = text(taxonomy.primary);
  if (primary) {
    const hierarchy = texts(taxonomy.hierarchy);
    const path = hierarchy.length > 0 ? hierarchy.join(' > ') : null;
    // Some records' hierarchy ends elsewhere than their primary (`heatlh_care` at `health_care > doctor`): both are kept.
    return distinct([...(hierarchy.at(-1) === primary ? [] : [primary]), path, ...texts(taxonomy.alternates)]);
  }
  const basic = text(o.basic_category);
  if (basic) return [basic];
  const cats = isObject(o.categories) ? o.categories : {};
  return distinct([text(cats.primary), ...texts(cats.alternate)]);
}

/** Where each record came from (`sources`: dataset, record id, licence, update time), kept as provenance. */
function provenance(v: unknown): Array<Record<string, unknown>> {
  if (!Array.isArray(v)) return [];
  return v.filter(isObject).map(
    (s) =>
      attributes({
        dataset: text(s.dataset),
        record_id: text(s.record_id),
        license: text(s.license),
        update_time: text(s.update_time),
      }) ?? {},
  );
}

function contactsOf(o: JsonObject): SourceContacts | undefined {
  const contacts: SourceContacts = {};
  const lists = { phones: texts(o.phones), websites: texts(o.websites), emails: texts(o.emails), socials: texts(o.socials) };
  for (const [k, list] of Object.entries(lists)) if (list.length > 0) contacts[k as keyof SourceContacts] = list;
  return Object.keys(contacts).length > 0 ? contacts : undefined;
}

/** An Overture Maps `places` record: an NDJSON line (as `overturemaps` or DuckDB writes them) or a GeoParquet row. */
export function overtureToPlace(line: JsonObject): ReadResult {
  // A GeoJSON Feature line (`overturemaps download -f geojsonseq`) carries the place in `properties`.
  const o = unwrapFeature(line);
  const sourceId = text(o.id);
  if (!sourceId) return { ok: false, reason: 'no id' };
  const names = isObject(o.names) ? o.names : {};
  const name = text(names.primary);
  if (!name) return { ok: false, reason: 'no name' };
  const common = isObject(names.common) ? names.common : {};
  const localised: Record<string, string> = {};
  for (const [lang, v] of Object.entries(common)) {
    const t = text(v);
    if (t && t !== name) localised[lang] = t;
  }
  const addr = Array.isArray(o.addresses) && isObject(o.addresses[0]) ? o.addresses[0] : {};
  // `open`, `permanently_closed`, `temporarily_closed`; absent in older releases (then open).
  const operatingStatus = text(o.operating_status);
  const brand = isObject(o.brand) && isObject(o.brand.names) ? text(o.brand.names.primary) : null;
  const contacts = contactsOf(o);
  const place: PlaceInput = {
    sourceId,
    name,
    names: Object.keys(localised).length > 0 ? localised : undefined,
    sourceCategories: overtureCategories(o),
    phone: contacts?.phones?.[0] ?? null,
    website: contacts?.websites?.[0] ?? null,
    email: contacts?.emails?.[0] ?? null,
    street: text(addr.freeform),
    postcode: text(addr.postcode),
    city: text(addr.locality),
    region: text(addr.region),
    countryCode: text(addr.country),
    ...position(o),
    attributes: attributes({
      confidence: number(o.confidence),
      operating_status: operatingStatus,
      basic_category: text(o.basic_category),
      brand,
      sources: provenance(o.sources),
    }),
    ...(contacts ? { contacts } : {}),
    closed: operatingStatus !== null && operatingStatus !== 'open',
  };
  return { ok: true, place };
}

/** Overture's places GeoParquet (any release): the columns read and the statistics that locate a row group. */
export const overtureParquet: ParquetDialect = {
  source: 'overture',
  columns: [
    'id',
    'geometry',
    'bbox',
    'names',
    'categories',
    'basic_category',
    'taxonomy',
    'confidence',
    'websites',
    'emails',
    'socials',
    'phones',
    'brand',
    'addresses',
    'sources',
    'operating_status',
  ],
  // Name rules, the brand's other names and the sources' per-property entries are not used; they are most of the nested data.
  skip: [
    'names.rules',
    'brand.names.common',
    'brand.names.rules',
    'sources.list.element.property',
    'sources.list.element.confidence',
    'sources.list.element.between',
  ],
  statistics: {
    minLon: 'bbox.xmin',
    maxLon: 'bbox.xmax',
    minLat: 'bbox.ymin',
    maxLat: 'bbox.ymax',
    country: 'addresses.list.element.country',
  },
  toPlace: overtureToPlace,
  confidence: (row) => number(row.confidence),
};

/** Whether a Parquet file's top-level columns are Overture's places schema. */
export const isOvertureColumns = (columns: string[]): boolean =>
  columns.includes('id') && columns.includes('names') && (columns.includes('sources') || columns.includes('addresses'));

export const overtureNdjson: ReaderFactory = {
  format: 'overture-ndjson',
  description: 'Overture Maps places as NDJSON or GeoJSON lines: id, names.primary, taxonomy or categories, addresses, sources…',
  detect: (_path, head) => {
    const line = firstJsonObject(head);
    if (!line) return false;
    const o = unwrapFeature(line);
    return (
      typeof o.id === 'string' && isObject(o.names) && 'primary' in o.names && ('sources' in o || 'addresses' in o || 'categories' in o)
    );
  },
  open: async (path, options) => {
    refuseColumns(options, 'overture-ndjson');
    return openNdjsonReader({ path, options, format: 'overture-ndjson', source: 'overture', prepare: () => overtureToPlace });
  },
};
