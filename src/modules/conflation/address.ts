import { foldText } from '../../infra/text.ts';
import { sameWord } from './names.ts';

/**
 * Words of street names that say what kind of street it is, not which one (`St`, `Avenue`, `Straße` as a
 * word of its own, `Triq`, `Rua`), and directions written out or not. Compound German and Finnish
 * names (`Hotterstraße`, `Albertinkatu`) stay one word, which is what both sources write.
 */
const GENERIC_STREET_WORDS: ReadonlySet<string> = new Set([
  'street',
  'st',
  'str',
  'strasse',
  'road',
  'rd',
  'avenue',
  'ave',
  'av',
  'avda',
  'avenida',
  'lane',
  'ln',
  'boulevard',
  'blvd',
  'bd',
  'place',
  'pl',
  'plaza',
  'square',
  'sq',
  'drive',
  'dr',
  'way',
  'court',
  'ct',
  'terrace',
  'parkway',
  'pkwy',
  'highway',
  'hwy',
  'quay',
  'quai',
  'kai',
  'rua',
  'rue',
  'via',
  'viale',
  'calle',
  'carrer',
  'carretera',
  'triq',
  'r',
  'praca',
  'pca',
  'largo',
  'lg',
  'travessa',
  'tv',
  'trav',
  'alameda',
  'estrada',
  'gasse',
  'platz',
  'weg',
  'allee',
  'ste',
  'suite',
  'unit',
  'fl',
  'floor',
  'level',
  'the',
  'of',
  'de',
  'des',
  'du',
  'la',
  'le',
  'les',
  'del',
  'della',
  'di',
  'da',
  'do',
  'dos',
  'das',
  'der',
  'die',
  'il',
  'l',
  'd',
  's',
]);

/** A street address as the matcher compares it: the street's distinctive words and the house numbers. */
export interface AddressForm {
  street: string[];
  /** House numbers covered: `14` → [14]; `14-15` → [14, 15]; `9-11` → [9, 10, 11]. Empty when unknown. */
  numbers: number[];
  /** A number that is not a plain number or range (`5-4-8` in Tokyo): compared as written. */
  compound: string | null;
}

const LEADING = /^(\d+[a-z]?(?:\s*[-/]\s*\d+[a-z]?)*)\.?\s+(\D.*)$/i;
const TRAILING = /^(\D.*?)\s+(\d+[a-z]?(?:\s*[-/]\s*\d+[a-z]?)*)\.?$/i;

/** Widest house-number range spelled out (`2-40` is not a building). */
const MAX_RANGE = 20;

function parseNumber(text: string): { numbers: number[]; compound: string | null } {
  const parts = text.split(/\s*[-/]\s*/).map((p) => parseInt(p, 10));
  if (parts.some((n) => !Number.isFinite(n))) return { numbers: [], compound: null };
  if (parts.length === 1) return { numbers: [parts[0]!], compound: null };
  if (parts.length === 2 && parts[1]! > parts[0]! && parts[1]! - parts[0]! <= MAX_RANGE) {
    const numbers: number[] = [];
    for (let n = parts[0]!; n <= parts[1]!; n++) numbers.push(n);
    return { numbers, compound: null };
  }
  return { numbers: [], compound: parts.join('-') };
}

/**
 * Endings of compound street names that say what kind of street it is (`Hotterstraße`, written `Hotterstr.`
 * or `Hotter Straße` too; `Marienplatz`, `Marienpl.`): taken off, so that the three compare as `hotter`. Longest first.
 */
const COMPOUND_ENDINGS = ['strasse', 'gasse', 'platz', 'allee', 'str', 'weg', 'pl'];

function streetWord(word: string): string {
  for (const ending of COMPOUND_ENDINGS) {
    if (word.length >= ending.length + 3 && word.endsWith(ending)) return word.slice(0, -ending.length);
  }
  return word;
}

function streetWords(text: string): string[] {
  return foldText(text)
    .split(' ')
    .filter((w) => w !== '' && !GENERIC_STREET_WORDS.has(w))
    .map(streetWord);
}

/** Street and number out of one line: `26 St. John Street`, `Hotterstraße 12`, `2-7-2 Azabujuban`. */
function parseLine(line: string): { street: string; number: string } | null {
  const t = line.trim();
  const lead = LEADING.exec(t);
  if (lead) return { number: lead[1]!, street: lead[2]! };
  const trail = TRAILING.exec(t);
  if (trail) return { number: trail[2]!, street: trail[1]! };
  return null;
}

/**
 * The street address of a record: `street` and `housenumber` when the source has them apart (OpenStreetMap),
 * else the number read off `street` (Yelp, Overture write `1723 N Halsted St` there); a record without a
 * street (Michelin, Zomato) has it read off the first part
 * of the one-line `address` that holds a street name and a number (Michelin writes `The Shoppes at Marina Bay
 * Sands, Galleria Level, #B1-71, 2 Bayfront Avenue, 018972, Singapore`: `2 Bayfront Avenue` is the first such
 * part; `Level 70` is not a street). Null when nothing like a street is known.
 */
export function addressForm(r: { street: string | null; housenumber: string | null; address: string | null }): AddressForm | null {
  if (r.street !== null) {
    if (r.housenumber !== null) return { street: streetWords(r.street), ...parseNumber(r.housenumber.trim()) };
    const first = r.street.split(',')[0]!;
    const line = parseLine(first);
    return line
      ? { street: streetWords(line.street), ...parseNumber(line.number) }
      : { street: streetWords(first), numbers: [], compound: null };
  }
  if (r.address === null) return null;
  for (const part of r.address.split(',')) {
    const line = parseLine(part);
    if (!line) continue;
    const street = streetWords(line.street);
    if (street.length > 0) return { street, ...parseNumber(line.number) };
  }
  return null;
}

/** Same street: every distinctive word of the shorter street name is in the other (spelling slips allowed). */
export function sameStreet(a: readonly string[], b: readonly string[]): boolean {
  if (a.length === 0 || b.length === 0) return false;
  const [small, large] = a.length <= b.length ? [a, b] : [b, a];
  return small.every((w) => large.some((x) => sameWord(w, x)));
}

/**
 * `agree`: the same street and a house number in common. `conflict`: the same street, numbers on both sides
 * and none in common (two doors of one street are two premises). `unknown` otherwise: a number missing, or
 * different streets (a corner building has an address on each).
 */
export type AddressRelation = 'agree' | 'conflict' | 'unknown';

export function compareAddresses(a: AddressForm | null, b: AddressForm | null): AddressRelation {
  if (a === null || b === null || !sameStreet(a.street, b.street)) return 'unknown';
  if (a.compound !== null || b.compound !== null) {
    if (a.compound === null || b.compound === null) return 'unknown';
    return a.compound === b.compound ? 'agree' : 'conflict';
  }
  if (a.numbers.length === 0 || b.numbers.length === 0) return 'unknown';
  return a.numbers.some((n) => b.numbers.includes(n)) ? 'agree' : 'conflict';
}
