import { AppError } from '../../infra/errors.ts';
import { foldText } from '../../infra/text.ts';
import { registrableDomain } from '../../infra/web-domain.ts';
import { accountExclusion } from '../leads/exclusion.ts';
import { type PlaceField, parseFields } from '../places/places.schema.ts';
import { contactKey, emailDomain, normaliseEmail } from './contact-keys.ts';
import { type AddressReading, addressReadings, type ContactReading, phoneReadings, type ResolvedContact } from './contact-query.ts';
import type { ContactHit } from './engine/contact-index.ts';
import { noCriteria } from './query/criteria.ts';
import { bad } from './resolve.ts';
import { forAccount } from './saved-searches.ts';
import type { PlacePage } from './search.reads.ts';
import { defaultPerPage, type LookupQuery } from './search.schema.ts';
import type { SearchDeps } from './search.types.ts';

/**
 * A contact read from a query (`contact-query.ts`) looked up in the engine's contact postings: which reading
 * holds (the first that finds places), the places that carry it, and how it was understood (`resolved.query`).
 */

export interface ContactMatches {
  resolved: ResolvedContact;
  /** The places carrying the contact itself, first. */
  ids: number[];
  /** Then those carrying what it implies: the places of an email's domain. */
  related: number[];
}

/** Places a contact may name at most (a chain's domain): the rest are left to the name search and filters. */
export const CONTACT_PLACES_MAX = 500;

const idsOf = (hits: ContactHit[]) => hits.slice(0, CONTACT_PLACES_MAX).map((h) => h.id);

/**
 * The places an address reading names: those at that street and number, narrowed to its postcode and city when
 * any of them is there (the city by its folded name, or as a gazetteer city of that name); all of them otherwise
 * (a city written in another language).
 */
function narrowAddress(deps: Pick<SearchDeps, 'places'>, hits: ContactHit[], reading: AddressReading): ContactHit[] {
  let out = hits;
  if (reading.postcode !== null) {
    const code = reading.postcode.replace(/\s+/g, '').toLowerCase();
    const same = out.filter((h) => h.postcode?.replace(/\s+/g, '').toLowerCase() === code);
    if (same.length > 0) out = same;
  }
  if (reading.city !== null && out.length > 1) {
    const city = foldText(reading.city);
    const ids = new Set(
      deps
        .places()
        .sameNamedCities(reading.city)
        .map((c) => c.id),
    );
    const same = out.filter((h) => (h.city !== null && foldText(h.city) === city) || (h.cityId !== null && ids.has(h.cityId)));
    if (same.length > 0) out = same;
  }
  return out;
}

/** Looks a reading up: the first of its readings that finds places, else the likeliest one with none. */
export async function matchContact(deps: Pick<SearchDeps, 'engine' | 'places'>, reading: ContactReading): Promise<ContactMatches> {
  const input = reading.input;
  switch (reading.kind) {
    case 'phone': {
      for (const e164 of reading.e164) {
        const hits = await deps.engine.contactHits([contactKey('phone', e164)]);
        if (hits.length > 0) return { resolved: { kind: 'phone', input, e164, places: hits.length }, ids: idsOf(hits), related: [] };
      }
      return { resolved: { kind: 'phone', input, e164: reading.e164[0]!, places: 0 }, ids: [], related: [] };
    }
    case 'domain': {
      const hits = await deps.engine.contactHits([contactKey('domain', reading.domain)]);
      return { resolved: { kind: 'domain', input, domain: reading.domain, places: hits.length }, ids: idsOf(hits), related: [] };
    }
    case 'email': {
      const keys = [contactKey('email', reading.email), ...(reading.domain ? [contactKey('domain', reading.domain)] : [])];
      const hits = await deps.engine.contactHits(keys);
      const exact = hits.filter((h) => h.key === keys[0]);
      const related = hits.filter((h) => h.key !== keys[0]);
      return {
        resolved: { kind: 'email', input, email: reading.email, domain: reading.domain, places: hits.length },
        ids: idsOf(exact),
        related: idsOf(related),
      };
    }
    case 'address': {
      const all = await deps.engine.contactHits([...new Set(reading.readings.map((r) => r.key))]);
      for (const r of reading.readings) {
        const hits = all.filter((h) => h.key === r.key);
        if (hits.length === 0) continue;
        const narrowed = narrowAddress(deps, hits, r);
        return { resolved: describeAddress(input, r, narrowed.length), ids: idsOf(narrowed), related: [] };
      }
      return { resolved: describeAddress(input, reading.readings[0]!, 0), ids: [], related: [] };
    }
  }
}

