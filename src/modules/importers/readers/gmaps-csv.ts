import type { PlaceInput } from '../../places/place-input.ts';
import type { ReaderFactory, ReadResult } from '../importer.types.ts';
import { attributes, compactWeeklyHours, distinct, isObject, jsonCell, number, splitList, text } from './fields.ts';
import { type CsvRow, csvHeader, hasColumns, openCsvReader, refuseColumns } from './rows.ts';

/** Columns every version of gosom/google-maps-scraper writes. */
const signature = ['title', 'category', 'address', 'review_rating', 'review_count', 'latitude', 'longitude', 'cid'];

/** One row of gosom/google-maps-scraper CSV output as a place. */
export function gmapsRowToPlace(row: CsvRow): ReadResult {
  // cid (the numeric customer id) is in every scraper version and does not change; place_id can be reissued.
  const sourceId = text(row.cid) ?? text(row.place_id) ?? text(row.data_id);
  if (!sourceId) return { ok: false, reason: 'no id' };
  const name = text(row.title);
  if (!name) return { ok: false, reason: 'no name' };
  const parts = jsonCell(row.complete_address);
  const addr = isObject(parts) ? parts : {};
  const hours = jsonCell(row.open_hours);
  const reviewCount = number(row.review_count);
  const rating = number(row.review_rating);
  const emails = splitList(row.emails);
  const place: PlaceInput = {
    sourceId,
    name,
    sourceCategories: distinct([text(row.category), ...splitList(row.categories)]),
    phone: text(row.phone),
    website: text(row.website),
    email: emails[0] ?? null,
    street: text(addr.street),
    postcode: text(addr.postal_code),
    address: text(row.address),
    city: text(addr.city),
    region: text(addr.state),
    countryCode: text(addr.country),
    lat: number(row.latitude),
    lon: number(row.longitude),
    // The scraper writes 0 for a place nobody has rated yet.
    rating: rating === 0 && !reviewCount ? null : rating,
    reviewCount,
    openingHours: isObject(hours) ? compactWeeklyHours(hours) : text(row.open_hours),
    attributes: attributes({
      price_range: text(row.price_range),
      google_place_id: text(row.place_id),
      status: text(row.status),
    }),
  };
  return { ok: true, place };
}

export const gmapsCsv: ReaderFactory = {
  format: 'gmaps-csv',
  description: 'Google Maps scraper CSV (gosom/google-maps-scraper): header with title, category, review_rating, cid…',
  detect: (_path, head) => hasColumns(csvHeader(head), signature),
  open: async (path, options) => {
    refuseColumns(options, 'gmaps-csv');
    return openCsvReader({ path, options, format: 'gmaps-csv', source: 'gmaps', prepare: () => gmapsRowToPlace });
  },
};
