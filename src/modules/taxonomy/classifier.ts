import { foldText } from '../../infra/text.ts';
import type { PlaceInput } from '../places/place-input.ts';
import { createOsmMatcher } from './osm-matcher.ts';
import { lookUpSourceMap, SOURCE_MAPS } from './source-maps/index.ts';
import { RESTAURANT_SOURCES, SOURCE_OVERRIDES } from './source-overrides.ts';
import { loadEnglishNames, loadTaxonomy, loadTaxonomyNames, type Taxonomy, type TaxonomyName } from './taxonomy.build.ts';
import type { Classifier } from './taxonomy.types.ts';

/** A source term mapped onto the taxonomy. `strong`: a name, alias, override or cuisine; weak: a search term or a fallback. */
export interface TermHit {
  slug: string;
  strong: boolean;
}

export interface TermMatcher {
  /** The category a publisher's category term maps onto, or null (`publisher`: see `Classifier.classify`). */
  match(publisher: string, term: string): TermHit | null;
}

const CACHE_LIMIT = 200_000;
const osmTagPattern = /^([a-z][a-z0-9_:]*)=(.+)$/;
/** Last words that only say "a place of this trade": `Electronics Store`, `Parking Lot`, `Car Repair Shop`. */
export const GENERIC_LAST_WORD =
  / (store|shop|office|grounds|building|lot|facility|center|centre|practitioner|company|agency|station|service|services|provider|salon|parlor|parlour)$/;

/** Folded, without `and`/`or`: `Beauty & Spas`, `beauty_and_spa` → `beauty spas`, `beauty spa`. */
function termKey(text: string): string {
  return foldText(text)
    .split(' ')
    .filter((w) => w !== 'and' && w !== 'or')
    .join(' ');
}

/** The term and its singular forms: `sandwiches` → [`sandwiches`, `sandwiche`, `sandwich`], `bakeries` → […, `bakery`]. */
function forms(key: string): string[] {
  const out = [key];
  if (key.endsWith('ies')) out.push(`${key.slice(0, -3)}y`);
  if (key.endsWith('es')) out.push(key.slice(0, -2));
  if (key.endsWith('s') && !key.endsWith('ss')) out.push(key.slice(0, -1));
  return out;
}

/** Presets (and their sub-presets) a restaurant-only source may name; anything else there means `restaurant`. */
const FOOD_PRESETS = [
  'amenity/restaurant',
  'amenity/cafe',
  'amenity/fast_food',
  'amenity/bar',
  'amenity/pub',
  'amenity/biergarten',
  'amenity/food_court',
  'amenity/ice_cream',
  'shop/bakery',
  'shop/pastry',
  'shop/confectionery',
  'shop/deli',
  'shop/chocolate',
];

/**
 * Maps category terms of non-OSM sources (Google Maps, Yelp, Overture, Michelin, Zomato, others) onto slugs, trying
 * in turn: the source's override table (then `common`), English preset names, aliases, slugs and names without a
 * generic last word (`Electronics Store`), cuisines, each also in singular form; then English search terms; then the
 * trailing words of a longer term (`Southern Italian restaurant` → `Italian restaurant`); a term ending in
 * `restaurant`/`cuisine`; names in other languages (loaded on first need). Results are cached per (source, term).
 */
