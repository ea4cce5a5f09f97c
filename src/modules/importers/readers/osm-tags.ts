import type { PlaceInput, ReadResult } from '../importer.types.ts';

/**
 * What makes an OpenStreetMap object a place of business for LeadAtlas: one of these keys, as in
 * `osmium tags-filter FILE nwr/amenity,shop,craft,office,tourism,leisure,healthcare`.
 */
export const poiKeys = ['amenity', 'shop', 'craft', 'office', 'tourism', 'leisure', 'healthcare'] as const;

export function isPoi(tags: Record<string, string> | undefined): tags is Record<string, string> {
  if (!tags) return false;
  for (const key of poiKeys) if (tags[key] !== undefined) return true;
  return false;
}

/** `name:de`, `name:zh-Hant`, `name:ja_kana`; not `name:etymology:wikidata`, `name:signed`, `name:left`. */
const languageName = /^name:[a-z]{2,3}([-_][A-Za-z]{2,8})*$/;
const nameListKeys = ['alt_name', 'old_name', 'official_name', 'int_name', 'short_name', 'loc_name'] as const;
const phoneKeys = ['phone', 'contact:phone', 'mobile', 'contact:mobile'] as const;
const websiteKeys = ['website', 'contact:website', 'url'] as const;
const emailKeys = ['email', 'contact:email'] as const;
/** Tags kept as attributes: what a lead list filters or shows beside name and contact. */
const attributeKeys = [
  'cuisine', 'brand', 'brand:wikidata', 'operator', 'wheelchair', 'diet:vegetarian', 'diet:vegan',
  'outdoor_seating', 'takeaway', 'delivery', 'internet_access', 'payment:cards', 'stars', 'wikidata',
  'facebook', 'contact:facebook', 'instagram', 'contact:instagram', 'level', 'check_date',
] as const;

/** First non-blank value among `keys`; OSM separates several values with `;`, the first is taken. */
function first(tags: Record<string, string>, keys: readonly string[]): string | null {
  for (const key of keys) {
    const value = tags[key];
    if (value === undefined) continue;
    const head = value.split(';')[0]!.trim();
    if (head !== '') return head;
  }
  return null;
}

/**
 * One OSM object (`n123`, `w45`, `r6` with its tags and representative point) as a PlaceInput.
 * Shared by the `.osm.pbf` and the flattened NDJSON readers so both give identical rows.
 * A place needs a `name` tag: brand-only or `name:xx`-only objects are skipped (`no name`), which keeps
 * the import count equal to `osmium tags-filter … nwr/name` and avoids listing chain outlets under the
 * chain's name alone. An object whose point could not be computed is skipped (`no location`).
 */
export function osmObjectToPlace(sourceId: string, tags: Record<string, string>, lat: number | null, lon: number | null): ReadResult {
  const name = tags.name?.trim();
  if (!name) return { ok: false, reason: 'no name' };
  if (lat === null || lon === null) return { ok: false, reason: 'no location' };

  const names: Record<string, string | string[]> = {};
  for (const key in tags) {
    if (languageName.test(key)) names[key.slice(5)] = tags[key]!;
  }
  for (const key of nameListKeys) {
    const value = tags[key];
    if (value !== undefined) names[key.replace(/_name$/, '')] = value.split(';').map((v) => v.trim()).filter(Boolean);
  }

  const sourceCategories: string[] = [];
  for (const key of poiKeys) {
    const value = tags[key];
    if (value !== undefined) sourceCategories.push(`${key}=${value}`);
  }

  const attributes: Record<string, string> = {};
  for (const key of attributeKeys) {
    const value = tags[key];
    if (value !== undefined) attributes[key] = value;
  }

  const place: PlaceInput = {
    sourceId,
    name,
    names,
    sourceCategories,
    osmTags: tags,
    phone: first(tags, phoneKeys),
    website: first(tags, websiteKeys),
    email: first(tags, emailKeys),
    street: tags['addr:street'] ?? tags['addr:place'] ?? null,
    housenumber: tags['addr:housenumber'] ?? null,
    postcode: tags['addr:postcode'] ?? null,
    address: tags['addr:full'] ?? null,
    city: tags['addr:city'] ?? null,
    region: tags['addr:province'] ?? tags['addr:state'] ?? null,
    countryCode: tags['addr:country'] ?? null,
    lat,
    lon,
    openingHours: tags.opening_hours ?? null,
    attributes,
  };
  return { ok: true, place };
}