function describeAddress(input: string, r: AddressReading, places: number): ResolvedContact {
  return { kind: 'address', input, street: r.street, housenumber: r.housenumber, postcode: r.postcode, city: r.city, places };
}

/** The parameters of `GET /api/v2/lookup` that name a contact, in the order they are read. */
export const lookupFields = ['phone', 'domain', 'email', 'address'] as const;

/** One lookup parameter read as a contact (`readContact`'s rules, but exact: a phone needs its country or prefix). */
function readLookupField(field: (typeof lookupFields)[number], value: string, country: string | null): ContactReading {
  const at = `querystring.${field}`;
  switch (field) {
    case 'phone': {
      const e164 = phoneReadings(value, country, { everywhere: false });
      if (e164.length === 0) {
        throw bad(
          at,
          country
            ? `is not a valid phone number in ${country}`
            : 'is not a valid international phone number: give `country` for a national one',
          { examples: ['+49 89 24243702', '089 2424 3702 with country=DE'] },
        );
      }
      return { kind: 'phone', e164: e164.slice(0, 1), input: value, rest: '' };
    }
    case 'domain': {
      const domain = registrableDomain(value);
      if (!domain || value.includes('@'))
        throw bad(at, 'is not a web address or domain', { examples: ['example.de', 'https://www.example.de/'] });
      return { kind: 'domain', domain, input: value, rest: '' };
    }
    case 'email': {
      const email = normaliseEmail(value);
      if (!email) throw bad(at, 'is not an email address', { examples: ['info@example.de'] });
      return { kind: 'email', email, domain: emailDomain(email), input: value, rest: '' };
    }
    case 'address': {
      const readings = addressReadings(value);
      if (readings.length === 0)
        throw bad(at, 'needs a street and a house number', { examples: ['Promenadeplatz 12, München', '10 Downing Street, London'] });
      return { kind: 'address', readings, input: value, rest: '' };
    }
  }
}

/**
 * `GET /api/v2/lookup`: the places carrying every contact asked (a phone, domain, email, address), from the
 * engine's contact postings, as the account sees them (its suppression list applies), best first: those
 * carrying the contact itself, then, for an email, those of its domain. Not saved.
 */
export async function lookupPlaces(
  deps: SearchDeps,
  accountId: number,
  query: LookupQuery,
): Promise<{
  total: number;
  page: PlacePage;
  fields: PlaceField[];
  resolved: Partial<Record<(typeof lookupFields)[number], ResolvedContact>>;
}> {
  const given = lookupFields.filter((f) => query[f] !== undefined);
  if (given.length === 0) {
    throw new AppError('validation_failed', `Say what you know of the place: at least one of ${lookupFields.join(', ')}`, {
      errors: [
        {
          field: 'querystring',
          message: `needs at least one of ${lookupFields.join(', ')}`,
          allowed: [...lookupFields, 'country', 'per_page', 'fields'],
        },
      ],
    });
  }
  const fields = parseFields(query.fields);
  let country: string | null = null;
  if (query.country !== undefined) {
    const found = deps.places().resolveCountry(query.country);
    if (!found) throw bad('querystring.country', 'is not a known ISO 3166-1 code or country name', { see: '/api/v2/countries' });
    country = found.code;
  }
  const readings = given.map((f) => [f, readLookupField(f, query[f]!, country)] as const);
  const resolved: Partial<Record<(typeof lookupFields)[number], ResolvedContact>> = {};
  let ids: number[] | null = null;
  let related: number[] = [];
  for (const [field, reading] of readings) {
    const found = await matchContact(deps, reading);
    resolved[field] = found.resolved;
    const all = [...found.ids, ...found.related];
    // Every contact asked must be carried: an email's domain counts for the email alone.
    ids = ids === null ? found.ids : ids.filter((id) => all.includes(id));
    related = ids === found.ids ? found.related : related.filter((id) => all.includes(id));
  }
  const exclusion = await accountExclusion(deps.db, accountId, { onlyNew: false });
  const criteria = forAccount({ ...noCriteria, contact: { ids: ids ?? [], related } }, exclusion);
  const limit = query.per_page ?? defaultPerPage;
  const page =
    (ids?.length ?? 0) + related.length === 0
      ? { total: 0, rows: [], next: null }
      : await deps.engine.searchPage(criteria, 'relevance', null, limit, deps.typoCandidates);
  return { total: page.total, page, fields, resolved };
}
