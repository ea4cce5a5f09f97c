import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { PlaceInput } from '../../places/place-input.ts';
import type { ReaderFactory, ReadResult } from '../importer.types.ts';
import { attributes, number, splitList, text } from './fields.ts';
import { type CsvRow, csvDelimiter, csvHeader, csvRows, hasColumns, openCsvReader, refuseColumns } from './rows.ts';
import { openTextSource } from './text-source.ts';

const signature = ['Restaurant ID', 'Restaurant Name', 'Country Code', 'City', 'Cuisines', 'Aggregate rating', 'Votes'];

/** Zomato's numeric country codes (the dataset's Country-Code.csv) as ISO 3166-1 alpha-2. */
export const zomatoCountryCodes: Readonly<Record<string, string>> = {
  '1': 'IN',
  '14': 'AU',
  '30': 'BR',
  '37': 'CA',
  '94': 'ID',
  '148': 'NZ',
  '162': 'PH',
  '166': 'QA',
  '184': 'SG',
  '189': 'ZA',
  '191': 'LK',
  '208': 'TR',
  '214': 'AE',
  '215': 'GB',
  '216': 'US',
};

/** A country codes file beside the input (`zomato-country-codes.csv`, Kaggle's `Country-Code.csv`), as code → name. */
async function countryNamesBeside(path: string): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  const dir = dirname(path);
  const file = (await readdir(dir)).find((f) => /country[-_ ]?codes?\.csv$/i.test(f));
  if (!file) return names;
  const source = await openTextSource(join(dir, file));
  for await (const r of csvRows(source.text, csvDelimiter(source.sample))) {
    if ('header' in r || !r.ok) continue;
    const code = text(r.row['Country Code']);
    const name = text(r.row.Country);
    if (code && name) names.set(code, name);
  }
  return names;
}

export function zomatoRowToPlace(row: CsvRow, countryNames: ReadonlyMap<string, string> = new Map()): ReadResult {
  const sourceId = text(row['Restaurant ID']);
  if (!sourceId) return { ok: false, reason: 'no id' };
  const name = text(row['Restaurant Name']);
  if (!name) return { ok: false, reason: 'no name' };
  const code = text(row['Country Code']);
  const rating = number(row['Aggregate rating']);
  const place: PlaceInput = {
    sourceId,
    name,
    sourceCategories: splitList(row.Cuisines, /\s*,\s*/),
    address: text(row.Address),
    city: text(row.City),
    countryCode: code ? (zomatoCountryCodes[code] ?? null) : null,
    countryName: code && !zomatoCountryCodes[code] ? (countryNames.get(code) ?? null) : null,
    lat: number(row.Latitude),
    lon: number(row.Longitude),
    // An aggregate rating of 0 is Zomato's "Not rated".
    rating: rating === 0 ? null : rating,
    reviewCount: number(row.Votes),
    attributes: attributes({
      cuisine: text(row.Cuisines),
      price_level: number(row['Price range']),
      cost_for_two: number(row['Average Cost for two']),
      currency: text(row.Currency),
      locality: text(row.Locality),
    }),
  };
  return { ok: true, place };
}

export const zomatoCsv: ReaderFactory = {
  format: 'zomato-csv',
  description: 'Zomato restaurants CSV (Kaggle "Zomato Restaurants Data", usually latin-1): header with Restaurant ID, Aggregate rating…',
  detect: (_path, head) => hasColumns(csvHeader(head), signature),
  open: async (path, options) => {
    refuseColumns(options, 'zomato-csv');
    const countryNames = await countryNamesBeside(path);
    return openCsvReader({
      path,
      options,
      format: 'zomato-csv',
      source: 'zomato',
      prepare: () => (row) => zomatoRowToPlace(row, countryNames),
    });
  },
};