export function createTermMatcher(
  taxonomy: Taxonomy,
  englishNames: readonly TaxonomyName[],
  otherNames: () => readonly TaxonomyName[],
): TermMatcher {
  const categories = new Map(taxonomy.categories.map((c) => [c.slug, c]));
  const depth = (slug: string): number => categories.get(slug)!.presetId.split('/').length;
  const isFood = (slug: string): boolean => {
    const id = categories.get(slug)!.presetId;
    return FOOD_PRESETS.some((p) => id === p || id.startsWith(`${p}/`));
  };

  // Exact names: the preset's own names first, then aliases and merged presets' names, slugs, derived names.
  const names = new Map<string, string>();
  const addName = (key: string, slug: string) => {
    if (key && !names.has(key)) names.set(key, slug);
  };
  for (const n of englishNames) if (n.kind === 'name') addName(termKey(n.name), n.slug);
  for (const n of englishNames) if (n.kind === 'alias') addName(termKey(n.name), n.slug);
  for (const c of taxonomy.categories) addName(termKey(c.slug), c.slug);
  // Names without their generic last word (`Electronics Store` → `electronics`, `Parking Lot` → `parking`),
  // for source terms that name the trade only; where several share one, the shallowest preset wins.
  for (const c of [...taxonomy.categories].sort((a, b) => depth(a.slug) - depth(b.slug) || (a.slug < b.slug ? -1 : 1))) {
    addName(termKey(c.name).replace(GENERIC_LAST_WORD, ''), c.slug);
  }

  // An ambiguous search term goes to the category whose English name contains it, else the shallowest.
  const termSlugs = new Map<string, string[]>();
  for (const n of englishNames) {
    if (n.kind !== 'term') continue;
    const key = termKey(n.name);
    termSlugs.set(key, [...(termSlugs.get(key) ?? []), n.slug]);
  }
  // A term of one category and its sub-categories is a strong hit (`veterinarian`); one shared more widely (`bar`) is weak.
  const within = (slug: string, ancestor: string): boolean => {
    for (let s: string | null = slug; s; s = categories.get(s)!.parent) if (s === ancestor) return true;
    return false;
  };
  const terms = new Map<string, TermHit>();
  for (const [key, slugs] of termSlugs) {
    const inName = (slug: string) => Number(!termKey(categories.get(slug)!.name).includes(key));
    const ranked = [...new Set(slugs)].sort((a, b) => inName(a) - inName(b) || depth(a) - depth(b) || (a < b ? -1 : 1));
    terms.set(key, { slug: ranked[0]!, strong: ranked.every((s) => within(s, ranked[0]!)) });
  }

  // Cuisine value or English label → its restaurant preset, else café or fast-food preset, else `restaurant`.
  const byCuisine = new Map<string, Map<string, string>>();
  for (const p of taxonomy.patterns) {
    const cuisine = p.tags['cuisine'];
    const amenity = p.tags['amenity'];
    if (!cuisine || !amenity || Object.keys(p.tags).length !== 2) continue;
    if (!byCuisine.has(amenity)) byCuisine.set(amenity, new Map());
    byCuisine.get(amenity)!.set(cuisine, p.slug);
  }
  const restaurantOf = (value: string) => byCuisine.get('restaurant')?.get(value) ?? 'restaurant';
  const anyOf = (value: string) =>
    byCuisine.get('restaurant')?.get(value) ?? byCuisine.get('cafe')?.get(value) ?? byCuisine.get('fast_food')?.get(value) ?? 'restaurant';
  const cuisineAny = new Map<string, string>();
  const cuisineRestaurant = new Map<string, string>();
  const labels = new Map(taxonomy.cuisines.map((c) => [c.value, c.label]));
  for (const value of new Set([...labels.keys(), ...[...byCuisine.values()].flatMap((m) => [...m.keys()])])) {
    for (const form of [value, labels.get(value)]) {
      if (!form) continue;
      cuisineAny.set(termKey(form), anyOf(value));
      cuisineRestaurant.set(termKey(form), restaurantOf(value));
    }
  }
  const cuisine = (key: string, restaurantsOnly: boolean): TermHit | null => {
    const restaurant = restaurantsOnly || / restaurants?$/.test(key);
    const stripped = key.replace(/ (restaurants?|cuisine|food|cooking|kitchen|shop|store|place|joint|bar)$/, '');
    const slug = (restaurant ? cuisineRestaurant : cuisineAny).get(stripped);
    return slug ? { slug, strong: slug !== 'restaurant' || stripped !== key } : null;
  };

  const overrides = new Map<string, Map<string, string | null>>();
  for (const [source, table] of Object.entries(SOURCE_OVERRIDES)) {
    const keyed = new Map<string, string | null>(overrides.get('common'));
    for (const [term, slug] of Object.entries(table)) {
      if (slug !== null && !categories.has(slug))
        throw new Error(`taxonomy: the ${source} override for "${term}" names an unknown category ${slug}`);
      keyed.set(termKey(term), slug);
    }
    overrides.set(source, keyed);
  }

  for (const [source, table] of Object.entries(SOURCE_MAPS)) {
    for (const [term, slug] of Object.entries(table)) {
      if (slug !== null && !categories.has(slug))
        throw new Error(`taxonomy: the ${source} category table maps "${term}" to an unknown category ${slug}`);
    }
  }

  // Other languages: each language's name (4 votes), alias (2) or search term (1) votes for its category,
  // so `Optiker` goes to the optician (its name in German, Danish, Swedish…), not to one language's optometrist.
  let other: Map<string, string> | undefined;
  const otherLanguageName = (norm: string): string | undefined => {
    if (!other) {
      const votes = new Map<string, Map<string, number>>();
      for (const n of otherNames()) {
        if (n.lang === 'en') continue;
        if (!votes.has(n.norm)) votes.set(n.norm, new Map());
        const v = votes.get(n.norm)!;
        v.set(n.slug, (v.get(n.slug) ?? 0) + (n.kind === 'name' ? 4 : n.kind === 'alias' ? 2 : 1));
      }
      other = new Map();
      for (const [key, v] of votes) other.set(key, [...v].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]![0]);
    }
    return other.get(norm);
  };

  /** A hit, null for no match, `unmapped` when an override says the term deliberately maps nowhere. */
  const exact = (table: Map<string, string | null> | undefined, key: string, restaurantsOnly: boolean): TermHit | null | 'unmapped' => {
    const all = forms(key);
    for (const f of all) {
      const override = table?.get(f);
      if (override === null) return 'unmapped';
      if (override) return { slug: override, strong: true };
    }
    if (restaurantsOnly) {
      for (const f of all) {
        const hit = cuisine(f, true);
        if (hit && hit.slug !== 'restaurant') return hit;
      }
    }
    for (const f of all) {
      const slug = names.get(f);
      if (slug) return { slug, strong: true };
    }
    for (const f of all) {
      const hit = cuisine(f, restaurantsOnly);
      if (hit) return hit;
    }
    return null;
  };

  const find = (source: string, raw: string): TermHit | null => {
    const table = SOURCE_MAPS[source];
    const mapped = table ? lookUpSourceMap(table, raw) : undefined;
    if (mapped === null) return null;
    if (mapped !== undefined) return { slug: mapped, strong: true };
    // An unknown path is matched on its last segment (`… > Bubble Tea Shop`).
    if (table && raw.includes(' > ')) return find(source, raw.slice(raw.lastIndexOf(' > ') + 3));
    const key = termKey(raw);
    if (!key) return null;
    const restaurantsOnly = RESTAURANT_SOURCES.has(source);
    const overridden = overrides.get(source) ?? overrides.get('common');
    const direct = exact(overridden, key, restaurantsOnly);
    if (direct === 'unmapped') return null;
    if (direct) return direct;
    for (const f of forms(key)) {
      const hit = terms.get(f);
      if (hit) return hit;
    }
    const words = key.split(' ');
    for (let i = 1; i < words.length; i++) {
      const hit = exact(overridden, words.slice(i).join(' '), restaurantsOnly);
      if (hit && hit !== 'unmapped') return hit;
    }
    const bare = termKey(raw.replace(/\(.*?\)/g, ' '));
    if (bare !== key && bare) return find(source, bare);
    if (/ (restaurants?|cuisine|cooking)$/.test(key)) return { slug: 'restaurant', strong: false };
    const foreign = otherLanguageName(foldText(raw));
    if (foreign) return { slug: foreign, strong: false };
    return null;
  };

  const resolve = (source: string, raw: string): TermHit | null => {
    const hit = find(source, raw);
    if (RESTAURANT_SOURCES.has(source)) return hit && isFood(hit.slug) ? hit : { slug: 'restaurant', strong: false };
    // A key's generic category (`shop`, `healthcare`) is a broad parent: it goes after the specific ones.
    return hit && hit.strong && !categories.get(hit.slug)!.presetId.includes('/') ? { slug: hit.slug, strong: false } : hit;
  };

  // Per source, then per term as written: an import repeats the same few hundred terms.
  const cache = new Map<string, Map<string, TermHit | null>>();
  return {
    match(source, term) {
      let bySource = cache.get(source);
      if (bySource === undefined) cache.set(source, (bySource = new Map()));
      let hit = bySource.get(term);
      if (hit === undefined) {
        hit = resolve(source, term);
        if (bySource.size >= CACHE_LIMIT) bySource.clear();
        bySource.set(term, hit);
      }
      return hit;
    },
  };
}

