import type { FileMetaData } from 'hyparquet';
import type { SourceContacts } from '../../contacts/contacts.ts';
import type { PlaceInput } from '../../places/place-input.ts';
import type { ReaderFactory, ReadResult } from '../importer.types.ts';
import { attributes, country, distinct, isObject, number, text } from './fields.ts';
import { type ParquetDialect, statisticsColumn } from './parquet.ts';
import { csvHeader, hasColumns, openCsvReader, refuseColumns } from './rows.ts';

/**
 * Foursquare Open Source Places (Apache-2.0): the release's Parquet files, and the same table as CSV. One
 * mapping serves both: a Parquet row has real lists, dates and numbers where a CSV row has text.
 */

/** Foursquare's top-level categories: in a CSV cell (`[A > B, C > D]`) a new label starts with one of them. */
const TOP_LEVELS = [
  'Arts and Entertainment',
  'Business and Professional Services',
  'Community and Government',
  'Dining and Drinking',
  'Event',
  'Health and Medicine',
  'Landmarks and Outdoors',
  'Nightlife Spot',
  'Retail',
  'Sports and Recreation',
  'Travel and Transportation',
];
// Labels hold commas of their own (`Cafe, Coffee, and Tea House`): split only where the next label begins.
const labelSeparator = new RegExp(`, (?=(?:${TOP_LEVELS.join('|')})(?: > |$))`);

/** A list column: an array (Parquet) or `[a, b]` text (CSV); labels split on `labelSeparator`, ids on commas. */
function list(v: unknown, separator: RegExp | string): string[] {
  if (Array.isArray(v)) return distinct(v.map(text));
  const t = text(v);
  if (t === null) return [];
  const inner = t.replace(/^\[|\]$/g, '').trim();
  return inner === '' ? [] : distinct(inner.split(separator));
}

/** A date as `YYYY-MM-DD` from DATE (a Date) or text. */
function day(v: unknown): string | null {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString().slice(0, 10);
  return text(v);
}

/** A whole number id (BIGINT in the release, text in CSV) as text, without a `.0` a CSV writer may add. */
function idText(v: unknown): string | null {
  if (typeof v === 'bigint') return v.toString();
  const t = text(v);
  return t === null ? null : t.replace(/\.0+$/, '');
}

/** The point of a WKB Point (`geom` when the reader did not decode it), or of a GeoJSON Point. */
function point(v: unknown): { lat: number; lon: number } | null {
  if (isObject(v) && v.type === 'Point' && Array.isArray(v.coordinates)) {
    const [lon, lat] = [number(v.coordinates[0]), number(v.coordinates[1])];
    return lon !== null && lat !== null ? { lat, lon } : null;
  }
  if (!(v instanceof Uint8Array) || v.length < 21) return null;
  const view = new DataView(v.buffer, v.byteOffset, v.byteLength);
  const little = v[0] === 1;
  if (view.getUint32(1, little) % 1000 !== 1) return null;
  return { lon: view.getFloat64(5, little), lat: view.getFloat64(13, little) };
}

function socials(row: Record<string, unknown>): string[] {
  const facebook = idText(row.facebook_id);
  const instagram = text(row.instagram);
  const twitter = text(row.twitter);
  return distinct([
    facebook && `facebook:${facebook}`,
    instagram && `instagram:${instagram.replace(/^@/, '')}`,
    twitter && `x:${twitter.replace(/^@/, '')}`,
  ]);
}

/**
 * `unresolved_flags` values that say a row is no open business: users reported it as not existing, to be
 * deleted, a duplicate of another, or a private home (kept out of a business catalog), and Foursquare has not
 * resolved the report. Such rows are withheld (`PlaceInput.withheld`: skipped, each flag its own reason), so a
 * place flagged since the last release is retired by the import that skips it; `closed` imports the place as
 * closed, as `date_closed` does.
 */
const SKIPPING_FLAGS = ['privatevenue', 'doesnt_exist', 'delete', 'duplicate'];

