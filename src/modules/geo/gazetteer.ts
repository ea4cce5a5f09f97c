import KDBush from 'kdbush';
import { foldText } from '../../infra/text.ts';
import { CountryBorders } from './borders.ts';
import { BIG_CITY_POPULATION, buildGazetteerData, type GazetteerData, gazetteerCodec, keyHash, start } from './gazetteer-data.ts';
import { type CityRow, type CountryRow, cachedRows, loadCityRows, loadCountryRows } from './geo.data.ts';
import type { CityAssignment, PlaceLocator } from './geo.types.ts';
import { closeNames, indexNamesByLength, type NamesByLength } from './name-distance.ts';

/** A GeoNames populated place, as the API and importers see it: a city row without its matching data. */
export type City = Omit<CityRow, 'featureCode' | 'names'>;

export interface Country {
  code: string;
  name: string;
  nativeName: string | null;
  continent: string | null;
}

export interface CitySuggestion {
  /** The name that came close, as folded (`munchen`). */
  name: string;
  city: City;
}

export interface CityResolution {
  /** The most populous city of that name (within the country when one was given); null when none. */
  chosen: City | null;
  /** Other cities of that name: the country's first, then by population; at most 10. */
  alternatives: City[];
  /** When nothing has that name (in the country): the closest spellings, fewest edits first, then by population. */
  candidates: CitySuggestion[];
}

/**
 * Max great-circle distance from a place to a city's point for `nearest` assignment. GeoNames lists every
 * place of 1,000+ people, so on land a town's point is almost always within 10–20 km; 50 km keeps
 * coastal and rural places, and leaves points at sea or in empty land (deserts, ice) without a city.
 */
export const NEAREST_MAX_KM = 50;

/**
 * How far a city is taken to reach from its point: 6 m × √population, at most 20 km (Munich ≈ 6.7 km,
 * a village of 1,000 ≈ 190 m). `nearest` picks the city with the smallest distance minus reach, so a
 * point in a big city's outer districts gets the city, not the closest village point or district point.
 */
const REACH_M_PER_SQRT_PERSON = 6;
const MAX_REACH_M = 20_000;
/** First search box for `nearest`; cities of BIG_CITY_POPULATION or more are searched in their own index. */
const NEAR_BOX_KM = 10;
const KM_PER_DEGREE = 111.32;
const ADDRESS_CACHE_SIZE = 50_000;
const MIN_CONTAINED_NAME = 4;

const reach = (population: number): number => Math.min(MAX_REACH_M, REACH_M_PER_SQRT_PERSON * Math.sqrt(population));

/** Great-circle distance as geokdbush's `distance` computes it, step for step (so results are identical), in metres. */
const EARTH_RADIUS_KM = 6371;
const RAD = Math.PI / 180;
const haverSin = (theta: number): number => {
  const s = Math.sin(theta / 2);
  return s * s;
};

/**
 * Countries by ISO code, and folded code or name -> ISO code in tiers: codes first (ISO2 then ISO3 of every
 * country), then each country's English, native and alias names, then names in other languages, so `de`
 * is Germany, never a name. Shared by the gazetteer and the SQL place-name resolver.
 */
export function countryLookup(countryRows: readonly CountryRow[]): { countries: Map<string, Country>; names: Map<string, string> } {
  const countries = new Map<string, Country>();
  const names = new Map<string, string>();
  for (const c of countryRows) countries.set(c.code, { code: c.code, name: c.name, nativeName: c.nativeName, continent: c.continent });
  for (const c of countryRows) names.set(c.code.toLowerCase(), c.code);
  for (const c of countryRows) if (c.alpha3 && !names.has(c.alpha3.toLowerCase())) names.set(c.alpha3.toLowerCase(), c.code);
  for (const tier of ['names', 'otherNames'] as const) {
    for (const c of countryRows) for (const n of c[tier]) if (!names.has(n)) names.set(n, c.code);
  }
  return { countries, names };
}

/**
 * The in-memory gazetteer: countries by any name, cities by folded name (GeoNames names, ASCII names and
 * exonyms), and kd-trees of city points for the nearest populated place. Built once per process.
 */
