import { type CountryCode, getCountryCallingCode, isSupportedCountry, parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { PhoneNormaliser } from './geo.types.ts';

/** Separators between several numbers in one field (`+3589626044;+358401785205`, `93 421 43 08 | 93 233 75 33`, `… or …`). */
const SEVERAL = /\s*[;,|]\s*|\s+(?:or|oder|ou)\s+/i;
/** Spreadsheet damage (`8.62167E+11`): the digits are gone, so the value cannot be a number any more. */
const SCIENTIFIC = /^\d+(?:[.,]\d+)?e[+-]?\d+$/i;

function supported(countryCode: string | null): CountryCode | undefined {
  return countryCode && isSupportedCountry(countryCode) ? countryCode : undefined;
}

function parseOne(raw: string, country: CountryCode | undefined): string | null {
  let text = raw.trim();
  if (text === '' || SCIENTIFIC.test(text)) return null;
  // `+49 (0) 89 …`: the trunk prefix written after the country code is not dialled internationally.
  text = text.replace(/^(\+\d{1,3})\s*\(0\)\s*/, '$1 ');
  if (text.startsWith('00')) text = `+${text.slice(2)}`;
  if (country && /^\d+$/.test(text)) {
    // Digits only that begin with the country's calling code (Michelin writes `3905526311` for
    // +39 055 26311): read them as international first, since the national reading can also look valid.
    const callingCode = getCountryCallingCode(country);
    if (text.startsWith(callingCode)) {
      const international = parsePhoneNumberFromString(`+${text}`);
      if (international?.isValid()) return international.number;
    }
  }
  const parsed = parsePhoneNumberFromString(text, country ? { defaultCountry: country } : {});
  if (parsed?.isValid()) return parsed.number;
  // Digits only, not valid at home: an international number without its `+`, from a neighbour the
  // source filed under this country (Monaco's +377 under France, the Faroes' +298 under Denmark).
  if (/^\d{8,15}$/.test(text)) {
    const international = parsePhoneNumberFromString(`+${text}`);
    if (international?.isValid()) return international.number;
  }
  return null;
}

function firstValid(parts: string[], country: CountryCode | undefined): string | null {
  for (const part of parts) {
    const e164 = parseOne(part, country);
    if (e164) return e164;
  }
  return null;
}

/** How many (country, raw) answers `normalisePhone` remembers before it starts over. */
const REMEMBERED = 50_000;
const remembered = new Map<string, string | null>();

/**
 * E.164 form (`+49892199890`) of the first valid number in a raw phone field, using the place's country
 * for numbers written nationally; extensions are dropped. Null when nothing in the field is a valid number
 * according to libphonenumber's full ("max") metadata.
 * Parsing and validating is the costly part of enrichment; the same field comes back often within an import (a chain's
 * central number, a re-import of the same file), so recent answers are remembered per (country, field).
 */
export const normalisePhone: PhoneNormaliser = (raw, countryCode) => {
  const key = `${countryCode ?? ''}\u0000${raw}`;
  const known = remembered.get(key);
  if (known !== undefined) return known;
  const e164 = parseField(raw, supported(countryCode));
  if (remembered.size >= REMEMBERED) remembered.clear();
  remembered.set(key, e164);
  return e164;
};

function parseField(raw: string, country: CountryCode | undefined): string | null {
  for (const part of raw.split(SEVERAL)) {
    // A slash is part of a number (`089/2199890`) more often than a separator between two, so the whole part goes first.
    const e164 = parseOne(part, country) ?? (part.includes('/') ? firstValid(part.split('/'), country) : null);
    if (e164) return e164;
  }
  return null;
}
