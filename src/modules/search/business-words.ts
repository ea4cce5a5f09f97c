import { foldText } from '../../infra/text.ts';
import type { City } from '../geo/gazetteer.ts';
import type { PlaceCriteria } from './query/criteria.ts';
import { type PlaceNameResolver, type SearchDeps, type SearchResolution, type TypeResolver, toChoice } from './search.types.ts';

/**
 * A kind of business named in free text (`dentist`, `Zahnarzt`, `coffee shop`, `pizza Porto`): the words
 * that named it, what they resolve to, and the query's other words.
 */
export interface BusinessWords {
  /** The words that named the kind, as written (`coffee shop`). */
  input: string;
  type: NonNullable<ReturnType<TypeResolver['resolveInText']>>;
  /** The query's other words, in order. */
  rest: string[];
}

/**
 * The longest run of query words (then the leftmost) that the taxonomy resolves exactly, as `type=` would
 * (a name or alias in any language, a search term of `lang` or English, plurals), slugs aside; null when none
 * does. Terms under three letters are not tried: in free text they are name fragments far more often than
 * kinds of business.
 */
export function findBusinessWords(words: readonly string[], types: TypeResolver, lang: string | null): BusinessWords | null {
  // Every run, the whole query first: a category's name can be long (`Botiga de telefonia mòbil`).
  for (let size = words.length; size >= 1; size--) {
    for (let at = 0; at + size <= words.length; at++) {
      const input = words.slice(at, at + size).join(' ');
      const folded = foldText(input);
      if ([...folded].length < 3 || /^[\d ]+$/.test(folded)) continue;
      const type = types.resolveInText(input, lang);
      if (type) return { input, type, rest: [...words.slice(0, at), ...words.slice(at + size)] };
    }
  }
  return null;
}

/**
 * The smallest population of a city named in free text next to a kind of business (`pizza Porto`): the other
 * words of a name (`Burger King`, `Pizza Hut`) are also the names of small towns somewhere.
 */
export const QUERY_CITY_MIN_POPULATION = 15_000;

/** The city the query's other words name, when they are nothing but a city's name (`pizza Porto`); else null. */
export function cityInQuery(rest: readonly string[], places: PlaceNameResolver): City | null {
  if (rest.length === 0 || [...foldText(rest.join(' '))].length < 3) return null;
  const city = places.resolveCity(rest.join(' ')).chosen;
  return city && city.population >= QUERY_CITY_MIN_POPULATION ? city : null;
}

/**
 * What a free-text query says besides names: a kind of business (`PlaceCriteria.textKind`: its places match
 * too, those whose names also have the query's other words), as `resolved.type` with `from: 'query'`; and,
 * when no place was given otherwise, a city the other words name (`pizza Porto`: pizza places in Porto), as
 * `resolved.city` with `chosen_by: 'query'`. Null when the query names no kind of business or `type` was given.
 */
export async function businessKindOfQuery(
  deps: Pick<SearchDeps, 'types' | 'places'>,
  words: string[],
  lang: string | null,
  placeGiven: boolean,
): Promise<{
  textKind: NonNullable<PlaceCriteria['textKind']>;
  type: NonNullable<SearchResolution['type']>;
  city: SearchResolution['city'];
} | null> {
  const types = await deps.types();
  const found = findBusinessWords(words, types, lang);
  if (!found) return null;
  const categories = [...new Set(found.type.categories.flatMap((c) => types.descendants(c.slug)))];
  const city = placeGiven ? null : cityInQuery(found.rest, deps.places());
  return {
    textKind: { categories, words: city ? [] : found.rest, cityId: city?.id ?? null },
    type: {
      input: found.input,
      slug: found.type.slug,
      name: found.type.name,
      includes: categories,
      categories: found.type.categories,
      from: 'query',
    },
    city: city ? { input: found.rest.join(' '), chosen: toChoice(city), alternatives: [], chosen_by: 'query' } : null,
  };
}
