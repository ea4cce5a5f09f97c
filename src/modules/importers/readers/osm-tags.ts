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
function first(tags: ReadonlyMap<string, string>, keys: readonly string[]): string | null {
  for (const key of keys) {
    const value = tags.get(key);
    if (value === undefined) continue;
    const head = value.split(';')[0]!.trim();
    if (head !== '') return head;
  }
  return null;
}

const addressKeys = [
  'addr:street', 'addr:place', 'addr:housenumber', 'addr:postcode', 'addr:full', 'addr:city', 'addr:province', 'addr:state',
  'addr:country', 'opening_hours',
] as const;
/** Every key read below besides `name` and `name:xx`. */
const readKeys: ReadonlySet<string> = new Set([...nameListKeys, ...poiKeys, ...attributeKeys, ...phoneKeys, ...websiteKeys, ...emailKeys, ...addressKeys]);

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

  // One pass over the object's own tags. Looking up the ~45 keys read here on the tag object itself
  // costs more than the rest of the mapping: most are absent, and every object has a shape of its own.
  const names: Record<string, string | string[]> = {};
  const found = new Map<string, string>();
  for (const key in tags) {
    if (key.startsWith('name:')) {
      if (languageName.test(key)) names[key.slice(5)] = tags[key]!;
    } else if (readKeys.has(key)) {
      found.set(key, tags[key]!);
    }
  }
  for (const key of nameListKeys) {
    const value = found.get(key);
    if (value !== undefined) names[key.replace(/_name$/, '')] = value.split(';').map((v) => v.trim()).filter(Boolean);
  }

  const sourceCategories: string[] = [];
  for (const key of poiKeys) {
    const value = found.get(key);
    if (value !== undefined) sourceCategories.push(`${key}=${value}`);
  }

  const attributes: Record<string, string> = {};
  for (const key of attributeKeys) {
    const value = found.get(key);
    if (value !== undefined) attributes[key] = value;
  }

  const place: PlaceInput = {
    sourceId,
    name,
    names,
    sourceCategories,
    osmTags: tags,
    phone: first(found, phoneKeys),
    website: first(found, websiteKeys),
    email: first(found, emailKeys),
    street: found.get('addr:street') ?? found.get('addr:place') ?? null,
    housenumber: found.get('addr:housenumber') ?? null,
    postcode: found.get('addr:postcode') ?? null,
    address: found.get('addr:full') ?? null,
    city: found.get('addr:city') ?? null,
    region: found.get('addr:province') ?? found.get('addr:state') ?? null,
    countryCode: found.get('addr:country') ?? null,
    lat,
    lon,
    openingHours: found.get('opening_hours') ?? null,
    attributes,
  };
  return { ok: true, place };
}
