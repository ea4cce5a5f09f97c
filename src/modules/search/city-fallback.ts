import type { City } from '../geo/gazetteer.ts';
import type { PlaceCriteria, PlaceSort } from './query/criteria.ts';
import { allowedEdits } from './query/typos.ts';
import type { PlacePage } from './search.reads.ts';
import { type SearchDeps, type SearchResolution, toChoice } from './search.types.ts';

/** Cities of the same name (or where places written with it are filed) a search looks through when its city has nothing. */
const MAX_OTHER_CITIES = 200;
/** Cities with typo-tolerant candidates whose candidates are checked, in order, before giving up. */
const MAX_FUZZY_CITIES = 5;

/**
 * When the city a search chose (the most populous of its name) has no match, the search goes to the first
 * other city of that name that has one, or to a city where places written with that address city are
 * filed: `Peristyle` in `Rabat` is in Rabat, Malta, not Morocco; `Żebbuġ` is a town on Malta and another on
 * Gozo. Exact matches first, then typo-tolerant ones. The answer names the city taken (`chosen_by:
 * matches`) and keeps the first choice among the alternatives. Null when no other city has a match.
 */
export async function searchOtherCities(
  deps: SearchDeps,
  criteria: PlaceCriteria,
  resolution: SearchResolution,
  sort: PlaceSort,
  limit: number,
): Promise<{ page: PlacePage; criteria: PlaceCriteria; resolution: SearchResolution } | null> {
  const asked = resolution.city;
  if (!asked || criteria.cityId === null) return null;
  const country = resolution.country?.code ?? null;
  const names = deps.places();
  const seen = new Set([criteria.cityId]);
  const others: City[] = [];
  for (const c of [...names.sameNamedCities(asked.input, country), ...(await names.citiesFiledAs(asked.input, country))]) {
    if (seen.has(c.id)) continue;
    seen.add(c.id);
    others.push(c);
  }
  if (others.length === 0) return null;
  const candidates = others.slice(0, MAX_OTHER_CITIES);
  const ids = candidates.map((c) => c.id);
  const fuzzy =
    criteria.text && criteria.text.words.some((w) => allowedEdits(w) > 0)
      ? { ...criteria, text: { ...criteria.text, mode: 'fuzzy' as const }, textKind: null }
      : null;
  for (const [base, tries] of [[criteria, 1], ...(fuzzy ? [[fuzzy, MAX_FUZZY_CITIES] as const] : [])] as const) {
    for (const id of (await deps.reads.run('citiesWithMatches', base, ids)).slice(0, tries)) {
      const narrowed: PlaceCriteria = { ...base, cityId: id };
      const page = await deps.engine.searchPage(narrowed, sort, null, limit, deps.typoCandidates);
      if (page.total === 0) continue;
      const taken = candidates.find((c) => c.id === id)!;
      const alternatives = [asked.chosen, ...candidates.filter((c) => c.id !== id).map(toChoice)].slice(0, 10);
      return {
        page,
        criteria: narrowed,
        resolution: { ...resolution, city: { input: asked.input, chosen: toChoice(taken), alternatives, chosen_by: 'matches' } },
      };
    }
  }
  return null;
}
