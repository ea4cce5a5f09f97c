import type { SourceContacts } from '../../contacts/contacts.ts';
import type { PlaceInput } from '../../places/place-input.ts';
import type { ReadResult } from '../importer.types.ts';

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

/**
 * Lifecycle prefixes (https://wiki.openstreetmap.org/wiki/Lifecycle_prefix): `disused:shop=bakery` is a
 * bakery no longer in business.
 */
const lifecyclePrefixes = ['disused:', 'abandoned:', 'was:', 'closed:', 'demolished:', 'removed:', 'razed:', 'destroyed:'] as const;
const lifecycleKeys = lifecyclePrefixes.flatMap((p) => poiKeys.map((k) => `${p}${k}`));
/** Keys that say the whole object is out of use. */
const disusedKeys = ['disused', 'abandoned'] as const;
/** Values of a POI key that say nothing is in business there (`shop=vacant`). */
const vacantValues: ReadonlySet<string> = new Set(['vacant', 'disused', 'closed', 'abandoned']);

/** `name:de`, `name:zh-Hant`, `name:ja_kana`; not `name:etymology:wikidata`, `name:signed`, `name:left`. */
const languageName = /^name:[a-z]{2,3}([-_][A-Za-z]{2,8})*$/;
const nameListKeys = ['alt_name', 'old_name', 'official_name', 'int_name', 'short_name', 'loc_name'] as const;
const phoneKeys = ['phone', 'contact:phone', 'mobile', 'contact:mobile'] as const;
const websiteKeys = ['website', 'contact:website', 'url'] as const;
const emailKeys = ['email', 'contact:email'] as const;
/** Tags kept as attributes: what a lead list filters or shows beside name and contact. */
const attributeKeys = [
  'cuisine',
  'brand',
  'brand:wikidata',
  'operator',
  'wheelchair',
  'diet:vegetarian',
  'diet:vegan',
  'outdoor_seating',
  'takeaway',
  'delivery',
  'internet_access',
  'payment:cards',
  'stars',
  'wikidata',
  'facebook',
  'contact:facebook',
  'instagram',
  'contact:instagram',
  'level',
  'check_date',
] as const;

/** Social profile tags beyond those kept as attributes (`facebook`, `instagram` and their `contact:` forms). */
const socialKeys = [
  'contact:linkedin',
  'linkedin',
  'contact:twitter',
  'twitter',
  'contact:x',
  'contact:youtube',
  'youtube',
  'contact:tiktok',
  'tiktok',
] as const;

const addressKeys = [
  'addr:street',
  'addr:place',
  'addr:housenumber',
  'addr:postcode',
  'addr:full',
  'addr:city',
  'addr:province',
  'addr:state',
  'addr:country',
  'opening_hours',
] as const;

/**
 * Every key read below besides `name` and `name:xx`, each with a slot of its own in `slots`: one pass over
 * an object's tags files each value in its slot (one Map look-up a tag), and the mapping then reads the
 * slots by position. Looking up the ~50 keys read here on the tag object itself, or on a Map of its tags,
 * costs more than the rest of the mapping: most are absent, and every object has a shape of its own.
 */
const readKeys = [
  ...nameListKeys,
  ...poiKeys,
  ...attributeKeys,
  ...phoneKeys,
  ...websiteKeys,
  ...emailKeys,
  ...socialKeys,
  ...addressKeys,
  ...disusedKeys,
] as const;
type ReadKey = (typeof readKeys)[number];
/** Lifecycle-prefixed POI keys have slots too (after `readKeys`): only whether one is present matters. */
const lifecycleSlotsFrom = readKeys.length;
const slotOf: ReadonlyMap<string, number> = new Map([...readKeys, ...lifecycleKeys].map((key, i) => [key, i]));
const at = (key: ReadKey): number => slotOf.get(key)!;
const slotsOf = (keys: readonly ReadKey[]): number[] => keys.map(at);
const nameListSlots = slotsOf(nameListKeys);
const poiSlots = slotsOf(poiKeys);
const attributeSlots = slotsOf(attributeKeys);
const phoneSlots = slotsOf(phoneKeys);
const websiteSlots = slotsOf(websiteKeys);
const emailSlots = slotsOf(emailKeys);
const disusedSlots = slotsOf(disusedKeys);
/** Each network's tags, `contact:` form first (the networks' names are those of `PlaceInput.contacts` socials). */
const socialSlots: ReadonlyArray<[string, number[]]> = [
  ['facebook', slotsOf(['contact:facebook', 'facebook'])],
  ['instagram', slotsOf(['contact:instagram', 'instagram'])],
  ['linkedin', slotsOf(['contact:linkedin', 'linkedin'])],
  ['x', slotsOf(['contact:twitter', 'twitter', 'contact:x'])],
  ['youtube', slotsOf(['contact:youtube', 'youtube'])],
  ['tiktok', slotsOf(['contact:tiktok', 'tiktok'])],
];
const [streetSlot, placeSlot, housenumberSlot, postcodeSlot, fullSlot, citySlot, provinceSlot, stateSlot, countrySlot, hoursSlot] = slotsOf(
  addressKeys,
) as [number, number, number, number, number, number, number, number, number, number];

/** One object's values by slot; reused object after object (every filled slot is emptied again after use). */
const slots: Array<string | undefined> = new Array<string | undefined>(slotOf.size).fill(undefined);
/** The slots filled for the current object. */
const filled: number[] = [];

