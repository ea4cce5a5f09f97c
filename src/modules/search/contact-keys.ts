import { foldText } from '../../infra/text.ts';
import { registrableDomain } from '../../infra/web-domain.ts';

/**
 * The keys by which a place is found from what someone already knows of it (`/api/v2/lookup`, and a phone,
 * domain, email or address typed into the search box): one normalised string per fact, prefixed by its kind,
 * computed the same way from a place's record (`placeContactKeys`, the engine's index) and from a query
 * (`contact-query.ts`), so that finding is an exact comparison.
 */

export const contactKinds = ['phone', 'domain', 'email', 'address'] as const;
export type ContactKind = (typeof contactKinds)[number];

const prefix: Record<ContactKind, string> = { phone: 'p:', domain: 'd:', email: 'e:', address: 'a:' };

/** A kind's key of a normalised value: `p:+49892424370`, `d:example.de`, `e:info@example.de`, `a:promenadepl|12`. */
export const contactKey = (kind: ContactKind, value: string): string => `${prefix[kind]}${value}`;

const EMAIL = /^[^\s@<>()[\],;:"]+@[^\s@<>()[\],;:"]+\.[^\s@<>()[\],;:"]+$/;

/** An email address as compared: trimmed, `mailto:` dropped, lower case; null when it is not one. */
export function normaliseEmail(text: string): string | null {
  const value = text
    .trim()
    .replace(/^mailto:/i, '')
    .toLowerCase();
  return EMAIL.test(value) ? value : null;
}

/** The registrable domain of an email address (`info@mail.example.de` → `example.de`). */
export function emailDomain(email: string): string | null {
  return registrableDomain(email.slice(email.lastIndexOf('@') + 1));
}

/**
 * Street words as written in addresses and their usual abbreviations, folded to one form (German, English,
 * Portuguese, Spanish, Catalan, French, Italian, Finnish, Maltese): `Str.`, `Straße` and `Strasse` are `str`;
 * `St`, `Street`, `Saint` and `Sankt` are `st` (the one form keeps `St` right whichever it stands for).
 */
const streetWords: Record<string, string> = {
  strasse: 'str',
  str: 'str',
  street: 'st',
  st: 'st',
  saint: 'st',
  sankt: 'st',
  santa: 'sta',
  sta: 'sta',
  santo: 'sto',
  sto: 'sto',
  avenue: 'av',
  avenida: 'av',
  avinguda: 'av',
  avda: 'av',
  ave: 'av',
  av: 'av',
  rua: 'r',
  r: 'r',
  road: 'rd',
  rd: 'rd',
  boulevard: 'bd',
  blvd: 'bd',
  bd: 'bd',
  bvd: 'bd',
  drive: 'dr',
  dr: 'dr',
  lane: 'ln',
  ln: 'ln',
  platz: 'pl',
  place: 'pl',
  pl: 'pl',
  plaza: 'pl',
  praca: 'pc',
  pc: 'pc',
  square: 'sq',
  sq: 'sq',
  travessa: 'tv',
  tv: 'tv',
  largo: 'lgo',
  lgo: 'lgo',
  calle: 'c',
  carrer: 'c',
  c: 'c',
  via: 'v',
  v: 'v',
  viale: 'vle',
  vle: 'vle',
  piazza: 'pza',
  pza: 'pza',
  triq: 'tr',
  tr: 'tr',
  katu: 'k',
  k: 'k',
  gasse: 'g',
  g: 'g',
  weg: 'wg',
  wg: 'wg',
  allee: 'al',
  al: 'al',
};

/** Compound endings of street names written as one word (`Hauptstraße`, `Hauptstr.`, `Promenadeplatz`, `Mannerheimintie`). */
const streetEndings: Array<[string, string]> = [
  ['strasse', 'str'],
  ['platz', 'pl'],
  ['gasse', 'g'],
  ['allee', 'al'],
  ['katu', 'k'],
];

/** Small words that some write and others leave out (`Rua de Santa Catarina`, `R. Santa Catarina`). */
const fillerWords = new Set([
  'de',
  'da',
  'do',
  'das',
  'dos',
  'del',
  'della',
  'di',
  'des',
  'du',
  'la',
  'le',
  'les',
  'el',
  'der',
  'the',
  'of',
  'il',
  'l',
]);

/**
 * A street name as compared: folded (case, accents, `ß`), each word's usual abbreviation, compound endings
 * abbreviated, small words left out, and the words run together (`Promenade Platz` is `Promenadeplatz`).
 */
export function streetKey(street: string): string {
  const words = foldText(street).split(' ');
  const out: string[] = [];
  for (const word of words) {
    if (word === '' || fillerWords.has(word)) continue;
    let w = streetWords[word] ?? word;
    if (w === word) {
      for (const [ending, short] of streetEndings) {
        if (word.length > ending.length && word.endsWith(ending)) {
          w = word.slice(0, -ending.length) + short;
          break;
        }
      }
    }
    out.push(w);
  }
  return out.join('');
}

const HOUSE = /^(\d{1,5})\s*([a-z])?(?![a-z])/;

/** A house number as compared: its number and an optional letter (`12 a`, `12A`, `12a` are `12a`; `12-14` is `12`). */
export function houseKey(housenumber: string): string | null {
  const m = HOUSE.exec(foldText(housenumber));
  return m ? `${m[1]}${m[2] ?? ''}` : null;
}

/** Whether a word is a house number (`12`, `12a`, `12-14`, `7b`). */
export const isHouseNumber = (word: string): boolean => /^\d{1,5}[a-z]?(?:[-/]\d{1,5}[a-z]?)?$/i.test(word);

/** A house number written with its label (`Nr. 8`, `No 8`, `nº 8`): the number. */
const LABELLED_NUMBER = /^(?:nr|no|n|num|numero|n[º°o])\.?\s*(\d{1,5}[a-z]?)$/i;

/** A comma-separated part of an address that is a house number alone (`24`, `Nr. 8`), as the number; else null. */
export function numberPart(part: string): string | null {
  const text = part.trim();
  if (isHouseNumber(text)) return text;
  return LABELLED_NUMBER.exec(text)?.[1] ?? null;
}

/**
 * The ways the first part of an address can be a street and a number, likeliest first: street then number
 * (`Promenadeplatz 12`, `Leopoldstr. 12 a`, `Rua 31 de Janeiro 74`: each number word is a reading, the last first),
 * number then street (`1234 Pearl St`), or the number in the next comma-separated part (`Rua Augusta, 24`,
 * `Rua São Francisco, Nr. 8`). `rest` is what follows (a postcode, a city). The place's side
 * (`addressKey`) takes the first; a query's side tries each against the index.
 */
export function streetNumberSplits(text: string): Array<{ street: string; number: string; rest: string }> {
  const parts = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (parts.length === 0) return [];
  const out: Array<{ street: string; number: string; rest: string }> = [];
  const after = parts.slice(1).join(' ');
  const words = parts[0]!.split(/\s+/);
  // Street then number; a letter written apart after it (`12 a`) is part of the number.
  for (let at = words.length - 1; at >= 1; at--) {
    if (!isHouseNumber(words[at]!)) continue;
    const letter = /^\p{L}$/u.test(words[at + 1] ?? '') && /^\d+$/.test(words[at]!);
    const number = letter ? `${words[at]}${words[at + 1]}` : words[at]!;
    out.push({
      street: words.slice(0, at).join(' '),
      number,
      rest: [words.slice(at + (letter ? 2 : 1)).join(' '), after].join(' ').trim(),
    });
  }
  if (words.length > 1 && isHouseNumber(words[0]!)) out.push({ street: words.slice(1).join(' '), number: words[0]!, rest: after });
  const next = parts.length >= 2 ? numberPart(parts[1]!) : null;
  if (next !== null) out.push({ street: parts[0]!, number: next, rest: parts.slice(2).join(' ') });
  return out.filter((s) => /\p{L}/u.test(s.street));
}

/**
 * The address key of a street and house number; a street that holds its number (`1234 Pearl St`,
 * `Rua Augusta 24`, as Overture and Foursquare write it) gives it when `housenumber` is empty
 * (`streetNumberSplits`, the likeliest split). Null without a street or a number.
 */
export function addressKey(street: string | null, housenumber: string | null): string | null {
  if (!street) return null;
  let name = street;
  let number = housenumber ? houseKey(housenumber) : null;
  if (number === null) {
    const split = streetNumberSplits(street)[0];
    if (!split) return null;
    name = split.street;
    number = houseKey(split.number);
  }
  const key = streetKey(name);
  return number === null || key === '' ? null : `${key}|${number}`;
}

/** What a place's record says of its contacts, as the index reads it (`engine.repository.ts`). */
export interface PlaceContactFacts {
  phone_e164: string | null;
  website_domain: string | null;
  email: string | null;
  /** Enrichment's finds, already checked to still count (`foundValid`); null otherwise. */
  found_phone: string | null;
  found_email: string | null;
  street: string | null;
  housenumber: string | null;
}

/**
 * Every key of a place: its phones (the source's and the one its website gave), its website's registrable
 * domain, its emails (the source's and the one its website gave), its street address. An email's domain is
 * not a domain of the place (a webmail's domain would name thousands of places).
 */
export function placeContactKeys(facts: PlaceContactFacts): string[] {
  const keys = new Set<string>();
  for (const phone of [facts.phone_e164, facts.found_phone]) if (phone) keys.add(contactKey('phone', phone));
  if (facts.website_domain) keys.add(contactKey('domain', facts.website_domain));
  for (const raw of [facts.email, facts.found_email]) {
    const email = raw ? normaliseEmail(raw) : null;
    if (email) keys.add(contactKey('email', email));
  }
  const address = addressKey(facts.street, facts.housenumber);
  if (address) keys.add(contactKey('address', address));
  return [...keys];
}
