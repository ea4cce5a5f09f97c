import type { Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';
import type { ReadPool } from '../../infra/db/read-pool.ts';
import { findCitiesFiledAs } from '../geo/address-cities.ts';
import { loadGazetteer, type City } from '../geo/gazetteer.ts';
import { loadCountryRows } from '../geo/geo.data.ts';
import { SqlPlaceNames } from '../geo/place-names.ts';
import { categoryIndexFor, type CategoryIndex } from '../taxonomy/taxonomy.ts';
import type { ApiReadTasks } from './read-tasks.ts';
import { SqlSearchEngine, type SearchEngine } from './engine/search-engine.ts';
import { fuzzyCandidateLimit } from './query/typos.ts';
import type { PlaceNameResolver, SearchDeps, TypeResolver } from './search.service.ts';

/** `type=` through the taxonomy's category index: a name, alias or term in any language, plurals, slugs, OSM tags. */
export function typeResolver(index: CategoryIndex): TypeResolver {
  const named = (slug: string, lang: string | null) => ({ slug, name: index.name(slug, lang ?? undefined) ?? slug });
  const resolved = ({ slug, slugs }: { slug: string | null; slugs: string[] }, lang: string | null) =>
    slug ? { ...named(slug, lang), categories: slugs.map((s) => named(s, lang)) } : null;
  return {
    resolve: (term, lang) => resolved(index.resolve(term, lang ?? undefined, { suggest: false }), lang),
    resolveInText: (term, lang) => resolved(index.resolve(term, lang ?? undefined, { suggest: false, inText: true }), lang),
    suggest: (term, lang) => index.resolve(term, lang ?? undefined).candidates.map((c) => ({ term: c.name, slug: c.slug })),
    descendants: (slug) => index.subtree(slug),
  };
}

/**
 * Remembers the answers of a pure function of its arguments (the taxonomy and gazetteer do not change
 * while the process runs): the same `type`/`city` from many requests is folded and looked up once.
 */
function memoize<A extends unknown[], R>(fn: (...args: A) => R, size = 5000): (...args: A) => R {
  const cache = new Map<string, R>();
  return (...args: A) => {
    const key = JSON.stringify(args);
    const hit = cache.get(key);
    if (hit !== undefined || cache.has(key)) return hit as R;
    const value = fn(...args);
    if (cache.size >= size) cache.delete(cache.keys().next().value!);
    cache.set(key, value);
    return value;
  };
}

const typeResolvers = new WeakMap<Db, TypeResolver>();
type NameLookups = Omit<PlaceNameResolver, 'citiesFiledAs'> & {
  city(id: number): City | null;
  addressCities(written: string, country: string | null): City[];
};
let gazetteerNames: NameLookups | undefined;
/** The resolver chosen for each database (SQL or the gazetteer), so the choice is made once. */
const sqlNames = new WeakMap<Db, PlaceNameResolver>();

/** The `type=` resolver for a database (over `categoryIndexFor(db)`), answers remembered. */
export async function loadTypeResolver(db: Db): Promise<TypeResolver> {
  let made = typeResolvers.get(db);
  if (!made) {
    const plain = typeResolver(categoryIndexFor(db));
    made = {
      resolve: memoize(plain.resolve),
      resolveInText: memoize(plain.resolveInText),
      suggest: plain.suggest,
      descendants: memoize(plain.descendants),
    };
    typeResolvers.set(db, made);
  }
  return made;
}

/**
 * The `city`/`country` resolver for a database, answers remembered. SQLite: indexed lookups in the
 * reference tables (`SqlPlaceNames`), so a server never holds the gazetteer (about 140 MB of heap on its
 * own). PostgreSQL, and an SQLite database whose reference tables were never filled (migrated only, as in
 * some tests; `leadatlas serve` always fills them): the in-memory gazetteer, since the resolver answers
 * synchronously and from the same data.
 */
export function placeNameResolver(db: Db): PlaceNameResolver {
  // Asked twice per search: the resolver made for this database first, before any query.
  const made = sqlNames.get(db);
  if (made) return made;
  let lookups: NameLookups;
  const sql = sqlPlaceNames(db);
  if (!sql) {
    gazetteerNames ??= rememberedLookups(loadGazetteer());
    lookups = gazetteerNames;
  } else {
    lookups = rememberedLookups(sql);
  }
  const { city, addressCities, ...names } = lookups;
  const resolver: PlaceNameResolver = {
    ...names,
    // The catalog is read each time (imports add such names); only searches whose city is unknown or empty ask.
    async citiesFiledAs(writtenCity, countryCode) {
      const filed = (await findCitiesFiledAs(db, writtenCity, countryCode)).map((id) => city(id)).filter((c): c is City => c !== null);
      const ids = new Set(filed.map((c) => c.id));
      return [...filed, ...addressCities(writtenCity, countryCode).filter((c) => !ids.has(c.id))];
    },
  };
  sqlNames.set(db, resolver);
  return resolver;
}

/** The name look-ups of the gazetteer or of `SqlPlaceNames`, the answers of the pure ones remembered. */
function rememberedLookups(source: NameLookups): NameLookups {
  return {
    resolveCity: memoize(source.resolveCity.bind(source)),
    resolveCountry: memoize(source.resolveCountry.bind(source)),
    sameNamedCities: memoize(source.sameNamedCities.bind(source), 500),
    addressCities: memoize(source.addressCities.bind(source), 500),
    city: source.city.bind(source),
  };
}

/** SQLite: the reference tables, when filled, answer synchronously. PostgreSQL's driver cannot answer synchronously. */
const sqlPlaceNames = byDialect<SqlPlaceNames | null>({
  sqlite: (db) => (SqlPlaceNames.hasCities(db.sqlite) ? new SqlPlaceNames(db.sqlite) : null),
  postgres: () => null,
});

/**
 * Warms what every `city`/`country` resolver reads first, the country names (a server calls this once it
 * listens); each database's resolver is then made on its first search.
 */
export function loadPlaceNameResolver(): void {
  loadCountryRows();
}

/** What the search service needs, wired to the taxonomy and the place names: for the API and the dashboard alike. */
export function createSearchDeps(
  db: Db,
  reads: ReadPool<ApiReadTasks>,
  typoCandidates = fuzzyCandidateLimit,
  engine: SearchEngine = new SqlSearchEngine({ db, reads }),
  hoursWindowDays?: number,
): SearchDeps {
  return { db, reads, engine, types: () => loadTypeResolver(db), places: () => placeNameResolver(db), typoCandidates, hoursWindowDays };
}
