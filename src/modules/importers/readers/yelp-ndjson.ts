import type { PlaceInput } from '../../places/place-input.ts';
import type { ReaderFactory, ReadResult } from '../importer.types.ts';
import { attributes, compactWeeklyHours, distinct, isObject, number, splitList, text } from './fields.ts';
import { firstJsonObject, type JsonObject, openNdjsonReader, refuseColumns } from './rows.ts';

/** A Yelp Fusion API `business` object (one per line). */
export function yelpFusionToPlace(o: JsonObject): ReadResult {
  const sourceId = text(o.id);
  if (!sourceId) return { ok: false, reason: 'no id' };
  const name = text(o.name);
  if (!name) return { ok: false, reason: 'no name' };
  const loc = isObject(o.location) ? o.location : {};
  const coords = isObject(o.coordinates) ? o.coordinates : {};
  const categories = Array.isArray(o.categories) ? o.categories.filter(isObject) : [];
  const display = Array.isArray(loc.display_address) ? loc.display_address.map(text).filter((s): s is string => s !== null) : [];
  const place: PlaceInput = {
    sourceId,
    name,
    // Titles ("Beer, Wine & Spirits"): the same vocabulary the Yelp Open Dataset writes.
    sourceCategories: distinct(categories.map((c) => text(c.title) ?? text(c.alias))),
    phone: text(o.phone) ?? text(o.display_phone),
    street: distinct([text(loc.address1), text(loc.address2), text(loc.address3)]).join(', ') || null,
    postcode: text(loc.zip_code),
    address: display.length > 0 ? display.join(', ') : null,
    city: text(loc.city),
    region: text(loc.state),
    countryCode: text(loc.country),
    lat: number(coords.latitude),
    lon: number(coords.longitude),
    rating: number(o.rating),
    reviewCount: number(o.review_count),
    attributes: attributes({ price: text(o.price), closed: o.is_closed === true ? true : undefined }),
    closed: o.is_closed === true,
  };
  return { ok: true, place };
}

/** `8:0` → `08:00`: the Yelp Open Dataset writes hours without padding. */
const padTime = (range: string) =>
  range.replace(/\b(\d{1,2}):(\d{1,2})\b/g, (_m, h: string, m: string) => `${h.padStart(2, '0')}:${m.padStart(2, '0')}`);

/** A Yelp Open Dataset business (yelp_academic_dataset_business.json). */
export function yelpOpenToPlace(o: JsonObject): ReadResult {
  const sourceId = text(o.business_id);
  if (!sourceId) return { ok: false, reason: 'no id' };
  const name = text(o.name);
  if (!name) return { ok: false, reason: 'no name' };
  const attrs = isObject(o.attributes) ? o.attributes : {};
  const place: PlaceInput = {
    sourceId,
    name,
    sourceCategories: splitList(o.categories, /\s*,\s*/),
    street: text(o.address),
    postcode: text(o.postal_code),
    city: text(o.city),
    region: text(o.state),
    lat: number(o.latitude),
    lon: number(o.longitude),
    rating: number(o.stars),
    reviewCount: number(o.review_count),
    openingHours: isObject(o.hours) ? compactWeeklyHours(o.hours, padTime) : null,
    attributes: attributes({
      price_level: number(attrs.RestaurantsPriceRange2),
      closed: o.is_open === 0 ? true : undefined,
    }),
    closed: o.is_open === 0,
  };
  return { ok: true, place };
}

export const yelpFusionNdjson: ReaderFactory = {
  format: 'yelp-fusion-ndjson',
  description: 'Yelp Fusion API businesses, one JSON object per line: id, alias, name, coordinates, location…',
  detect: (_path, head) => {
    const o = firstJsonObject(head);
    return o !== undefined && typeof o.id === 'string' && 'alias' in o && 'name' in o && isObject(o.coordinates) && isObject(o.location);
  },
  open: async (path, options) => {
    refuseColumns(options, 'yelp-fusion-ndjson');
    return openNdjsonReader({ path, options, format: 'yelp-fusion-ndjson', source: 'yelp', prepare: () => yelpFusionToPlace });
  },
};

export const yelpOpenNdjson: ReaderFactory = {
  format: 'yelp-open-ndjson',
  description: 'Yelp Open Dataset business file (NDJSON): business_id, name, stars, categories…',
  detect: (_path, head) => {
    const o = firstJsonObject(head);
    return o !== undefined && typeof o.business_id === 'string' && 'name' in o && 'stars' in o && 'categories' in o;
  },
  open: async (path, options) => {
    refuseColumns(options, 'yelp-open-ndjson');
    return openNdjsonReader({ path, options, format: 'yelp-open-ndjson', source: 'yelp', prepare: () => yelpOpenToPlace });
  },
};
