import { placeRowToPlace, pickFields, type Place, type PlaceField, type PublicPlaceRow } from '../../places/places.schema.ts';

/** What every export format reads: batches of place rows, in the search's order. */
export type PlaceBatches = AsyncIterable<PublicPlaceRow[]>;

/** One cell of a tabular export (CSV, xlsx): numbers stay numbers, lists are joined, null is an empty cell. */
export type Cell = string | number | null;

/** Separator of list values (categories) inside one cell. */
export const listSeparator = ';';

/** The public shape of each row, narrowed to the chosen fields, batch by batch. */
export async function* pickedPlaces(batches: PlaceBatches, fields: readonly PlaceField[]): AsyncGenerator<Partial<Place>[]> {
  for await (const rows of batches) yield rows.map((row) => pickFields(placeRowToPlace(row), fields));
}

/** The cells of each row for tabular formats, batch by batch (no narrowed object in between). */
export async function* placeCellBatches(batches: PlaceBatches, fields: readonly PlaceField[]): AsyncGenerator<Cell[][]> {
  for await (const rows of batches) yield rows.map((row) => placeCells(placeRowToPlace(row), fields));
}

export function placeCells(place: Partial<Place>, fields: readonly PlaceField[]): Cell[] {
  return fields.map((f) => {
    const v = place[f];
    if (v === null || v === undefined) return null;
    if (Array.isArray(v)) return v.join(listSeparator);
    return v;
  });
}

/**
 * Spreadsheet formula injection (CSV only; xlsx cells are typed, never formulas).
 *
 * A text cell is neutralised with a leading `'` when its first character is `=`, `+`, `-`, `@`
 * (or their full-width forms), a tab or a carriage return, or when it starts with spaces or line
 * breaks followed by one of `=+-@` (some spreadsheets trim before parsing). Exception: a plain phone
 * number stays as it is, so `+33 1 42 68 53 00` and E.164 `+4989219989` survive a round trip. A plain
 * phone number is `+`, then a digit, then only digits, spaces and `( ) . - /`, with 6 to 15 digits
 * (E.164 allows at most 15). Such a value has no letters, quotes, `!`, `|` or `:`, so it cannot call a
 * function, reference another cell or sheet, or reach DDE: at worst a spreadsheet reads it as arithmetic
 * on literals. Numbers (rating, lat/lon) are written as numbers and never guarded.
 */
export function guardFormula(value: string): string {
  return startsLikeFormula.test(value) && !isPlainPhoneNumber(value) ? `'${value}` : value;
}

const startsLikeFormula = /^(?:[\t\r]|[ \n\r]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/;
const phoneShape = /^\+\d[\d ().\-/]*$/;

export function isPlainPhoneNumber(value: string): boolean {
  if (!phoneShape.test(value)) return false;
  const digits = value.replace(/\D/g, '').length;
  return digits >= 6 && digits <= 15;
}
