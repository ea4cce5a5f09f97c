import { type AddressForm, addressForm, compareAddresses, sameStreet } from '../conflation/address.ts';
import { distanceM } from '../conflation/matcher.ts';
import { compareNames, type NameForm, nameForms } from '../conflation/names.ts';
import type { LegalForms } from './legal-forms.ts';
import type { CandidateRow } from './match.repository.ts';
import type { MatchEvidence } from './match.schema.ts';
import type { PreparedRecord } from './record.ts';
import { recordNameForms } from './record.ts';

/**
 * How much a record and a candidate place look like one business, 0–1. The name decides how high the score
 * can go; the other fields the record carries confirm it or speak against it. Every number is here and in
 * docs/matching.md ("Score"), which says why.
 */
export const scoreWeights = {
  /** Confirmation with nothing but the name. */
  base: 0.5,
  phone: { same: 0.45, different: -0.15 },
  website: { same: 0.4, different: -0.1 },
  /** `conflict`: same street, other number: the business next door. */
  address: { same: 0.4, sameStreet: 0.15, otherStreet: -0.1, conflict: -0.6 },
  /** By distance between the record's coordinates and the place: at most this many metres, this much. */
  distance: [
    { withinM: 50, weight: 0.45 },
    { withinM: 150, weight: 0.35 },
    { withinM: 400, weight: 0.2 },
    { withinM: 1000, weight: 0 },
  ],
  distanceFar: -0.4,
  /** Only for a record without coordinates: the place lies in the record's city (or within its radius). */
  city: { same: 0.35, different: -0.3 },
  /** A name within the other counts at least this much (`Müller` in `Bäckerei Müller`). */
  containedName: 0.75,
} as const;

/** A candidate place made ready for comparison. */
export interface PreparedPlace {
  row: CandidateRow;
  forms: NameForm[];
  address: AddressForm | null;
}

export function preparePlace(row: CandidateRow, legalForms: LegalForms): PreparedPlace {
  const forms = nameForms(row.name, row.names);
  for (const f of recordNameForms(row.name, row.country_code, legalForms)) if (!forms.some((g) => g.joined === f.joined)) forms.push(f);
  return { row, forms, address: addressForm(row) };
}

export interface Scored {
  score: number;
  evidence: MatchEvidence;
}

function addressEvidence(a: AddressForm | null, b: AddressForm | null): MatchEvidence['address'] {
  if (a === null || b === null || a.street.length === 0 || b.street.length === 0) return null;
  const relation = compareAddresses(a, b);
  if (relation === 'agree') return 'same';
  if (relation === 'conflict') return 'different';
  return sameStreet(a.street, b.street) ? 'same_street' : 'different';
}

/**
 * What the confirmation (the base and the fields' weights, summed) makes of the name's similarity: a curve that
 * rises steeply at first and never reaches 1, so that more agreeing fields still rank a candidate above one with
 * fewer (a chain's branch with the record's street and number above the branches of the same website).
 */
export function confirmationFactor(confirmation: number): number {
  return Math.max(0, 1 - 0.5 * Math.exp(-3 * (confirmation - scoreWeights.base)));
}

/**
 * Keys several candidates of one record share (a chain's website or central phone): they say nothing about
 * which branch the record is, so they weigh nothing (conflation's `sharedKeyMaxPlaces`, counted among the
 * record's candidates).
 */
export interface SharedKeys {
  phone: boolean;
  website: boolean;
}

export function scoreCandidate(r: PreparedRecord, p: PreparedPlace, shared: SharedKeys = { phone: false, website: false }): Scored {
  const w = scoreWeights;
  const names = compareNames(r.forms, p.forms);
  const name = names.contained ? Math.max(names.similarity, w.containedName) : names.similarity;
  let confirmation: number = w.base;

  const phone = r.phone === null || p.row.phone_e164 === null ? null : r.phone === p.row.phone_e164 ? 'same' : 'different';
  if (phone && !(phone === 'same' && shared.phone)) confirmation += w.phone[phone];
  const website = r.domain === null || p.row.website_domain === null ? null : r.domain === p.row.website_domain ? 'same' : 'different';
  if (website && !(website === 'same' && shared.website)) confirmation += w.website[website];

  const address = addressEvidence(r.address, p.address);
  if (address === 'same') confirmation += w.address.same;
  else if (address === 'same_street') confirmation += w.address.sameStreet;
  else if (address === 'different') {
    confirmation += compareAddresses(r.address, p.address) === 'conflict' ? w.address.conflict : w.address.otherStreet;
  }

  let distance: number | null = null;
  if (r.point && p.row.lat !== null && p.row.lon !== null) {
    distance = distanceM(r.point.lat, r.point.lon, p.row.lat, p.row.lon);
    confirmation += w.distance.find((d) => distance! <= d.withinM)?.weight ?? w.distanceFar;
  }
  let city: MatchEvidence['city'] = null;
  if (r.city) {
    const inCity =
      p.row.city_id === r.city.city.id ||
      (p.row.lat !== null && p.row.lon !== null && distanceM(r.city.city.lat, r.city.city.lon, p.row.lat, p.row.lon) <= r.city.radiusM);
    city = inCity ? 'same' : 'different';
    if (!r.point) confirmation += w.city[city];
  }
  const score = Math.max(0, Math.min(1, name * confirmationFactor(confirmation)));
  return {
    score,
    evidence: {
      name: round2(names.similarity),
      address,
      phone,
      website,
      city,
      distance_m: distance === null ? null : Math.round(distance),
    },
  };
}

const round2 = (x: number): number => Math.round(x * 100) / 100;
