import type { PlaceInput } from '../../places/place-input.ts';
import type { ReaderFactory, ReadResult } from '../importer.types.ts';
import { attributes, number, splitList, text } from './fields.ts';
import { type CsvRow, csvHeader, hasColumns, openCsvReader, refuseColumns } from './rows.ts';

/** Columns of the michelin-my-maps CSV (ngshiheng/michelin-my-maps), 2022 and later layouts. */
const signature = ['Name', 'Address', 'Location', 'Cuisine', 'Longitude', 'Latitude', 'Url', 'Award'];

/**
 * The guide writes phone numbers as international digits without the `+` (`3905526311`). A quarter of the
 * 2022 file went through a spreadsheet that rounded them to `4.95362E+11`: the digits are gone, so the
 * value is not a phone number and is dropped.
 */
function michelinPhone(value: unknown): string | null {
  const t = text(value);
  if (t === null || /^\d+(\.\d+)?E\+?\d+$/i.test(t)) return null;
  return /^\d{8,15}$/.test(t) ? `+${t}` : t;
}

export function michelinRowToPlace(row: CsvRow): ReadResult {
  const sourceId = text(row.Url);
  if (!sourceId) return { ok: false, reason: 'no id' };
  const name = text(row.Name);
  if (!name) return { ok: false, reason: 'no name' };
  const address = text(row.Address);
  // The address ends with the country: "via Ghibellina 87, Florence, 50122, Italy".
  const addressParts = splitList(address, /\s*,\s*/);
  // Later versions write Location as "Florence, Italy".
  const location = splitList(row.Location, /\s*,\s*/);
  const countryName =
    location.length > 1 ? location[location.length - 1]! : addressParts.length > 1 ? addressParts[addressParts.length - 1]! : null;
  const minPrice = number(row.MinPrice);
  const maxPrice = number(row.MaxPrice);
  const place: PlaceInput = {
    sourceId,
    name,
    sourceCategories: splitList(row.Cuisine, /\s*,\s*/),
    phone: michelinPhone(row.PhoneNumber),
    website: text(row.WebsiteUrl),
    address,
    city: location[0] ?? null,
    countryName,
    lat: number(row.Latitude),
    lon: number(row.Longitude),
    attributes: attributes({
      award: text(row.Award),
      cuisine: text(row.Cuisine),
      price: text(row.Price),
      min_price: minPrice,
      max_price: maxPrice,
      currency: text(row.Currency),
      green_star: number(row.GreenStar) === 1 ? true : undefined,
    }),
  };
  return { ok: true, place };
}

export const michelinCsv: ReaderFactory = {
  format: 'michelin-csv',
  description: 'Michelin Guide CSV (michelin-my-maps): header with Name, Address, Location, Cuisine, Url, Award…',
  detect: (_path, head) => hasColumns(csvHeader(head), signature),
  open: async (path, options) => {
    refuseColumns(options, 'michelin-csv');
    return openCsvReader({ path, options, format: 'michelin-csv', source: 'michelin', prepare: () => michelinRowToPlace });
  },
};
