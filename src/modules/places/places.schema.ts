import { type Static, Type } from '@sinclair/typebox';
import type { Selectable } from 'kysely';
import type { PlacesTable } from '../../infra/db/schema.ts';
import { AppError } from '../../infra/errors.ts';
import { ContactsSchema, placeContacts } from '../contacts/contacts.ts';

/** The public shape of a place, the same in every response and export. `fields=` narrows it. */
export const PlaceSchema = Type.Object(
  {
    id: Type.String({ description: 'Stable public id', examples: ['plc_3f7kq2m5x9ab4cde'] }),
    name: Type.String({ examples: ['Ratskeller'] }),
    category: Type.Union([Type.String(), Type.Null()], { description: 'Primary category slug', examples: ['restaurant'] }),
    categories: Type.Array(Type.String(), { description: 'Every category slug, primary first' }),
    phone: Type.Union([Type.String(), Type.Null()], {
      description:
        "The international form of the number (spaced as libphonenumber does), or as the source wrote it when it is no valid number; a source without one shows the first phone found on the place's website. `contacts.phones` keeps each as written (`as_written`) and says where each comes from",
      examples: ['+49 89 2199890'],
    }),
    phone_e164: Type.Union([Type.String(), Type.Null()], { description: 'E.164, null when not a valid number', examples: ['+4989219989'] }),
    website: Type.Union([Type.String(), Type.Null()]),
    email: Type.Union([Type.String(), Type.Null()], {
      description: "The source's; a source without one shows the best address found on the place's website",
    }),
    rating: Type.Union([Type.Number(), Type.Null()], { description: 'Average rating on the source scale (usually 0–5)' }),
    review_count: Type.Union([Type.Integer(), Type.Null()]),
    address: Type.Union([Type.String(), Type.Null()], { description: 'One-line address' }),
    street: Type.Union([Type.String(), Type.Null()]),
    housenumber: Type.Union([Type.String(), Type.Null()]),
    postcode: Type.Union([Type.String(), Type.Null()]),
    city: Type.Union([Type.String(), Type.Null()]),
    region: Type.Union([Type.String(), Type.Null()]),
    country: Type.Union([Type.String(), Type.Null()], { description: 'ISO 3166-1 alpha-2', examples: ['DE'] }),
    lat: Type.Union([Type.Number(), Type.Null()]),
    lon: Type.Union([Type.Number(), Type.Null()]),
    opening_hours: Type.Union([Type.String(), Type.Null()], { description: 'As the source wrote it (OSM syntax for OSM places)' }),
    source: Type.String({ description: 'Where the place comes from: osm, overture, yelp, gmaps, michelin, zomato…', examples: ['osm'] }),
    updated_at: Type.String({
      format: 'date-time',
      description: "When the place's content last changed (an import that finds it unchanged leaves this alone)",
    }),
    first_seen_at: Type.String({ format: 'date-time', description: 'When an import first found the place' }),
    status: Type.Union([Type.Literal('open'), Type.Literal('closed'), Type.Literal('retired')], {
      description:
        '`closed`: the source says the business is closed; `retired`: gone from the latest import of its dataset. Search and export leave both out unless `include_closed=true`; leads keep them',
    }),
    closed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When the place was found closed or retired; null while open',
    }),
    sources: Type.Array(
      Type.Object({
        source: Type.String({ examples: ['osm'] }),
        source_id: Type.String({ description: "The record's id in its source", examples: ['n60013073'] }),
      }),
      {
        description:
          'Every record the place is made of, one per source, the one `source` names first: records of different sources that describe the same business are one place (see `field_sources` on /api/v1/places/{id})',
      },
    ),
    contacts: ContactsSchema,
    lead_score: Type.Number({
      minimum: 0,
      maximum: 1,
      description:
        'How reachable the place is: the probability that at least one of its best email, best phone and website is right (0 for a place closed or retired; docs/trust.md)',
      examples: [0.91],
    }),
  },
  { $id: 'Place' },
);
export type Place = Static<typeof PlaceSchema>;
export type PlaceField = keyof Place;
export const placeFields = Object.keys(PlaceSchema.properties) as PlaceField[];

/** Checks `fields` (comma-separated) against the public place shape. */
export function parseFields(fields: string | undefined): PlaceField[] {
  if (fields === undefined || fields.trim() === '') return [];
  const asked = fields
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f !== '');
  const unknown = asked.filter((f) => !(placeFields as string[]).includes(f));
  if (unknown.length > 0) {
    const message = `unknown field${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`;
    throw new AppError('validation_failed', `querystring.fields: ${message}`, {
      errors: [{ field: 'querystring.fields', message, allowed: placeFields }],
    });
  }
  return [...new Set(asked)] as PlaceField[];
}

/** A stored place as the application reads it: without the SQLite-only derived text columns (`place-text.ts`). */
export type PlaceRow = Selectable<Omit<PlacesTable, 'search_document' | 'city_fold'>>;

/** The columns the public shape is made of (plus `id`): what a bulk read such as an export needs to select. */
export const publicPlaceColumns = [
  'id',
  'public_id',
  'name',
  'category',
  'categories',
  'phone',
  'phone_e164',
  'website',
  'email',
  'rating',
  'review_count',
  'address',
  'street',
  'housenumber',
  'postcode',
  'city',
  'region',
  'country_code',
  'lat',
  'lon',
  'opening_hours',
  'source',
  'updated_at',
  'first_seen_at',
  'closed_at',
  'closed_reason',
  'source_id',
  'sources',
  'source_contacts',
  'found_contacts',
  'enrich_basis',
  'contact_trust',
  'lead_score',
] as const satisfies ReadonlyArray<keyof PlaceRow>;
export type PublicPlaceRow = Pick<PlaceRow, (typeof publicPlaceColumns)[number]>;

