import type { PlaceRecord } from '../places/place-record.ts';
import { type AddressForm, type AddressRelation, addressForm, compareAddresses } from './address.ts';
import { type CategoryFacts, type PlaceSize, recordCategoryFacts, sizeOf } from './kinds.ts';
import { compareNames, type NameForm, nameForms } from './names.ts';
import { matchRules } from './rules.ts';

/**
 * Whether two records of different sources describe the same business. Rules, thresholds and their reasons:
 * README.md beside this file; every number is in `rules.ts`.
 */

/** The fields of an enriched record (`enrichPlace`) the matcher reads. */
export type MatchRecord = Pick<
  PlaceRecord,
  | 'source'
  | 'name'
  | 'names'
  | 'category'
  | 'categories'
  | 'phone_e164'
  | 'website_domain'
  | 'lat'
  | 'lon'
  | 'street'
  | 'housenumber'
  | 'address'
>;

/**
 * What the catalog knows beyond the two records. An import passes counts so that a phone or a domain many
 * places share (a chain's website, a group's switchboard) is not taken for the mark of one business.
 */
export interface MatchContext {
  placesWithPhone?(phoneE164: string): number;
  placesWithDomain?(domain: string): number;
}

/** The rule that decided. */
export type MatchRule =
  | 'phone'
  | 'domain'
  | 'name'
  | 'name_and_address'
  | 'phone_name_and_address'
  | 'same_source'
  | 'no_position'
  | 'category_conflict'
  | 'address_conflict'
  | 'names_differ'
  | 'not_enough'
  | 'too_far';

export interface MatchDecision {
  match: boolean;
  rule: MatchRule;
  /** 0–1, to rank several candidates of one record (the best match wins); the decision itself is the rule's. */
  score: number;
  distanceM: number | null;
  /** The evidence seen, in words: `same phone`, `names the same (0.92)`, `address conflict`… */
  reasons: string[];
}

interface Prepared {
  names: NameForm[];
  address: AddressForm | null;
  facts: CategoryFacts[];
  size: PlaceSize;
}

const preparedRecords = new WeakMap<MatchRecord, Prepared>();

/** The derived forms of a record, computed once per record object (an import compares one record with several candidates). */
function prepared(r: MatchRecord): Prepared {
  let p = preparedRecords.get(r);
  if (!p) {
    const facts = recordCategoryFacts(r.categories, r.category);
    p = { names: nameForms(r.name, r.names), address: addressForm(r), facts, size: sizeOf(facts) };
    preparedRecords.set(r, p);
  }
  return p;
}

const EARTH_RADIUS_M = 6_371_008.8;
const RAD = Math.PI / 180;

/** Great-circle (haversine) distance in metres. */
export function distanceM(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const dLat = (lat2 - lat1) * RAD;
  const dLon = (lon2 - lon1) * RAD;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(lat1 * RAD) * Math.cos(lat2 * RAD) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** Families in common, or no categories known on one side: compatible. */
function categoriesCompatible(a: readonly CategoryFacts[], b: readonly CategoryFacts[]): boolean {
  if (a.length === 0 || b.length === 0) return true;
  return a.some((x) => b.some((y) => x.family === y.family));
}

const sameTag = (a: readonly CategoryFacts[], b: readonly CategoryFacts[]): boolean => a.some((x) => b.some((y) => x.tag === y.tag));

/** A phone or domain both records carry, unless the context says too many places carry it. */
function sharedKey(a: string | null, b: string | null, count: ((key: string) => number) | undefined): 'same' | 'shared' | null {
  if (a === null || b === null || a !== b) return null;
  return count && count(a) > matchRules.sharedKeyMaxPlaces ? 'shared' : 'same';
}

export function matchPlaces(a: MatchRecord, b: MatchRecord, context: MatchContext = {}): MatchDecision {
  const reasons: string[] = [];
  if (a.source === b.source) return { match: false, rule: 'same_source', score: 0, distanceM: null, reasons: ['same source'] };
  if (a.lat === null || a.lon === null || b.lat === null || b.lon === null) {
    return { match: false, rule: 'no_position', score: 0, distanceM: null, reasons: ['a record has no position'] };
  }
  const pa = prepared(a);
  const pb = prepared(b);
  const d = distanceM(a.lat, a.lon, b.lat, b.lon);
  reasons.push(`${Math.round(d)} m apart`);
  const radius = Math.max(matchRules.radiusM[pa.size], matchRules.radiusM[pb.size]);

  const names = compareNames(pa.names, pb.names);
  const nameRelation = names.similarity >= matchRules.sameNameMin ? 'same' : names.contained ? 'contained' : 'different';
  reasons.push(
    nameRelation === 'same'
      ? `names the same (${names.similarity.toFixed(2)})`
      : nameRelation === 'contained'
        ? `one name within the other (${names.similarity.toFixed(2)})`
        : `names differ (${names.similarity.toFixed(2)})`,
  );
  const phone = sharedKey(a.phone_e164, b.phone_e164, context.placesWithPhone);
  if (phone) reasons.push(phone === 'same' ? 'same phone' : 'same phone, shared by many places');
  const domain = sharedKey(a.website_domain, b.website_domain, context.placesWithDomain);
  if (domain) reasons.push(domain === 'same' ? 'same website domain' : 'same website domain, shared by many places');
  const address: AddressRelation = compareAddresses(pa.address, pb.address);
  if (address !== 'unknown') reasons.push(address === 'agree' ? 'same street and number' : 'same street, other number');
  const compatible = categoriesCompatible(pa.facts, pb.facts);
  if (!compatible) reasons.push('categories of different families');

  const proximity = Math.max(0, 1 - d / (radius * matchRules.addressAgreeRadiusFactor));
  const w = matchRules.scoreWeights;
  const nameScore = nameRelation === 'contained' ? Math.max(names.similarity, 0.75) : names.similarity;
  const score = Math.min(
    1,
    Math.max(
      0,
      w.name * nameScore +
        (phone === 'same' ? w.phone : 0) +
        (domain === 'same' ? w.domain : 0) +
        (address === 'agree' ? w.address : address === 'conflict' ? -w.address : 0) +
        w.proximity * proximity,
    ),
  );
  const decide = (match: boolean, rule: MatchRule): MatchDecision => ({ match, rule, score, distanceM: d, reasons });

  // Vetoes: evidence that the records are two places, whatever else agrees.
  if (!compatible) return decide(false, 'category_conflict');
  if (address === 'conflict') return decide(false, 'address_conflict');
  if (nameRelation === 'different') return decide(false, 'names_differ');

  if (phone === 'same' && d <= matchRules.phoneMaxDistanceM) return decide(true, 'phone');
  if (domain === 'same' && d <= matchRules.domainMaxDistanceM) return decide(true, 'domain');
  if (nameRelation === 'same' && d <= radius) return decide(true, 'name');
  if (
    address === 'agree' &&
    d <= radius * matchRules.addressAgreeRadiusFactor &&
    (nameRelation === 'same' || sameTag(pa.facts, pb.facts))
  ) {
    return decide(true, 'name_and_address');
  }
  if (phone === 'same' && nameRelation === 'same' && address === 'agree' && d <= matchRules.allAgreeMaxDistanceM) {
    return decide(true, 'phone_name_and_address');
  }
  // A name within the other, near but with nothing else in common (`Café de Paris` and `Le Louis XV - Alain
  // Ducasse à l'Hôtel de Paris`): not enough.
  return decide(false, nameRelation === 'contained' && d <= radius ? 'not_enough' : 'too_far');
}
