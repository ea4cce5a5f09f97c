import type SQLite from 'better-sqlite3';
import { foldText } from '../../infra/text.ts';
import { addressCityKeys, type City, type CityResolution, type CitySuggestion, type Country, countryLookup } from './gazetteer.ts';
import { type CountryRow, loadCountryRows } from './geo.data.ts';
import { closeNames, indexNamesByLength, type NamesByLength } from './name-distance.ts';

/**
 * `city=` and `country=` of the API answered from the reference tables (`cities`, `city_names`, filled
 * at migrate from the same rows as the gazetteer) instead of the in-memory `Gazetteer`, whose city
 * names, kd-trees and rows take about 140 MB of heap in every server process. A lookup is one indexed
 * query on `city_names`' primary key (name, city); the API memoises the answers.
 *
 * Same answers as `Gazetteer.resolveCity`/`resolveCountry` (geo.place-names.test.ts compares them name by
 * name): the most populous city of the name, within the country when given; a name that also names a
 * country means that country's city first; up to 10 alternatives, the country's first; for an unknown
 * name the closest spellings (1 edit up to 4 letters, 2 up to 8, else 3), fewest edits, then population.
 *
 * Countries stay in memory (250 countries, about 12,000 names): which country a shared name means
 * (`congo`, `bi`) follows the gazetteer's tiers (ISO2 codes, ISO3 codes, own names, names in other
 * languages), which `country_names` does not record.
 *
 * SQLite only: the resolver interface is synchronous, like better-sqlite3. The importers keep the
 * gazetteer, which they need for `assignCity` anyway.
 */
export class SqlPlaceNames {
  private readonly countries: Map<string, Country>;
  private readonly countryNames: Map<string, string>;
  private readonly namedCities: SQLite.Statement<[string], CityTuple>;
  private readonly allNames: SQLite.Statement<[], string>;
  private readonly cityById: SQLite.Statement<[number], CityTuple>;
  /** Distinct names by length with their letter masks, for suggestions; read on the first unknown name. */
  private namesByLengthIndex: NamesByLength | undefined;

  constructor(handle: SQLite.Database, countryRows: CountryRow[] = loadCountryRows()) {
    ({ countries: this.countries, names: this.countryNames } = countryLookup(countryRows));
    // The gazetteer's order of same-named cities: population, then GeoNames id.
    this.namedCities = handle
      .prepare<[string], CityTuple>(
        `SELECT c.id, c.name, c.country_code, c.admin1, c.lat, c.lon, c.population, n.rowid
         FROM city_names n JOIN cities c ON c.id = n.city_id
         WHERE n.name_norm = ? ORDER BY c.population DESC, c.id ASC`,
      )
      .raw(true);
    this.allNames = handle.prepare<[], string>('SELECT DISTINCT name_norm FROM city_names').pluck(true);
    this.cityById = handle
      .prepare<[number], CityTuple>('SELECT id, name, country_code, admin1, lat, lon, population, 0 FROM cities WHERE id = ?')
      .raw(true);
  }

  /** Whether `syncGeo` has filled the city tables of this database (a database only migrated has them empty). */
  static hasCities(handle: SQLite.Database): boolean {
    try {
      return handle.prepare(`SELECT 1 FROM reference_data WHERE name = 'cities' AND row_count > 0`).get() !== undefined;
    } catch {
      return false;
    }
  }

  private countryCode(codeOrName: string): string | undefined {
    return this.countryNames.get(foldText(codeOrName));
  }

  /** A country by ISO2/ISO3 code or by a name in any language the data has; null when unknown. */
  resolveCountry(nameOrCode: string): Country | null {
    const code = this.countryCode(nameOrCode);
    return code ? (this.countries.get(code) ?? null) : null;
  }

  private named(key: string): City[] {
    return this.namedCities.all(key).map(toCity);
  }

  /** Cities of a name in the order `resolveCity` chooses among them, within the country when one is given; and all of them. */
  private cityChoices(
    name: string,
    countryCodeOrName?: string | null,
  ): { key: string; country: string | null; all: City[]; inCountry: City[] } {
    const key = foldText(name);
    const country = countryCodeOrName ? (this.countryCode(countryCodeOrName) ?? countryCodeOrName.toUpperCase()) : null;
    const all = key.length > 0 ? this.named(key) : [];
    // A name that is also a country's (Monaco, Singapore, Luxembourg) means that country's city, even
    // when a bigger city elsewhere carries it as an exonym (München is Monaco in Italian).
    const namesCountry = !country && key.length > 3 ? this.countryCode(name) : undefined;
    const inCountry = country
      ? all.filter((c) => c.countryCode === country)
      : namesCountry
        ? [...all.filter((c) => c.countryCode === namesCountry), ...all.filter((c) => c.countryCode !== namesCountry)]
        : all;
    return { key, country, all, inCountry };
  }

