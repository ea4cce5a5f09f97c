import { foldText } from '../../infra/text.ts';
import { contactKey } from './contact-keys.ts';
import type { AddressReading, ContactReading } from './contact-query.ts';
import type { ContactHit } from './engine/contact-index.ts';
import type { SearchDeps } from './search.types.ts';

/**
 * A contact read from a query (`contact-query.ts`) looked up in the engine's contact postings: which reading
 * holds (the first that finds places), the places that carry it, and how it was understood (`resolved.query`).
 */

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
    const ids = new Set(deps.places().sameNamedCities(reading.city).map((c) => c.id));
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
