import { problemTypeBase } from '../../infra/http/problem.ts';
import { registrableDomain } from '../../infra/web-domain.ts';
import { type AddressForm, addressForm } from '../conflation/address.ts';
import { type NameForm, nameForm } from '../conflation/names.ts';
import { siteOf } from '../contacts/contacts.ts';
import type { City } from '../geo/gazetteer.ts';
import { normalisePhone } from '../geo/phone.ts';
import type { PlaceNameResolver } from '../search/search.types.ts';
import type { LegalForms } from './legal-forms.ts';
import type { MatchRecordInput, RecordProblem } from './match.schema.ts';

/** A record made ready for matching: the forms the matcher compares, and what bounds its candidates. */
export interface PreparedRecord {
  forms: NameForm[];
  country: string | null;
  phone: string | null;
  domain: string | null;
  address: AddressForm | null;
  point: { lat: number; lon: number } | null;
  /** The record's city as the gazetteer knows it (any spelling or language), with a radius that covers it. */
  city: { city: City; radiusM: number } | null;
}

/** German spellings without umlauts (`Mueller`, `Strasse`) next to what folding makes of the umlaut (`Müller` → `muller`). */
const UMLAUT_SPELLING = /(?<=[a-z])(ae|oe|ue)/g;

/** The forms of a record's name: legal forms of its country taken off, and its spelling without `ae`/`oe`/`ue` when it has them. */
export function recordNameForms(name: string, country: string | null, legalForms: LegalForms): NameForm[] {
  const stripped = legalForms.strip(name, country);
  const out: NameForm[] = [];
  for (const text of [stripped, stripped.replace(UMLAUT_SPELLING, (m) => m[0]!)]) {
    const form = nameForm(text);
    if (form && !out.some((f) => f.joined === form.joined)) out.push(form);
  }
  return out;
}

/**
 * Radius around a city's point that holds its businesses: grows with the square root of the population (the
 * city's extent), 3 km for a small town, at most 10 km (a record with only a city is compared with the places
 * near its centre; a business in a far suburb needs its address or coordinates).
 */
export function cityRadiusM(population: number): number {
  return Math.min(10_000, Math.max(3_000, 2_000 + 7 * Math.sqrt(population)));
}

function problem(field: string, message: string, detail: string, allowed?: unknown): RecordProblem {
  return {
    type: `${problemTypeBase}validation_failed`,
    title: 'Invalid record',
    status: 400,
    detail,
    code: 'validation_failed',
    errors: [{ field, message, ...(allowed !== undefined ? { allowed } : {}) }],
  };
}

const blank = (s: string | undefined): boolean => s === undefined || s.trim() === '';

/**
 * The city a one-line address may end with (`Hotterstr. 12, 80331 München`, `Annankatu 1 Helsinki`): its last
 * part without the postcode, then its last word and last two words, to try in that order.
 */
export function addressCities(address: string): string[] {
  const parts = address.split(',').map((p) => p.replace(/[\p{N}-]+/gu, ' ').trim());
  const last = parts[parts.length - 1] ?? '';
  const words = last.split(/\s+/).filter((w) => w !== '');
  const out = parts.length > 1 && last !== '' ? [last] : [];
  if (words.length >= 2) out.push(words.slice(-2).join(' '));
  if (words.length >= 1) out.push(words[words.length - 1]!);
  return [...new Set(out)].filter((c) => c.length >= 3);
}

/**
 * The name's words that name its city (`Ratskeller München`, with the city written `Munich`) taken off, when
 * other words remain: a CRM adds the city to tell branches apart. A word names the city when the gazetteer
 * resolves it to that city.
 */
function withoutCity(forms: NameForm[], city: City | null, isCity: (word: string) => boolean): NameForm[] {
  if (city === null) return forms;
  const out = [...forms];
  for (const f of forms) {
    const kept = f.tokens.filter((t) => t.length < 4 || !isCity(t));
    if (kept.length > 0 && kept.length < f.tokens.length) {
      const joined = kept.join('');
      if (!out.some((g) => g.joined === joined)) out.push({ tokens: kept, joined, letters: joined.length });
    }
  }
  return out;
}

/** Validates and prepares one record: its problem, or what the matcher needs of it. */
export function prepareRecord(
  r: MatchRecordInput,
  names: Pick<PlaceNameResolver, 'resolveCountry' | 'sameNamedCities'>,
  legalForms: LegalForms,
): { problem: RecordProblem } | { record: PreparedRecord } {
  if (blank(r.name)) return { problem: problem('name', 'required', 'the record has no name: a name is what is matched') };
  let country: string | null = null;
  if (!blank(r.country)) {
    const found = names.resolveCountry(r.country!.trim());
    if (!found) {
      return {
        problem: problem(
          'country',
          'unknown country',
          `unknown country: ${r.country}`,
          'an ISO 3166-1 alpha-2 or alpha-3 code, or a country name',
        ),
      };
    }
    country = found.code;
  }
  const hasLat = r.lat !== undefined && r.lat !== null;
  const hasLon = r.lon !== undefined && r.lon !== null;
  if (hasLat !== hasLon) {
    return { problem: problem(hasLat ? 'lon' : 'lat', 'required with the other coordinate', 'lat and lon come together or not at all') };
  }
  let point: PreparedRecord['point'] = null;
  if (hasLat) {
    if (!Number.isFinite(r.lat) || r.lat! < -90 || r.lat! > 90) {
      return { problem: problem('lat', 'out of range', `latitude ${r.lat} is out of range`, { minimum: -90, maximum: 90 }) };
    }
    if (!Number.isFinite(r.lon) || r.lon! < -180 || r.lon! > 180) {
      return { problem: problem('lon', 'out of range', `longitude ${r.lon} is out of range`, { minimum: -180, maximum: 180 }) };
    }
    point = { lat: r.lat!, lon: r.lon! };
  }
  let city: PreparedRecord['city'] = null;
  for (const written of blank(r.city) ? (blank(r.address) ? [] : addressCities(r.address!)) : [r.city!.trim()]) {
    // A town over the border is filed under its own country (Beausoleil, France, for a business of Monaco).
    // The gazetteer's own choice among the cities of that name (`resolveCity`'s), without its spelling suggestions: a
    // record's city is matched as written or not at all, and suggesting costs a scan of every city name.
    const chosen = names.sameNamedCities(written, country)[0] ?? (country ? names.sameNamedCities(written, null)[0] : undefined);
    if (chosen) {
      city = { city: chosen, radiusM: cityRadiusM(chosen.population) };
      country ??= chosen.countryCode;
      break;
    }
  }
  const forms = withoutCity(
    recordNameForms(r.name!, country, legalForms),
    city?.city ?? null,
    (word) => names.sameNamedCities(word, city!.city.countryCode)[0]?.id === city!.city.id,
  );
  if (forms.length === 0) return { problem: problem('name', 'no letters or digits', 'the name has no letters or digits') };
  const site = siteOf(blank(r.website) ? null : r.website!, blank(r.email) ? null : r.email!);
  const street = blank(r.street) ? null : r.street!;
  const housenumber = blank(r.housenumber) ? null : r.housenumber!;
  const address = blank(r.address) ? null : r.address!;
  return {
    record: {
      forms,
      country,
      phone: blank(r.phone) ? null : normalisePhone(r.phone!, country),
      domain: site ? registrableDomain(site.url) : null,
      address: street !== null || address !== null ? addressForm({ street, housenumber, address }) : null,
      point,
      city,
    },
  };
}