/**
 * What a page reads of each place: the public columns only. Pages travel from a read thread to the
 * event loop by structured clone; the JSON columns nobody shows (attributes, source categories, names)
 * would be most of the bytes.
 */
export const publicPlaceSelection = publicPlaceColumns.map((c) => `places.${c}` as const);

/** The values of the public columns, in `publicPlaceColumns` order. */
export type PublicPlaceValues = ColumnValues<typeof publicPlaceColumns>;
/**
 * A public row as an array in `publicPlaceColumns` order, possibly followed by other columns a bulk read
 * added: what bulk reads hand over (SQLite's raw rows), because a million-row export spends more time
 * building one object per row than writing the file.
 */
export type PublicPlaceTuple = [...PublicPlaceValues, ...unknown[]];
type ColumnValues<C extends ReadonlyArray<keyof PlaceRow>> = { -readonly [I in keyof C]: PlaceRow[C[I] & keyof PlaceRow] };

/** Where each public column sits in a `PublicPlaceTuple`. */
export const publicColumnIndex = Object.fromEntries(publicPlaceColumns.map((c, i) => [c, i])) as {
  [C in (typeof publicPlaceColumns)[number]]: number;
};

/** The public row of a tuple, for code that wants names rather than positions. */
export function placeTupleToRow(t: PublicPlaceTuple): PublicPlaceRow {
  const row: Record<string, unknown> = {};
  for (let i = 0; i < publicPlaceColumns.length; i++) row[publicPlaceColumns[i]!] = t[i];
  return row as PublicPlaceRow;
}

/** The tuple of a public row (the inverse of `placeTupleToRow`). */
export function placeRowToTuple(row: PublicPlaceRow): PublicPlaceValues {
  return publicPlaceColumns.map((c) => row[c]) as unknown as PublicPlaceValues;
}

export function placeRowToPlace(row: PublicPlaceRow): Place {
  const contact = placeContacts(row);
  return {
    id: row.public_id,
    name: row.name,
    category: row.category,
    categories: JSON.parse(row.categories) as string[],
    phone: contact.phone,
    phone_e164: contact.phone_e164,
    website: row.website,
    email: contact.email,
    rating: row.rating,
    review_count: row.review_count,
    address: row.address,
    street: row.street,
    housenumber: row.housenumber,
    postcode: row.postcode,
    city: row.city,
    region: row.region,
    country: row.country_code,
    lat: row.lat,
    lon: row.lon,
    opening_hours: row.opening_hours,
    source: row.source,
    updated_at: row.updated_at,
    first_seen_at: row.first_seen_at,
    // A record of a place of several sources (`merged`) is never shown as itself; were it, it is gone as such.
    status: placeStatus(row.closed_reason),
    closed_at: row.closed_at,
    sources: placeSources(row),
    contacts: contact.contacts,
    lead_score: contact.lead_score,
  };
}

/** A place's public status from its `closed_reason`. */
export function placeStatus(closedReason: PublicPlaceRow['closed_reason']): Place['status'] {
  return closedReason === 'merged' ? 'retired' : (closedReason ?? 'open');
}

/** The records a place is made of: its own, or the list a place of several sources keeps (`sources`). */
export function placeSources(row: Pick<PublicPlaceRow, 'source' | 'source_id' | 'sources'>): Place['sources'] {
  return row.sources === null ? [{ source: row.source, source_id: row.source_id }] : (JSON.parse(row.sources) as Place['sources']);
}

/** Keeps only the requested fields (all when `fields` is empty). */
export function pickFields(place: Place, fields: readonly PlaceField[]): Partial<Place> {
  if (fields.length === 0) return place;
  const out: Partial<Place> = {};
  for (const f of fields) (out as Record<string, unknown>)[f] = place[f];
  return out;
}

/** Where a place's record comes from: the source's own id, a link to it where the source has one, and the import that last wrote it. */
export const PlaceOriginSchema = Type.Object({
  source: Type.String({ description: 'The source (as `source` above)', examples: ['osm'] }),
  source_id: Type.String({ description: "The record's id in its source (OSM: n, w or r and the element id)", examples: ['n60013073'] }),
  url: Type.Union([Type.String(), Type.Null()], {
    description: 'The record at its source, where the source has public pages (OpenStreetMap)',
    examples: ['https://www.openstreetmap.org/node/60013073'],
  }),
  first_seen_at: Type.String({ format: 'date-time', description: 'When an import first stored the place' }),
  file: Type.Union([Type.String(), Type.Null()], {
    description: 'Name of the file whose import last wrote the place (without its directory)',
  }),
  imported_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'When that import finished (null while it runs)',
  }),
});
export type PlaceOrigin = Static<typeof PlaceOriginSchema>;

/** `GET /api/v1/places/{id}`: the public place (the same serializer as everywhere) and its origin. */
export const PlaceDetailsSchema = Type.Object({
  ...PlaceSchema.properties,
  origin: PlaceOriginSchema,
  field_sources: Type.Record(Type.String(), Type.String(), {
    description:
      "Which source gave each group of fields (name, category, location, address, phone, website, email, rating, opening_hours, attributes) of a place of several sources; `website` for an email or phone found on the place's own site (see `contacts`); otherwise empty for a place of one",
  }),
});
export type PlaceDetails = Static<typeof PlaceDetailsSchema>;

export const publicPlaceIdPattern = '^plc_[a-z2-7]{16}$';
