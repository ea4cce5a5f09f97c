import { type CountryCode, getCountries, parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { parse as parseHost } from 'tldts';
import { foldText } from '../../infra/text.ts';
import { normalisePhone } from '../geo/phone.ts';
import { addressKey, contactKey, emailDomain, isHouseNumber, normaliseEmail, streetNumberSplits } from './contact-keys.ts';

/**
 * What a search box's text says besides names: a phone number, a web address or domain, an email address or a
 * street address (`readContact`), read without the catalog. Which reading holds is decided by the index
 * (`contact-lookup.ts`): a national number is tried in every country where it is valid, an address in each way
 * its words can be split, and the first reading that finds places wins. The rest of the text is searched by name.
 */

/** One way to read an address: the street as written, its number, and what narrows it. */
export interface AddressReading {
  street: string;
  housenumber: string;
  /** `contactKey('address', …)`. */
  key: string;
  postcode: string | null;
  city: string | null;
}

export type ContactReading = (
  | {
      kind: 'phone';
      /** E.164 readings, likeliest first: the country's (given, or the city's), the international prefix, then every country where the national number is valid. */
      e164: string[];
    }
  | { kind: 'domain'; domain: string }
  | { kind: 'email'; email: string; domain: string | null }
  | { kind: 'address'; readings: AddressReading[] }
) & {
  /** The text as it held the contact. */
  input: string;
  /** What is left of the text for the name search (empty when the contact was all of it). */
  rest: string;
};

/** How a query's contact was read, as `resolved.query` says it. */
export type ResolvedContact =
  | { kind: 'phone'; input: string; e164: string; places: number }
  | { kind: 'domain'; input: string; domain: string; places: number }
  | { kind: 'email'; input: string; email: string; domain: string | null; places: number }
  | {
      kind: 'address';
      input: string;
      street: string;
      housenumber: string;
      postcode: string | null;
      city: string | null;
      places: number;
    };

/** A phone number as typed: digits with `+ ( ) . - /` and spaces, 6 to 15 digits, `+` or `00` in front for an international one. */
const PHONE_SPAN = /(?:\+|\b00)?\(?\d[\d\s()./-]{5,}\d/g;

/** The digits of a run of text. */
function digitsOf(span: string): number {
  return span.replace(/\D/g, '').length;
}

/**
 * The E.164 readings of a phone number: in `country` (a country given, or the city's), as international
 * (`+`, `00`), else (`everywhere`), for a number written nationally, in every country where it is valid (the index
 * decides which: `contact-lookup.ts`).
 */
export function phoneReadings(span: string, country: string | null, options = { everywhere: true }): string[] {
  const out: string[] = [];
  const add = (e164: string | null) => {
    if (e164 && !out.includes(e164)) out.push(e164);
  };
  const text = span.trim();
  const international = /^(?:\+|00)/.test(text);
  if (country) add(normalisePhone(text, country));
  if (international) add(normalisePhone(text, null));
  if (options.everywhere && !international) {
    for (const code of everyCountry) {
      const parsed = parsePhoneNumberFromString(text, { defaultCountry: code });
      if (parsed?.isValid()) add(parsed.number);
    }
  }
  return out;
}

/** Every country libphonenumber knows (its metadata, fixed). */
const everyCountry: readonly CountryCode[] = getCountries();

/** The registrable domain of a word that is a URL or a host name under a public suffix (`www.example.de`, `https://example.de/`). */
function domainOfWord(word: string): string | null {
  if (word.includes('@') || !word.includes('.')) return null;
  const parsed = parseHost(word, { allowPrivateDomains: true });
  if (!parsed.domain || parsed.isIp || !(parsed.isIcann || parsed.isPrivate)) return null;
  // A bare word with a dot is a host name only when its suffix is a real one and it has a label before it.
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(word) && !/^[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+\.?(?::\d+)?(?:\/\S*)?$/u.test(word)) return null;
  return parsed.domain.toLowerCase();
}

const restWithout = (text: string, part: string): string =>
  text
    .replace(part, ' ')
    .replace(/\s+/g, ' ')
    .replace(/^[\s,;]+|[\s,;]+$/g, '');

/** A postal code as written in the address line (`80333`, `4000-123`, `FL-9490`, `SW1A 1AA`). */
const POSTCODE = /^(?:[A-Z]{1,2}-)?\d{4,5}(?:-\d{3,4})?$|^[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}$/i;

/** A text after the street (`80333 München`, `München`, `Porto 4000-123`) as postcode and city. */
function postcodeAndCity(text: string): { postcode: string | null; city: string | null } {
  let postcode: string | null = null;
  const words: string[] = [];
  for (const word of text.split(/[\s,]+/).filter((w) => w !== '')) {
    if (postcode === null && POSTCODE.test(word)) postcode = word;
    else words.push(word);
  }
  const city = words.join(' ');
  return { postcode, city: city === '' ? null : city };
}

/**
 * The ways a text can be an address (`streetNumberSplits`): `Promenadeplatz 12, München`, `Rua Augusta, 24`,
 * `10 Downing Street, London`; without a comma after the street (`12 Rue de Rivoli Paris`), each split of street and
 * city too. Empty when no word is a house number.
 */
export function addressReadings(text: string): AddressReading[] {
  const out: AddressReading[] = [];
  const splits = streetNumberSplits(text);
  const words = (text.split(',')[0] ?? '').trim().split(/\s+/);
  // Number then street with no comma after it: the street may end before any of its words.
  if (!text.includes(',') && words.length > 2 && isHouseNumber(words[0]!))
    for (let end = words.length - 1; end >= 2; end--)
      splits.push({ street: words.slice(1, end).join(' '), number: words[0]!, rest: words.slice(end).join(' ') });
  for (const split of splits) {
    const key = addressKey(split.street, split.number);
    if (!key) continue;
    const r: AddressReading = {
      street: split.street,
      housenumber: split.number,
      key: contactKey('address', key),
      ...postcodeAndCity(split.rest),
    };
    if (!out.some((o) => o.key === r.key && o.city === r.city && o.postcode === r.postcode)) out.push(r);
  }
  return out;
}

/**
 * What the text may say besides names, likeliest first (the first that finds places holds: `contact-lookup.ts`):
 * an email address, else a URL or domain, else a phone number (read in `country`, the search's country or its
 * city's, by its international prefix, or in every country where it is valid) and a street address. Empty for
 * names alone.
 */
export function readContact(text: string, country: string | null): ContactReading[] {
  const words = text.split(/\s+/).filter((w) => w !== '');
  for (const word of words) {
    const email = normaliseEmail(word.replace(/^[<(]|[>),;]$/g, ''));
    if (email) return [{ kind: 'email', email, domain: emailDomain(email), input: word, rest: restWithout(text, word) }];
  }
  for (const word of words) {
    const domain = domainOfWord(word.replace(/[),;]$/, ''));
    if (domain) return [{ kind: 'domain', domain, input: word, rest: restWithout(text, word) }];
  }
  const out: ContactReading[] = [];
  const spans = [...text.matchAll(PHONE_SPAN)].map((m) => m[0].trim()).filter((s) => digitsOf(s) >= 6 && digitsOf(s) <= 15);
  spans.sort((a, b) => digitsOf(b) - digitsOf(a));
  for (const span of spans) {
    const e164 = phoneReadings(span, country);
    if (e164.length > 0) {
      out.push({ kind: 'phone', e164, input: span, rest: restWithout(text, span) });
      break;
    }
  }
  const readings = addressReadings(text);
  // An address is read from the whole text, and the whole text is also searched by name (a name can hold a number).
  if (readings.length > 0) out.push({ kind: 'address', readings, input: text, rest: text });
  return out;
}

/** Whether a reading could hold no name: its rest has no letter or digit left. */
export const restIsEmpty = (reading: ContactReading): boolean => foldText(reading.rest) === '';
