import { type AddressForm, addressForm } from './address.ts';
import type { MatchRecord } from './matcher.ts';
import { nameForms } from './names.ts';
import { matchRules } from './rules.ts';

/**
 * Blocking: keys under which an import indexes the places it has, and the keys it looks up for a new record,
 * so that it compares the record with a handful of candidates instead of the whole catalog. A candidate the
 * matcher can accept shares at least one key with the record:
 * - `c:<cell>:<word>`: a grid cell (`matchRules.blockingCellM` on a side) and the first four letters of a
 *   distinctive name word; a record looks up its own cell and the eight around it, so every place within one
 *   cell side is found. Every name rule needs a word in common, spelling slips aside, and a slip rarely falls
 *   in the first four letters.
 * - `p:<E.164>` and `d:<domain>`: the phone and website domain, wherever the place is (the rule that accepts
 *   a point kilometres off needs the phone).
 * - `g:<coarse cell>:<word>`: the same on a grid of `coarseCellM`, for list matching's records placed by a city.
 * - `s:<street word>:<word>`: a distinctive word of the street (its kind taken off: `Hotterstraße` → `hotter`)
 *   and a name word, wherever the place is. Conflation does not probe them; list matching (`../match/`) does,
 *   for a record that has an address and no point or city the gazetteer knows.
 * Keys are plain strings: a table of (key, place) rows with an index on the key, or a Map in memory.
 */

const METRES_PER_DEGREE = 111_320;
const PREFIX = 4;

function row(lat: number, side: number = matchRules.blockingCellM): number {
  return Math.floor((lat * METRES_PER_DEGREE) / side);
}

/** Column of a longitude within a row: cells of a row have the row's east-west scale (its middle latitude). */
function column(lon: number, rowIndex: number, side: number = matchRules.blockingCellM): number {
  const middle = ((rowIndex + 0.5) * side) / METRES_PER_DEGREE;
  return Math.floor((lon * METRES_PER_DEGREE * Math.cos((middle * Math.PI) / 180)) / side);
}

/**
 * Side of the coarse grid (`g:` keys): a city's whole area (list matching compares a record placed only by its
 * city with the places within 10 km of the city's centre) spans at most 3×3 of its cells, where the fine grid
 * would take 15×15.
 */
export const coarseCellM = 10_000;

/** The grid cell of a point: `row/column`. */
export function cellOf(lat: number, lon: number): string {
  const r = row(lat);
  return `${r}/${column(lon, r)}`;
}

/** The cell of a point and its eight neighbours. */
export function cellsAround(lat: number, lon: number): string[] {
  const r = row(lat);
  const out: string[] = [];
  for (let dr = -1; dr <= 1; dr++) {
    const c = column(lon, r + dr);
    for (let dc = -1; dc <= 1; dc++) out.push(`${r + dr}/${c + dc}`);
  }
  return out;
}

/** Name-word keys of a record: the first letters of each distinctive word of each of its names, without repeats. */
export function nameKeys(r: Pick<MatchRecord, 'name' | 'names'>): string[] {
  const keys = new Set<string>();
  for (const form of nameForms(r.name, r.names)) for (const t of form.tokens) keys.add(t.slice(0, PREFIX));
  return [...keys];
}

function contactKeys(r: MatchRecord): string[] {
  const out: string[] = [];
  if (r.phone_e164 !== null) out.push(`p:${r.phone_e164}`);
  if (r.website_domain !== null) out.push(`d:${r.website_domain}`);
  return out;
}

/** Letters of a street word a street key keeps: enough to tell streets apart, few enough to survive a slip at the end. */
const STREET_PREFIX = 5;

/** The street's distinctive words as street keys keep them (`addressForm`: kinds and compound endings off). */
export function streetKeyWords(form: AddressForm | null): string[] {
  if (!form) return [];
  return [...new Set(form.street.filter((w) => w.length >= 3 && !/^\d+$/.test(w)).map((w) => w.slice(0, STREET_PREFIX)))];
}

/** `s:<street word>:<name word>` keys of a place with a street address. */
export function streetKeys(streetWords: readonly string[], nameWords: readonly string[]): string[] {
  const out: string[] = [];
  for (const s of streetWords) for (const w of nameWords) out.push(`s:${s}:${w}`);
  return out;
}

/** The keys to index a place under. */
export function blockingKeys(r: MatchRecord): string[] {
  const out = contactKeys(r);
  const words = nameKeys(r);
  out.push(...streetKeys(streetKeyWords(addressForm(r)), words));
  if (r.lat !== null && r.lon !== null) {
    const cell = cellOf(r.lat, r.lon);
    const r0 = row(r.lat, coarseCellM);
    const coarse = `${r0}/${column(r.lon, r0, coarseCellM)}`;
    for (const k of words) out.push(`c:${cell}:${k}`, `g:${coarse}:${k}`);
  }
  return out;
}

/** The keys to look up for a record's candidates (the places indexed under any of them). */
export function probeKeys(r: MatchRecord): string[] {
  const out = contactKeys(r);
  if (r.lat !== null && r.lon !== null) {
    const words = nameKeys(r);
    for (const cell of cellsAround(r.lat, r.lon)) for (const k of words) out.push(`c:${cell}:${k}`);
  }
  return out;
}

/**
 * The cells whose area comes within `radiusM` of a point: what a record placed only by its city (a centre and
 * a radius) probes with its name words, instead of the 3×3 cells around a point of its own.
 */
export function cellsWithin(lat: number, lon: number, radiusM: number, side: number = matchRules.blockingCellM): string[] {
  const r = row(lat, side);
  const span = Math.ceil(radiusM / side);
  const out: string[] = [];
  for (let dr = -span; dr <= span; dr++) {
    const c = column(lon, r + dr, side);
    for (let dc = -span; dc <= span; dc++) out.push(`${r + dr}/${c + dc}`);
  }
  return out;
}