  /** Every city a `city=` name may mean, the chosen one first (see `Gazetteer.sameNamedCities`). */
  sameNamedCities(name: string, countryCodeOrName?: string | null): City[] {
    return this.cityChoices(name, countryCodeOrName).inCountry;
  }

  /** Cities an address city as written may mean when it is no city's name (see `Gazetteer.addressCities`). */
  addressCities(written: string, countryCodeOrName?: string | null): City[] {
    const country = countryCodeOrName ? (this.countryCode(countryCodeOrName) ?? countryCodeOrName.toUpperCase()) : null;
    const seen = new Set<number>();
    const out: City[] = [];
    for (const key of addressCityKeys(written)) {
      for (const c of this.named(key)) {
        if (seen.has(c.id) || (country && c.countryCode !== country)) continue;
        seen.add(c.id);
        out.push(c);
      }
    }
    return out;
  }

  /** A city by its GeoNames id, or null. */
  city(id: number): City | null {
    const row = this.cityById.get(id);
    return row ? toCity(row) : null;
  }

  resolveCity(name: string, countryCodeOrName?: string | null): CityResolution {
    const { key, country, all, inCountry } = this.cityChoices(name, countryCodeOrName);
    const chosen = inCountry[0];
    const rest = [...inCountry.slice(1), ...(country ? all.filter((c) => c.countryCode !== country) : [])];
    return {
      chosen: chosen ?? null,
      alternatives: rest.slice(0, 10),
      candidates: chosen === undefined && key.length > 0 ? this.suggest(key, country) : [],
    };
  }

  /**
   * The distinct city names (about 300,000) by length, read once, on the first name that matches no city,
   * instead of scanning `city_names` for every unknown name (nothing indexes names by length).
   */
  private get namesByLength(): NamesByLength {
    this.namesByLengthIndex ??= indexNamesByLength(this.allNames.iterate());
    return this.namesByLengthIndex;
  }

  /** Closest known spellings of an unknown name (see `closeNames`), one per city, as the gazetteer orders them. */
  private suggest(key: string, country: string | null, limit = 5): CitySuggestion[] {
    const found: Array<{ name: string; city: City; edits: number; order: NameOrder }> = [];
    for (const { name, edits } of closeNames(this.namesByLength, key)) {
      const cities = this.namedCities.all(name);
      const city = cities.find((c) => !country || c[2] === country);
      if (city) found.push({ name, city: toCity(city), edits, order: nameOrder(name, cities[0]!) });
    }
    // Fewest edits, then the most populous city; between two names of one city, the gazetteer's order of names.
    found.sort((a, b) => a.edits - b.edits || byPopulation(a.city, b.city) || compareNameOrder(a.order, b.order));
    const seen = new Set<number>();
    const out: CitySuggestion[] = [];
    for (const f of found) {
      if (seen.has(f.city.id)) continue;
      seen.add(f.city.id);
      out.push({ name: f.name, city: f.city });
      if (out.length === limit) break;
    }
    return out;
  }
}

type CityTuple = [
  id: number,
  name: string,
  countryCode: string,
  admin1: string | null,
  lat: number,
  lon: number,
  population: number,
  nameRow: number,
];

function toCity([id, name, countryCode, admin1, lat, lon, population]: CityTuple): City {
  return { id, name, countryCode, admin1, lat, lon, population };
}

/** The gazetteer's order of cities: population, then GeoNames id. */
function byPopulation(a: City, b: City): number {
  return b.population - a.population || a.id - b.id;
}

/**
 * Where the gazetteer meets a name when it looks for close spellings: shorter names first, then in the
 * order names were first listed, city by city in `byPopulation` order, each city's names in the order
 * the sync wrote them (their row order in `city_names`).
 */
type NameOrder = [length: number, population: number, cityId: number, nameRow: number];

function nameOrder(name: string, firstCity: CityTuple): NameOrder {
  return [name.length, firstCity[6], firstCity[0], firstCity[7]];
}

function compareNameOrder(a: NameOrder, b: NameOrder): number {
  return a[0] - b[0] || b[1] - a[1] || a[2] - b[2] || a[3] - b[3];
}