export class Gazetteer implements PlaceLocator {
  private readonly d: GazetteerData;
  /** Country code -> index in `d.countryCodes` (-1: no city there). */
  private readonly countryIndex = new Map<string, number>();
  /** cos(latitude) of each city, as the distance formula needs it. */
  private readonly cosLat: Float64Array;
  /** Distinct folded names by length with their letter masks, for suggestions; built on first use (importers never need it). */
  private namesByLengthIndex: NamesByLength | undefined;
  private readonly nearIndex: KDBush;
  private readonly bigIndex: KDBush;
  private readonly countries: Map<string, Country>;
  /** Folded code or name -> ISO code (see `countryLookup`). */
  private readonly countryNames: Map<string, string>;
  private readonly countryLookups = new Map<string, string | undefined>();
  private readonly addressLookups = new Map<string, number[]>();
  private readonly borders = new CountryBorders((code) => this.countries.has(code));

  constructor(countryRows: CountryRow[], data: GazetteerData) {
    ({ countries: this.countries, names: this.countryNames } = countryLookup(countryRows));
    this.d = data;
    data.countryCodes.forEach((code, i) => this.countryIndex.set(code, i));
    this.cosLat = data.lat.map((lat) => Math.cos(lat * RAD));
    this.nearIndex = KDBush.from(data.near);
    this.bigIndex = KDBush.from(data.big);
  }

  /** Index of a country code among the cities' countries; -1 when no city has it; undefined for no country. */
  private countryFilter(countryCode: string | null | undefined): number | undefined {
    return countryCode ? (this.countryIndex.get(countryCode) ?? -1) : undefined;
  }

  private countryOf(i: number): string {
    return this.d.countryCodes[this.d.country[i]!]!;
  }

  private toCity(i: number): City {
    const d = this.d;
    return {
      id: d.id[i]!,
      name: d.names.slice(start(d.nameEnd, i), d.nameEnd[i]),
      countryCode: this.countryOf(i),
      admin1: d.noAdmin1[i] ? null : d.admin1.slice(start(d.admin1End, i), d.admin1End[i]),
      lat: d.lat[i]!,
      lon: d.lon[i]!,
      population: d.population[i]!,
    };
  }

  private cityName(i: number): string {
    return this.d.names.slice(start(this.d.nameEnd, i), this.d.nameEnd[i]);
  }

  /** Index of a folded name, or -1. */
  private keyOf(key: string): number {
    const { keys, keyEnd, keySlots } = this.d;
    const mask = keySlots.length - 1;
    for (let slot = keyHash(key) & mask; ; slot = (slot + 1) & mask) {
      const k = keySlots[slot]! - 1;
      if (k < 0) return -1;
      const from = start(keyEnd, k);
      if (keyEnd[k]! - from === key.length && keys.startsWith(key, from)) return k;
    }
  }

  private keyName(k: number): string {
    return this.d.keys.slice(start(this.d.keyEnd, k), this.d.keyEnd[k]);
  }

  /** Cities named `key` (folded), most populous first; within the country `filter` stands for when given. */
  private citiesNamed(key: string, filter?: number): number[] {
    const k = this.keyOf(key);
    if (k < 0) return [];
    const { keyCities, keyCitiesEnd, country } = this.d;
    const out: number[] = [];
    for (let j = start(keyCitiesEnd, k); j < keyCitiesEnd[k]!; j++) {
      const i = keyCities[j]!;
      if (filter === undefined || country[i] === filter) out.push(i);
    }
    return out;
  }

  countryCode(codeOrName: string): string | undefined {
    const cached = this.countryLookups.get(codeOrName);
    if (cached !== undefined || this.countryLookups.has(codeOrName)) return cached;
    const code = this.countryNames.get(foldText(codeOrName));
    if (this.countryLookups.size < 10_000) this.countryLookups.set(codeOrName, code);
    return code;
  }

  /** A country by ISO2/ISO3 code or by a name in any language the data has; null when unknown. */
  resolveCountry(nameOrCode: string): Country | null {
    const code = this.countryCode(nameOrCode);
    return code ? (this.countries.get(code) ?? null) : null;
  }

  /** Every known country, by code. */
  listCountries(): Country[] {
    return [...this.countries.values()];
  }

