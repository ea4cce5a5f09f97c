import type { Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';
import { Lru } from '../../infra/lru.ts';
import { findCitiesFiledAs } from '../geo/address-cities.ts';
import { type City, loadGazetteer } from '../geo/gazetteer.ts';
import { loadCountryRows } from '../geo/geo.data.ts';
import { SqlPlaceNames } from '../geo/place-names.ts';
import { type CategoryIndex, categoryIndexFor } from '../taxonomy/taxonomy.ts';
import type { PlaceNameResolver, TypeResolver } from './search.types.ts';

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
  const cache = new Lru<string, R>(size);
  return (...args: A) => cache.getOrSet(JSON.stringify(args), () => fn(...args));
}

type NameLookups = Omit<PlaceNameResolver, 'citiesFiledAs'> & {
  city(id: number): City | null;
  addressCities(written: string, country: string | null): City[];
};

/** The `type=` resolver of a database (over `categoryIndexFor(db)`), answers remembered: made once per search object. */
export function createTypeResolver(db: Db): TypeResolver {
  const plain = typeResolver(categoryIndexFor(db));
  return {
    resolve: memoize(plain.resolve),
    resolveInText: memoize(plain.resolveInText),
    suggest: plain.suggest,
    descendants: memoize(plain.descendants),
  };
}

/**
 * The `city`/`country` resolver of a database, answers remembered: made once per search object. SQLite: indexed
 * lookups in the reference tables (`SqlPlaceNames`), so a server never holds the gazetteer (about 140 MB of heap
 * on its own). PostgreSQL, and an SQLite database whose reference tables were never filled (migrated only, as
 * in some tests; `leadatlas serve` always fills them): the in-memory gazetteer (geo's, loaded once per
 * process), since the resolver answers synchronously and from the same data.
 */
export function createPlaceNameResolver(db: Db): PlaceNameResolver {
  const { city, addressCities, ...names } = rememberedLookups(sqlPlaceNames(db) ?? loadGazetteer());
  return {
    ...names,
    // The catalog is read each time (imports add such names); only searches whose city is unknown or empty ask.
    async citiesFiledAs(writtenCity, countryCode) {
      const filed = (await findCitiesFiledAs(db, writtenCity, countryCode)).map((id) => city(id)).filter((c): c is City => c !== null);
      const ids = new Set(filed.map((c) => c.id));
      return [...filed, ...addressCities(writtenCity, countryCode).filter((c) => !ids.has(c.id))];
    },
  };
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
