import { AppError } from '../../infra/errors.ts';
import { type AutocompleteQuery, type AutocompleteResponse, type Suggestion, suggestionLimit } from './autocomplete.schema.ts';
import type { Autocomplete, AutocompleteData } from './autocomplete.ts';
import { foldQuery } from './autocomplete-index.ts';
import { noCriteria } from './query/criteria.ts';
import type { SearchDeps } from './search.types.ts';

/** What the suggestions need of the search object. */
export interface AutocompleteDeps extends Pick<SearchDeps, 'engine' | 'places' | 'types'> {
  autocomplete: Autocomplete;
}

/** Category names read at most for one prefix (a letter spans thousands in 90 languages). */
const CATEGORY_READS = 20_000;

/**
 * `GET /api/v2/autocomplete`: suggestions for what the user typed so far, most places first. Names and cities
 * come ranked from the prefix index; categories are ranked here, their counts depending on the country.
 */
export async function autocomplete(deps: AutocompleteDeps, input: AutocompleteQuery, lang: string | null): Promise<AutocompleteResponse> {
  const kind = input.kind ?? 'name';
  const limit = input.limit ?? suggestionLimit.default;
  const prefix = foldQuery(input.q);
  if (prefix === '') {
    throw new AppError('validation_failed', 'q has no letter or digit', {
      errors: [{ field: 'querystring.q', message: 'must hold a letter or digit' }],
    });
  }
  let country: string | null = null;
  if (input.country !== undefined) {
    const found = deps.places().resolveCountry(input.country);
    if (!found) {
      throw new AppError('unknown_value', `country "${input.country}" is not a known country code or name`, {
        errors: [
          {
            field: 'querystring.country',
            message: 'is not a known ISO 3166-1 code or country name',
            allowed: { see: '/api/v2/countries' },
          },
        ],
      });
    }
    country = found.code;
  }
  const data = await deps.autocomplete.current();
  const suggestions =
    kind === 'name'
      ? nameSuggestions(data, prefix, country, limit)
      : kind === 'city'
        ? citySuggestions(data, prefix, country, limit)
        : await categorySuggestions(deps, data, prefix, country, limit, lang);
  return { kind, country, data: suggestions };
}

function nameSuggestions(data: AutocompleteData, prefix: string, country: string | null, limit: number): Suggestion[] {
  const entries = country === null ? data.names : data.namesByCountry.get(country);
  if (!entries) return [];
  return entries.index
    .top(prefix, limit)
    .map((e) => ({ value: entries.names[e]!, count: entries.counts[e]!, place_id: entries.placeIds[e]! }));
}

function citySuggestions(data: AutocompleteData, prefix: string, country: string | null, limit: number): Suggestion[] {
  const c = data.cities;
  const found = c.index.top(prefix, limit, country === null ? undefined : (e) => c.countries[e] === country);
  return found.map((e) => {
    const norms = c.norms[e]!;
    // The city's own name when the prefix found it, else the name that starts with it, else one with a word that does.
    const own = norms[0]!.startsWith(prefix) || norms[0]!.includes(` ${prefix}`);
    const matched = own ? undefined : (norms.find((n) => n.startsWith(prefix)) ?? norms.find((n) => n.includes(` ${prefix}`)));
    return {
      value: c.names[e]!,
      count: c.counts[e]!,
      city_id: c.ids[e]!,
      country: c.countries[e]!,
      ...(matched !== undefined ? { matched } : {}),
    };
  });
}

async function categorySuggestions(
  deps: AutocompleteDeps,
  data: AutocompleteData,
  prefix: string,
  country: string | null,
  limit: number,
  lang: string | null,
): Promise<Suggestion[]> {
  const cats = data.categories;
  // Per category, the name the prefix found, in the request's language when it found one there.
  const chosen = new Map<string, number>();
  const wanted = lang?.toLowerCase() ?? 'en';
  const preference = (e: number) => {
    const l = cats.langs[e]!.toLowerCase();
    return l === wanted ? 0 : l === wanted.split('-')[0] ? 1 : l === 'en' ? 2 : 3;
  };
  for (const e of cats.index.entries(prefix, CATEGORY_READS)) {
    const slug = cats.slugs[e]!;
    const held = chosen.get(slug);
    if (held === undefined || preference(e) < preference(held)) chosen.set(slug, e);
  }
  if (chosen.size === 0) return [];
  const counts = await categoryCounts(deps, data, country);
  return [...chosen]
    .map(([slug, e]) => ({ value: cats.names[e]!, count: counts.get(slug) ?? 0, slug, lang: cats.langs[e]! }))
    .sort((a, b) => b.count - a.count || (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0))
    .slice(0, limit);
}

/** Open places per category with its subtree (what `type=` finds), in the country or everywhere; once per build. */
function categoryCounts(deps: AutocompleteDeps, data: AutocompleteData, country: string | null): Promise<Map<string, number>> {
  const key = country ?? '';
  let counts = data.categoryCounts.get(key);
  if (!counts) {
    counts = (async () => {
      const [facet, types] = await Promise.all([deps.engine.facets({ ...noCriteria, countryCode: country }, 'category'), deps.types()]);
      const own = new Map(facet.map((v) => [String(v.value), v.count]));
      const out = new Map<string, number>();
      for (const slug of new Set(data.categories.slugs)) {
        let n = 0;
        for (const s of types.descendants(slug)) n += own.get(s) ?? 0;
        out.set(slug, n);
      }
      return out;
    })();
    // A failed count is not kept: the next request asks again.
    counts.catch(() => data.categoryCounts.delete(key));
    data.categoryCounts.set(key, counts);
  }
  return counts;
}