  city(id: number): City | null {
    const { byId, id: ids } = this.d;
    let lo = 0;
    let hi = byId.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = ids[byId[mid]!]!;
      if (v < id) lo = mid + 1;
      else if (v > id) hi = mid - 1;
      else return this.toCity(byId[mid]!);
    }
    return null;
  }

  /** Cities of a name in the order `resolveCity` chooses among them, within the country when one is given; and all of them. */
  private cityChoices(
    name: string,
    countryCodeOrName?: string | null,
  ): { key: string; country: string | null; c: number | undefined; all: number[]; inCountry: number[] } {
    const key = foldText(name);
    const country = countryCodeOrName ? (this.countryCode(countryCodeOrName) ?? countryCodeOrName.toUpperCase()) : null;
    const all = this.citiesNamed(key);
    const c = this.countryFilter(country);
    // A name that is also a country's (Monaco, Singapore, Luxembourg) means that country's city, even
    // when a bigger city elsewhere carries it as an exonym (München is Monaco in Italian).
    const namesCountry = !country && key.length > 3 ? this.countryFilter(this.countryCode(name)) : undefined;
    const inCountry =
      c !== undefined
        ? all.filter((i) => this.d.country[i] === c)
        : namesCountry !== undefined
          ? [...all.filter((i) => this.d.country[i] === namesCountry), ...all.filter((i) => this.d.country[i] !== namesCountry)]
          : all;
    return { key, country, c, all, inCountry };
  }

  /** Every city a `city=` name may mean, the chosen one first, as `resolveCity` orders them (within the country when given), without a limit. */
  sameNamedCities(name: string, countryCodeOrName?: string | null): City[] {
    return this.cityChoices(name, countryCodeOrName).inCountry.map((i) => this.toCity(i));
  }

  resolveCity(name: string, countryCodeOrName?: string | null): CityResolution {
    const { key, country, c, all, inCountry } = this.cityChoices(name, countryCodeOrName);
    const chosen = inCountry[0];
    const rest = [...inCountry.slice(1), ...(c !== undefined ? all.filter((i) => this.d.country[i] !== c) : [])];
    return {
      chosen: chosen === undefined ? null : this.toCity(chosen),
      alternatives: rest.slice(0, 10).map((i) => this.toCity(i)),
      candidates: chosen === undefined && key.length > 0 ? this.suggest(key, country) : [],
    };
  }

  private get namesByLength(): NamesByLength {
    this.namesByLengthIndex ??= indexNamesByLength(Array.from({ length: this.d.keyEnd.length }, (_, k) => this.keyName(k)));
    return this.namesByLengthIndex;
  }

  /** Closest known spellings of an unknown name (see `closeNames`), one per city, fewest edits first. */
  private suggest(key: string, country: string | null, limit = 5): CitySuggestion[] {
    const found: Array<{ name: string; city: number; edits: number }> = [];
    const filter = this.countryFilter(country);
    for (const { name, edits } of closeNames(this.namesByLength, key)) {
      const city = this.citiesNamed(name, filter)[0];
      if (city !== undefined) found.push({ name, city, edits });
    }
    found.sort((a, b) => a.edits - b.edits || a.city - b.city);
    const seen = new Set<number>();
    const out: CitySuggestion[] = [];
    for (const f of found) {
      if (seen.has(f.city)) continue;
      seen.add(f.city);
      out.push({ name: f.name, city: this.toCity(f.city) });
      if (out.length === limit) break;
    }
    return out;
  }

  /**
   * Index of the city with the smallest distance-minus-reach among `members` (the first `count` of them),
   * with its distance in metres. The distance is geokdbush's great-circle formula with each city's cos(lat)
   * computed once instead of on every call.
   */
  private best(
    members: ArrayLike<number>,
    count: number,
    lat: number,
    lon: number,
    maxKm: number,
  ): { city: number; metres: number; score: number } | null {
    const { lat: lats, lon: lons, population } = this.d;
    const cosLat = Math.cos(lat * RAD);
    const maxMetres = maxKm * 1000;
    let bestCity = -1;
    let bestScore = Infinity;
    let bestMetres = 0;
    for (let k = 0; k < count; k++) {
      const i = members[k]!;
      const h = cosLat * this.cosLat[i]! * haverSin((lon - lons[i]!) * RAD) + haverSin((lat - lats[i]!) * RAD);
      const metres = 2 * EARTH_RADIUS_KM * Math.asin(Math.sqrt(h)) * 1000;
      if (metres > maxMetres) continue;
      const score = metres - reach(population[i]!);
      if (score < bestScore) {
        bestScore = score;
        bestCity = i;
        bestMetres = metres;
      }
    }
    return bestCity < 0 ? null : { city: bestCity, metres: bestMetres, score: bestScore };
  }

  /** The populated place a point belongs to (see NEAREST_MAX_KM and the reach rule), or null. */
  nearestCity(lat: number, lon: number, countryCode?: string | null): { city: City; distanceM: number } | null {
    const found = this.nearestIndex(lat, lon, countryCode ?? null);
    return found ? { city: this.toCity(found.city), distanceM: found.metres } : null;
  }

  /** Reused candidate buffer of `nearestIndex` (one look-up at a time: the gazetteer is per thread). */
  private found = new Int32Array(1024);
  private foundCount = 0;

  /**
   * Candidates come from bounding-box queries on the kd-trees (a box costs about a microsecond; a
   * great-circle k-nearest search costs tens). First every populated place within NEAR_BOX_KM. A place
   * outside that box is further than NEAR_BOX_KM, so it can only win if it is a big city whose reach makes
   * up the difference: the big-city index is searched as far as that is possible, and the whole index out
   * to NEAREST_MAX_KM only when the small box found nothing close enough to rule small places out.
   * Within the given country only, when there is one: a place near a border stays in its own country.
   */
  private nearestIndex(lat: number, lon: number, countryCode: string | null): { city: number; metres: number } | null {
    const filter = this.countryFilter(countryCode);
    this.foundCount = 0;
    this.collect(this.nearIndex, this.d.nearIds, lat, lon, NEAR_BOX_KM, filter);
    const near = this.best(this.found, this.foundCount, lat, lon, NEAREST_MAX_KM);
    if (!near || near.score > NEAR_BOX_KM * 1000 - reach(BIG_CITY_POPULATION)) {
      this.foundCount = 0;
      this.collect(this.nearIndex, this.d.nearIds, lat, lon, NEAREST_MAX_KM, filter);
      return this.best(this.found, this.foundCount, lat, lon, NEAREST_MAX_KM);
    }
    const bigKm = Math.min(NEAREST_MAX_KM, (near.score + MAX_REACH_M) / 1000);
    if (bigKm <= NEAR_BOX_KM) return near;
    this.collect(this.bigIndex, this.d.bigIds, lat, lon, bigKm, filter);
    return this.best(this.found, this.foundCount, lat, lon, NEAREST_MAX_KM);
  }

  /** Appends to `found` the members of `index` inside a box of ±km around the point (split at the antimeridian). */
  private collect(index: KDBush, ids: Int32Array, lat: number, lon: number, km: number, filter: number | undefined): void {
    const dLat = km / KM_PER_DEGREE;
    const dLon = Math.min(180, km / (KM_PER_DEGREE * Math.max(Math.cos((Math.min(Math.abs(lat) + dLat, 90) * Math.PI) / 180), 0.01)));
    const minLat = lat - dLat;
    const maxLat = lat + dLat;
    this.collectBox(index, ids, Math.max(lon - dLon, -180), minLat, Math.min(lon + dLon, 180), maxLat, filter);
    if (lon - dLon < -180) this.collectBox(index, ids, lon - dLon + 360, minLat, 180, maxLat, filter);
    if (lon + dLon > 180) this.collectBox(index, ids, -180, minLat, lon + dLon - 360, maxLat, filter);
  }

  private collectBox(
    index: KDBush,
    ids: Int32Array,
    minLon: number,
    minLat: number,
    maxLon: number,
    maxLat: number,
    filter: number | undefined,
  ): void {
    const country = this.d.country;
    for (const k of index.range(minLon, minLat, maxLon, maxLat)) {
      const i = ids[k]!;
      if (filter !== undefined && country[i] !== filter) continue;
      if (this.foundCount === this.found.length) {
        const grown = new Int32Array(this.found.length * 2);
        grown.set(this.found);
        this.found = grown;
      }
      this.found[this.foundCount++] = i;
    }
  }

  /** Same-named cities for a written address city, trying the name as written, without postcode, before a comma or a hyphen. */
  private addressMatches(written: string, countryCode: string | null): number[] {
    // Address cities repeat a lot within an import (every place in München says so): remember recent answers.
    const cacheKey = `${countryCode ?? ''}|${written}`;
    const cached = this.addressLookups.get(cacheKey);
    if (cached) return cached;
    const found = this.matchAddressCity(written, countryCode);
    if (this.addressLookups.size >= ADDRESS_CACHE_SIZE) this.addressLookups.clear();
    this.addressLookups.set(cacheKey, found);
    return found;
  }

  private matchAddressCity(written: string, countryCode: string | null): number[] {
    const filter = this.countryFilter(countryCode);
    for (const key of addressCityVariants(written)) {
      const found = this.citiesNamed(key, filter);
      if (found.length > 0) return found;
    }
    return [];
  }

  /**
   * Cities an address city as written may mean when it is no city's name (`addressCityKeys`): each key's
   * cities, most populous first, within the country when given. What `city=` falls back on for such names.
   */
  addressCities(written: string, countryCodeOrName?: string | null): City[] {
    const country = countryCodeOrName ? (this.countryCode(countryCodeOrName) ?? countryCodeOrName.toUpperCase()) : null;
    const filter = this.countryFilter(country);
    const seen = new Set<number>();
    const out: City[] = [];
    for (const key of addressCityKeys(written)) {
      for (const i of this.citiesNamed(key, filter)) {
        if (seen.has(i)) continue;
        seen.add(i);
        out.push(this.toCity(i));
      }
    }
    return out;
  }

  /**
   * Cities near the point (within NEAR_BOX_KM) one of whose names appears as whole words in the written
   * city: `Glasgow City`, `City of Bristol`, `Frankfurt on the Main`, `Brighton and Hove`. Names shorter
   * than MIN_CONTAINED_NAME letters are ignored, so `Le`, `San` or `Bad` do not match everything.
   */
  private nearbyNamedIn(written: string, lat: number, lon: number, countryCode: string | null): number[] {
    const key = ` ${foldText(written)} `;
    this.foundCount = 0;
    this.collect(this.nearIndex, this.d.nearIds, lat, lon, NEAR_BOX_KM, this.countryFilter(countryCode));
    const { cityKeys, cityKeysEnd, keyEnd } = this.d;
    const out: number[] = [];
    for (let f = 0; f < this.foundCount; f++) {
      const i = this.found[f]!;
      for (let j = start(cityKeysEnd, i); j < cityKeysEnd[i]!; j++) {
        const k = cityKeys[j]!;
        if (keyEnd[k]! - start(keyEnd, k) < MIN_CONTAINED_NAME) continue;
        if (key.includes(` ${this.keyName(k)} `)) {
          out.push(i);
          break;
        }
      }
    }
    return out;
  }

  /**
   * City and country of a place. With a point, the country is the one whose borders contain it (`borders.ts`)
   * and the city is sought among that country's cities only, so a café in Monaco is not filed under
   * Beausoleil, nor a restaurant in Bendern under Haag across the Rhine. Within BORDER_TOLERANCE_M of another
   * country, where the generalised borders may be wrong, the source's country wins when it names one of the
   * countries there, and without one a written address city that is a city of one of them decides. Well
   * inside a country, the source's country still wins when its address city is a city of the source's
   * country and of none of the polygon's: the point is wrong, not the country. At sea,
   * outside any country, or where the polygon's country has no GeoNames city within reach (Crimea, Western
   * Sahara: GeoNames files them under another country), the source's country as before, else the nearest city's.
   */
  assignCity(input: { city?: string | null; countryCode?: string | null; lat?: number | null; lon?: number | null }): CityAssignment {
    const given = input.countryCode ?? null;
    if (typeof input.lat !== 'number' || typeof input.lon !== 'number') return this.assignIn(input, given);
    const placed = this.borders.at(input.lat, input.lon);
    if (placed.code === null || given === placed.code) return this.assignIn(input, given);
    let country = placed.code;
    const written = input.city?.trim();
    if (given !== null && given !== placed.parent) {
      // The source disagrees: believed near a border the polygon may have wrong, not well inside another
      // country, unless its address city is a city of its country and of none of the polygon's (then the
      // point is what is wrong: a Zomato place in Noida, IN, at 28°N 0°E).
      if (this.borders.othersNear(input.lat, input.lon, placed).includes(given)) country = given;
      else if (written && this.addressMatches(written, placed.code).length === 0 && this.addressMatches(written, given).length > 0)
        country = given;
    } else if (given === null && written && this.addressMatches(written, placed.code).length === 0) {
      const other = this.borders.othersNear(input.lat, input.lon, placed).find((c) => this.addressMatches(written, c).length > 0);
      if (other) country = other;
    }
    const found = this.assignIn(input, country);
    return found.cityId === null && country !== given ? this.assignIn(input, given) : found;
  }

  private assignIn(input: { city?: string | null; lat?: number | null; lon?: number | null }, country: string | null): CityAssignment {
    const hasPoint = typeof input.lat === 'number' && typeof input.lon === 'number';
    const written = input.city?.trim();
    if (written) {
      let matches = this.addressMatches(written, country);
      if (matches.length === 0 && hasPoint) matches = this.nearbyNamedIn(written, input.lat!, input.lon!, country);
      if (matches.length === 0) {
        // A place GeoNames does not list (a village, a ward, a township): filed under the city its point
        // belongs to, as a place without an address city is, with the written name kept for display and for
        // `city=` (the API resolves such names through the places filed with them).
        const near = hasPoint ? this.nearestIndex(input.lat!, input.lon!, country) : null;
        if (!near) return { city: written, cityId: null, source: 'address_unmatched', distanceM: null, countryCode: country };
        return {
          city: written,
          cityId: this.d.id[near.city]!,
          source: 'address_unmatched',
          distanceM: near.metres,
          countryCode: country ?? this.countryOf(near.city),
        };
      }
      const picked = hasPoint && matches.length > 1 ? this.best(matches, matches.length, input.lat!, input.lon!, Infinity) : null;
      const i = picked ? picked.city : matches[0]!;
      return { city: written, cityId: this.d.id[i]!, source: 'address', distanceM: null, countryCode: country ?? this.countryOf(i) };
    }
    if (!hasPoint) return { city: null, cityId: null, source: null, distanceM: null, countryCode: country };
    const found = this.nearestIndex(input.lat!, input.lon!, country);
    if (!found) return { city: null, cityId: null, source: null, distanceM: null, countryCode: country };
    const i = found.city;
    return {
      city: this.cityName(i),
      cityId: this.d.id[i]!,
      source: 'nearest',
      distanceM: found.metres,
      countryCode: country ?? this.countryOf(i),
    };
  }
}

