import { registrableDomain } from '../../infra/web-domain.ts';
import { normaliseSourceContacts } from '../contacts/contacts.ts';
import type { PhoneNormaliser, PlaceLocator } from '../geo/geo.types.ts';
import type { PlaceInput } from '../places/place-input.ts';
import { contentHash, type PlaceRecord, publicPlaceId } from '../places/place-record.ts';
import type { Classifier } from '../taxonomy/taxonomy.types.ts';
import type { SourceReader } from './importer.types.ts';

export interface Enricher {
  classifier: Classifier;
  locator: PlaceLocator;
  normalisePhone: PhoneNormaliser;
}

export type EnrichResult = { ok: true; record: PlaceRecord } | { ok: false; reason: string };

/** Whitespace that `clean` would change: any but a single inner space. Most values have none. */
const UNCLEAN = /[^\S ]| {2}|^ | $/;

const clean = (v: string | null | undefined): string | null => {
  if (v === null || v === undefined || v === '') return null;
  if (!UNCLEAN.test(v)) return v;
  const t = v.replace(/\s+/g, ' ').trim();
  return t === '' ? null : t;
};

const finite = (v: number | null | undefined): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/**
 * Turns what a reader found into a storable record: categories, country, city, E.164 phone, ids and hash. The
 * record is stored under the reader's `source` (the label) and classified by its `publisher`.
 */
export function enrichPlace(reader: Pick<SourceReader, 'source' | 'publisher'>, input: PlaceInput, e: Enricher): EnrichResult {
  const { source } = reader;
  const name = clean(input.name);
  if (!name) return { ok: false, reason: 'no name' };
  let lat = finite(input.lat);
  let lon = finite(input.lon);
  if (lat !== null && lon !== null && (Math.abs(lat) > 90 || Math.abs(lon) > 180 || (lat === 0 && lon === 0))) {
    lat = null;
    lon = null;
  }
  const givenCountry = clean(input.countryCode) ?? clean(input.countryName);
  const countryCode = givenCountry ? (e.locator.countryCode(givenCountry) ?? null) : null;
  const city = e.locator.assignCity({ city: clean(input.city), countryCode, lat, lon });
  // The locator's country: the source's, or the one whose borders hold the point (see Gazetteer.assignCity).
  const country = city.countryCode;
  const phone = clean(input.phone);
  const website = clean(input.website);
  const categories = e.classifier.classify(reader.publisher, input);
  const street = clean(input.street);
  const housenumber = clean(input.housenumber);
  const postcode = clean(input.postcode);
  const address =
    clean(input.address) ??
    (street
      ? [[street, housenumber].filter(Boolean).join(' '), [postcode, clean(input.city)].filter(Boolean).join(' ')]
          .filter(Boolean)
          .join(', ')
      : null);
  const email = clean(input.email);
  const rating = finite(input.rating);
  const reviewCount = finite(input.reviewCount);

  const record: Omit<PlaceRecord, 'content_hash'> = {
    public_id: publicPlaceId(source, input.sourceId),
    source,
    source_id: input.sourceId,
    name,
    names: input.names && Object.keys(input.names).length > 0 ? JSON.stringify(input.names) : null,
    category: categories[0] ?? null,
    categories,
    source_categories: input.sourceCategories.length > 0 ? JSON.stringify(input.sourceCategories) : null,
    phone,
    phone_e164: phone ? e.normalisePhone(phone, country) : null,
    website,
    website_domain: registrableDomain(website),
    email,
    street,
    housenumber,
    postcode,
    address,
    region: clean(input.region),
    city: city.city,
    city_id: city.cityId,
    city_source: city.source,
    city_distance_m: city.distanceM === null ? null : Math.round(city.distanceM),
    country_code: country,
    lat,
    lon,
    rating: rating === null ? null : Math.round(rating * 100) / 100,
    review_count: reviewCount === null ? null : Math.round(reviewCount),
    opening_hours: clean(input.openingHours),
    attributes: input.attributes && Object.keys(input.attributes).length > 0 ? JSON.stringify(input.attributes) : null,
    closed: input.closed === true ? 1 : 0,
  };
  // Left out when empty (most records): the record's hash stays what it was before source contacts existed.
  const sourceContacts = input.contacts
    ? normaliseSourceContacts(source, input.contacts, { email, phone }, country, e.normalisePhone)
    : null;
  if (sourceContacts !== null) record.source_contacts = sourceContacts;
  // The hash covers the fields above, in this order; adding it to the same object saves copying the record.
  const hashed = record as PlaceRecord;
  hashed.content_hash = contentHash(record);
  return { ok: true, record: hashed };
}
