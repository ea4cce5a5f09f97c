import { mergeSourceContacts } from '../contacts/contacts.ts';
import { contentHash, type PlaceRecord, placeColumns } from '../places/place-record.ts';

/**
 * How a place of several sources is made from its records: one group of fields at a time, each from the
 * record the group's preference picks among those that have a value (README, "Merging"). Groups keep
 * fields that belong together together (a point with the city it was placed in, a phone with its E.164
 * form, a rating with its review count), so a place never shows one source's street with another's number.
 */

/** A record of a place, as the merge reads it: its stored row (`categories` as JSON text) and its row id. */
export type MemberRecord = Omit<PlaceRecord, 'categories'> & { id: number; categories: string };

/**
 * Sources in the order of trust for what a business is and where it is (name, category, address, point):
 * OpenStreetMap first (kept by people who walk past the door), then Overture; any other source after these,
 * in the order its record joined the place.
 */
export const trustedSources: readonly string[] = ['osm', 'overture'];

type Group = 'name' | 'category' | 'location' | 'address' | 'phone' | 'website' | 'email' | 'rating' | 'opening_hours' | 'attributes';

/** The fields of each group, the field that says a record has the group, and how the record is chosen. */
export const fieldPreferences: Record<
  Group,
  { columns: readonly (keyof MemberRecord)[]; has: keyof MemberRecord; prefer: 'trust' | 'most_reviews' | 'osm' }
> = {
  name: { columns: ['name', 'names'], has: 'name', prefer: 'trust' },
  category: { columns: ['category', 'source_categories'], has: 'category', prefer: 'trust' },
  location: {
    columns: ['lat', 'lon', 'city', 'city_id', 'city_source', 'city_distance_m', 'country_code', 'region'],
    has: 'lat',
    prefer: 'trust',
  },
  address: { columns: ['street', 'housenumber', 'postcode', 'address'], has: 'address', prefer: 'trust' },
  phone: { columns: ['phone', 'phone_e164'], has: 'phone', prefer: 'trust' },
  website: { columns: ['website', 'website_domain'], has: 'website', prefer: 'trust' },
  email: { columns: ['email'], has: 'email', prefer: 'trust' },
  // The rating of the source that has the most reviews behind it.
  rating: { columns: ['rating', 'review_count'], has: 'rating', prefer: 'most_reviews' },
  // Opening hours in OpenStreetMap's syntax where OpenStreetMap has them.
  opening_hours: { columns: ['opening_hours'], has: 'opening_hours', prefer: 'osm' },
  attributes: { columns: ['attributes'], has: 'attributes', prefer: 'trust' },
};

/** Key of `names` under which a place keeps the other records' names (searchable, matched against). */
export const otherSourceNamesKey = 'also';

export interface MergedPlace {
  /** Every column of the place's row a record fills, but its public id and source id (the place keeps its own). */
  values: Omit<PlaceRecord, 'public_id' | 'source_id' | 'content_hash'>;
  /** `[{source, source_id}]`, the leading record first: what the API and exports call `sources`. */
  sources: { source: string; source_id: string }[];
  /** Field -> source, for every field that has a value. */
  fieldSources: Record<string, string>;
  /** All its sources say the business is closed. */
  closed: boolean;
}

const rank = (source: string): number => {
  const i = trustedSources.indexOf(source);
  return i === -1 ? trustedSources.length : i;
};

/** Records in the order of trust: trusted sources first, then the order they joined (row id). */
export function byTrust(records: readonly MemberRecord[]): MemberRecord[] {
  return [...records].sort((a, b) => rank(a.source) - rank(b.source) || a.id - b.id);
}

function pick(records: readonly MemberRecord[], group: Group): MemberRecord | undefined {
  const { has, prefer } = fieldPreferences[group];
  // An enriched record with a street has a one-line address (`enrichPlace` assembles it from the parts).
  const withValue = records.filter((r) => r[has] !== null && r[has] !== '');
  if (withValue.length === 0) return undefined;
  if (prefer === 'most_reviews') return [...withValue].sort((a, b) => (b.review_count ?? 0) - (a.review_count ?? 0))[0];
  if (prefer === 'osm') return withValue.find((r) => r.source === 'osm') ?? withValue[0];
  return withValue[0];
}

/** The leading record's names, and the other records' names (when they differ) under `also`. */
function mergedNames(lead: MemberRecord, others: readonly MemberRecord[]): string | null {
  const names: Record<string, unknown> = lead.names ? (JSON.parse(lead.names) as Record<string, unknown>) : {};
  const also = new Set<string>();
  for (const r of others) if (r.name !== lead.name) also.add(r.name);
  if (also.size > 0) names[otherSourceNamesKey] = [...also];
  return Object.keys(names).length > 0 ? JSON.stringify(names) : null;
}

/**
 * The place made of `records` (its records still held by their sources; at least one). Categories are the
 * union of the records' (the preferred record's first), so a search by any of them finds the place.
 */
export function mergeRecords(records: readonly MemberRecord[]): MergedPlace {
  if (records.length === 0) throw new Error('mergeRecords: no record');
  const ordered = byTrust(records);
  const lead = ordered[0]!;
  const values: Record<string, unknown> = {};
  const fieldSources: Record<string, string> = {};
  for (const group of Object.keys(fieldPreferences) as Group[]) {
    const from = pick(ordered, group);
    for (const column of fieldPreferences[group].columns) values[column] = from ? from[column] : null;
    if (from) fieldSources[group] = from.source;
  }
  const nameFrom = pick(ordered, 'name') ?? lead;
  values.names = mergedNames(
    nameFrom,
    ordered.filter((r) => r !== nameFrom),
  );
  const categories: string[] = [];
  const categoryFrom = pick(ordered, 'category');
  for (const r of categoryFrom ? [categoryFrom, ...ordered.filter((o) => o !== categoryFrom)] : ordered) {
    for (const c of JSON.parse(r.categories) as string[]) if (!categories.includes(c)) categories.push(c);
  }
  values.categories = categories;
  if (values.category === null && categories.length > 0) values.category = categories[0];
  values.source = lead.source;
  values.source_contacts = mergeSourceContacts(ordered.map((r) => r.source_contacts ?? null));
  const closed = ordered.every((r) => r.closed === 1);
  values.closed = closed ? 1 : 0;
  return {
    values: values as MergedPlace['values'],
    sources: ordered.map((r) => ({ source: r.source, source_id: r.source_id })),
    fieldSources,
    closed,
  };
}

/** The content hash of a merged place (as a record's: it changes when anything shown changes). */
export function mergedContentHash(place: MergedPlace, publicId: string, sourceId: string): string {
  return contentHash({ ...place.values, public_id: publicId, source_id: sourceId });
}

/** The record columns a merge writes, with `categories` as its JSON. */
export function mergedColumns(place: MergedPlace): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of placeColumns) {
    if (c === 'public_id' || c === 'source_id' || c === 'content_hash') continue;
    out[c] = c === 'categories' ? JSON.stringify(place.values.categories) : (place.values as Record<string, unknown>)[c];
  }
  return out;
}