/**
 * The folded names the importers try for a written address city, in order: as written, without digits
 * (postcodes), before a comma, before a hyphen or bracket. Duplicates and empty keys left out.
 */
export function addressCityVariants(written: string): string[] {
  const variants = [written, written.replace(/\d+/g, ' '), written.split(',')[0]!, written.split(/\s*-\s*|\s*\(/)[0]!].map(foldText);
  return [...new Set(variants)].filter((k) => k.length > 0);
}

/** Written address cities longer than this many words are not searched for the names inside them. */
const MAX_ADDRESS_WORDS = 8;

/**
 * `addressCityVariants`, then the runs of its words that may be a city's name inside it, longest first
 * (`cedar rapids` and `iowa city` in `Cedar Rapids/Iowa City`, `fehmarn` in `Neujellingsdorf auf Fehmarn`,
 * `wellington` in `Wellington City`), runs shorter than MIN_CONTAINED_NAME letters left out.
 */
export function addressCityKeys(written: string): string[] {
  const keys = addressCityVariants(written);
  const words = (keys[0] ?? '').split(' ').slice(0, MAX_ADDRESS_WORDS);
  for (let size = words.length - 1; size >= 1; size--) {
    for (let at = 0; at + size <= words.length; at++) {
      const key = words.slice(at, at + size).join(' ');
      if (key.replace(/ /g, '').length >= MIN_CONTAINED_NAME && !keys.includes(key)) keys.push(key);
    }
  }
  return keys;
}

let shared: Gazetteer | undefined;

/**
 * The process-wide gazetteer. Built from the data packages on first use (about a second) and kept on disk
 * next to the row caches (see `cachedRows`), keyed by the package versions and the text of this file, so
 * later processes read it back in a few tens of milliseconds.
 */
export function loadGazetteer(): Gazetteer {
  shared ??= new Gazetteer(
    loadCountryRows(),
    cachedRows('gazetteer', () => buildGazetteerData(loadCityRows()), gazetteerCodec, [import.meta.url]),
  );
  return shared;
}