/**
 * The importers' classifier. OSM places are matched on their tags (iD preset matching); other sources' category
 * terms go through the term matcher. The result lists the matched categories only, not their ancestors (the API
 * expands a category to its descendants), and drops a category when one of its descendants is also in the list
 * (`restaurant` next to `restaurant_italian`). Strong matches come first, in the source's order.
 */
export function createClassifier(taxonomy: Taxonomy, terms: TermMatcher): Classifier {
  const osm = createOsmMatcher(taxonomy);
  const parent = new Map(taxonomy.categories.map((c) => [c.slug, c.parent]));
  const isAncestorOfAny = (slug: string, others: readonly string[]): boolean => {
    for (const o of others) for (let p = parent.get(o); p; p = parent.get(p)) if (p === slug) return true;
    return false;
  };

  const fromTerms = (publisher: string, place: PlaceInput): string[] => {
    let out: string[] = [];
    let weak: string[] | undefined;
    let osmTags: Record<string, string> | undefined;
    for (const term of place.sourceCategories) {
      const tag = term.includes('=') ? osmTagPattern.exec(term.trim()) : null;
      if (tag) {
        (osmTags ??= {})[tag[1]!] = tag[2]!;
        continue;
      }
      const hit = terms.match(publisher, term);
      if (hit === null) continue;
      if (hit.strong) {
        if (!out.includes(hit.slug)) out.push(hit.slug);
      } else if (!(weak ??= []).includes(hit.slug)) weak.push(hit.slug);
    }
    if (osmTags) out = [...osm.match(osmTags).filter((s) => !out.includes(s)), ...out];
    if (weak) for (const s of weak) if (!out.includes(s)) out.push(s);
    return out.length > 1 ? out.filter((s) => !isAncestorOfAny(s, out)) : out;
  };

  return {
    classify(publisher, place) {
      if (place.osmTags) {
        const slugs = osm.match(place.osmTags);
        if (slugs.length > 0) return slugs;
      }
      return place.sourceCategories.length > 0 ? fromTerms(publisher, place) : [];
    },
  };
}

let classifier: Classifier | undefined;

/**
 * The in-memory classifier used by importers, built once per process from the package (English names; other
 * languages are read only if a term matches nothing in English). It lives here rather than in `taxonomy.ts`
 * so that the import worker does not load the SQL side of the module (Kysely adds to its start-up).
 * The term matcher is built on the first term: OSM places are classified on their tags alone.
 */
export function loadClassifier(): Classifier {
  if (!classifier) {
    const taxonomy = loadTaxonomy();
    let terms: TermMatcher | undefined;
    const lazyTerms: TermMatcher = {
      match: (source, term) => (terms ??= createTermMatcher(taxonomy, loadEnglishNames(), loadTaxonomyNames)).match(source, term),
    };
    classifier = createClassifier(taxonomy, lazyTerms);
  }
  return classifier;
}