export function foursquareToPlace(row: Record<string, unknown>): ReadResult {
  const sourceId = text(row.fsq_place_id);
  if (!sourceId) return { ok: false, reason: 'no id' };
  const name = text(row.name);
  if (!name) return { ok: false, reason: 'no name' };
  const flags = list(row.unresolved_flags, /\s*,\s*/);
  const withheld = SKIPPING_FLAGS.find((f) => flags.includes(f));
  const located =
    number(row.latitude) !== null && number(row.longitude) !== null
      ? { lat: number(row.latitude)!, lon: number(row.longitude)! }
      : point(row.geom);
  const contacts: SourceContacts = {};
  const lists = {
    phones: distinct([text(row.tel)]),
    websites: distinct([text(row.website)]),
    emails: distinct([text(row.email)]),
    socials: socials(row),
  };
  for (const [k, l] of Object.entries(lists)) if (l.length > 0) contacts[k as keyof SourceContacts] = l;
  const closedOn = day(row.date_closed);
  const place: PlaceInput = {
    sourceId,
    name,
    sourceCategories: list(row.fsq_category_labels, labelSeparator),
    phone: contacts.phones?.[0] ?? null,
    website: contacts.websites?.[0] ?? null,
    email: contacts.emails?.[0] ?? null,
    street: text(row.address),
    postcode: text(row.postcode),
    city: text(row.locality) ?? text(row.post_town),
    region: text(row.region),
    ...country(row.country),
    lat: located?.lat ?? null,
    lon: located?.lon ?? null,
    attributes: attributes({
      fsq_category_ids: list(row.fsq_category_ids, /\s*,\s*/),
      date_created: day(row.date_created),
      date_refreshed: day(row.date_refreshed),
      date_closed: closedOn,
      admin_region: text(row.admin_region),
      po_box: text(row.po_box),
      placemaker_url: text(row.placemaker_url),
      unresolved_flags: flags,
    }),
    ...(Object.keys(contacts).length > 0 ? { contacts } : {}),
    closed: closedOn !== null || flags.includes('closed'),
    ...(withheld ? { withheld: `flagged ${withheld}` } : {}),
  };
  return { ok: true, place };
}

const columns = [
  'fsq_place_id',
  'name',
  'latitude',
  'longitude',
  'address',
  'locality',
  'region',
  'postcode',
  'admin_region',
  'post_town',
  'po_box',
  'country',
  'date_created',
  'date_refreshed',
  'date_closed',
  'tel',
  'website',
  'email',
  'facebook_id',
  'instagram',
  'twitter',
  'fsq_category_ids',
  'fsq_category_labels',
  'placemaker_url',
  'geom',
  'unresolved_flags',
];

/** The release's Parquet: locating statistics from its `bbox` struct when it has one, else from the coordinates. */
export function foursquareParquet(metadata: FileMetaData): ParquetDialect {
  return {
    source: 'foursquare',
    columns,
    statistics: {
      minLon: statisticsColumn(metadata, ['bbox.xmin', 'longitude']),
      maxLon: statisticsColumn(metadata, ['bbox.xmax', 'longitude']),
      minLat: statisticsColumn(metadata, ['bbox.ymin', 'latitude']),
      maxLat: statisticsColumn(metadata, ['bbox.ymax', 'latitude']),
      country: statisticsColumn(metadata, ['country']),
    },
    toPlace: foursquareToPlace,
  };
}

export const isFoursquareColumns = (names: string[]): boolean => names.includes('fsq_place_id') && names.includes('name');

export const foursquareCsv: ReaderFactory = {
  format: 'foursquare-csv',
  description: 'Foursquare OS Places as CSV: fsq_place_id, name, latitude, longitude, fsq_category_labels, tel, website…',
  detect: (_path, head) => hasColumns(csvHeader(head), ['fsq_place_id', 'name']),
  open: async (path, options) => {
    refuseColumns(options, 'foursquare-csv');
    return openCsvReader({ path, options, format: 'foursquare-csv', source: 'foursquare', prepare: () => foursquareToPlace });
  },
};