/** First non-blank value among the slots; OSM separates several values with `;`, the first is taken. */
function first(of: readonly number[]): string | null {
  for (const slot of of) {
    const value = slots[slot];
    if (value === undefined) continue;
    const head = value.split(';')[0]!.trim();
    if (head !== '') return head;
  }
  return null;
}

/** Every value among the slots (`;`-separated values split). */
function all(of: readonly number[], into: string[], spell: (v: string) => string = (v) => v): void {
  for (const slot of of) {
    const value = slots[slot];
    if (value === undefined) continue;
    for (const part of value.split(';')) {
      const v = part.trim();
      if (v !== '') into.push(spell(v));
    }
  }
}

/**
 * The current object's full contact lists (`PlaceInput.contacts`): every phone and email value, and the
 * social tags, a bare handle spelled `network:handle`. Undefined when it has no more than the first
 * phone and email (those are `phone` and `email`): most objects.
 */
function contactsBySlots(): SourceContacts | undefined {
  const phones: string[] = [];
  const emails: string[] = [];
  const socials: string[] = [];
  all(phoneSlots, phones);
  all(emailSlots, emails);
  for (const [network, of] of socialSlots)
    all(of, socials, (v) => (/^https?:\/\//i.test(v) || v.includes('/') ? v : `${network}:${v.replace(/^@/, '')}`));
  if (phones.length <= 1 && emails.length <= 1 && socials.length === 0) return undefined;
  return { phones, emails, websites: [], socials };
}

/**
 * Whether the current object's tags (in `slots`) say the business is closed: `disused=yes`/`abandoned=yes`,
 * every POI key `vacant` (`shop=vacant`), or business keys only under a lifecycle prefix
 * (`disused:shop=bakery`, `was:amenity=cafe`) and no live one. A live POI key beside a prefixed one
 * (`amenity=restaurant` + `disused:amenity=cafe`) is an open business with a former use. The `.osm.pbf`
 * reader only decodes objects with a live POI key (as `osmium tags-filter` counts them), so the last case
 * reaches the import from NDJSON only; a place whose key moved under a prefix in a newer extract drops
 * out of it and is retired by its dataset's re-import.
 */
function closedBySlots(): boolean {
  for (const slot of disusedSlots) if (slots[slot] === 'yes') return true;
  let live = 0;
  let vacant = 0;
  for (const slot of poiSlots) {
    const value = slots[slot];
    if (value === undefined) continue;
    live++;
    if (vacantValues.has(value)) vacant++;
  }
  if (live > 0) return vacant === live;
  for (const slot of filled) if (slot >= lifecycleSlotsFrom) return true;
  return false;
}

/** The name a place is listed under: the `name` tag, trimmed; undefined when blank (the object is skipped). */
export function placeName(tags: Record<string, string>): string | undefined {
  return tags.name?.trim() || undefined;
}

/**
 * One OSM object (`n123`, `w45`, `r6` with its tags and representative point) as a PlaceInput.
 * Shared by the `.osm.pbf` and the flattened NDJSON readers so both give identical rows.
 * A place needs a `name` tag: brand-only or `name:xx`-only objects are skipped (`no name`), which keeps
 * the import count equal to `osmium tags-filter … nwr/name` and avoids listing chain outlets under the
 * chain's name alone. An object whose point could not be computed is skipped (`no location`).
 */
export function osmObjectToPlace(sourceId: string, tags: Record<string, string>, lat: number | null, lon: number | null): ReadResult {
  const name = placeName(tags);
  if (!name) return { ok: false, reason: 'no name' };
  if (lat === null || lon === null) return { ok: false, reason: 'no location' };

  const names: Record<string, string | string[]> = {};
  for (const key in tags) {
    const slot = slotOf.get(key);
    if (slot !== undefined) {
      slots[slot] = tags[key]!;
      filled.push(slot);
    } else if (key.startsWith('name:') && languageName.test(key)) {
      names[key.slice(5)] = tags[key]!;
    }
  }
  try {
    for (let i = 0; i < nameListSlots.length; i++) {
      const value = slots[nameListSlots[i]!];
      if (value !== undefined)
        names[nameListKeys[i]!.replace(/_name$/, '')] = value
          .split(';')
          .map((v) => v.trim())
          .filter(Boolean);
    }

    const sourceCategories: string[] = [];
    for (let i = 0; i < poiSlots.length; i++) {
      const value = slots[poiSlots[i]!];
      if (value !== undefined) sourceCategories.push(`${poiKeys[i]}=${value}`);
    }

    const attributes: Record<string, string> = {};
    for (let i = 0; i < attributeSlots.length; i++) {
      const value = slots[attributeSlots[i]!];
      if (value !== undefined) attributes[attributeKeys[i]!] = value;
    }

    const place: PlaceInput = {
      sourceId,
      name,
      names,
      sourceCategories,
      osmTags: tags,
      phone: first(phoneSlots),
      website: first(websiteSlots),
      email: first(emailSlots),
      street: slots[streetSlot] ?? slots[placeSlot] ?? null,
      housenumber: slots[housenumberSlot] ?? null,
      postcode: slots[postcodeSlot] ?? null,
      address: slots[fullSlot] ?? null,
      city: slots[citySlot] ?? null,
      region: slots[provinceSlot] ?? slots[stateSlot] ?? null,
      countryCode: slots[countrySlot] ?? null,
      lat,
      lon,
      openingHours: slots[hoursSlot] ?? null,
      attributes,
      contacts: contactsBySlots(),
      closed: closedBySlots(),
    };
    return { ok: true, place };
  } finally {
    for (const slot of filled) slots[slot] = undefined;
    filled.length = 0;
  }
}
