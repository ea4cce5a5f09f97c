import { foldText } from '../../infra/text.ts';
import { GENERIC_LAST_WORD } from './classifier.ts';
import { createOsmMatcher } from './osm-matcher.ts';
import { SOURCE_ONLY_PRESETS, type Taxonomy, type TaxonomyName } from './taxonomy.build.ts';

export interface Category {
  slug: string;
  parent: string | null;
  /** iD preset id, e.g. `shop/optician`. */
  presetId: string;
  osmTags: Record<string, string>;
  /** Name in the requested language (English when the taxonomy has none in it). */
  name: string;
}

export interface CategoryCandidate {
  slug: string;
  name: string;
  /** 1 for the best match; exact matches are relative to the best, fuzzy ones a similarity in (0, 1). */
  score: number;
}

export interface ResolveResult {
  /** The category the term names, or null when nothing matches exactly (then see candidates). */
  slug: string | null;
  /**
   * Every category the term names, `slug` first: one, or several when one language uses the term for several
   * (see `resolve`). Empty when `slug` is null.
   */
  slugs: string[];
  /** Exact matches best first, or for an unknown term the closest categories (at most 5). */
  candidates: CategoryCandidate[];
}

export interface CategoryIndex {
  /**
   * The category a user's term names: a slug (`restaurant_italian`), an OSM tag (`shop=optician`), or a name,
   * alias or search term in any language (`Optiker`, `opticien`, `Tierarzt`), plural forms included (`restaurants`).
   * In the request's language (`lang`, `de`, `pt-BR`; English without one) a category's own name wins
   * (`Apotheke` is the pharmacy in German, whatever the drugstore lists); a term that language lists for several
   * categories, or that several of their names contain, names the one whose name begins with it, or the
   * ones, or else all of them (`pizza`: the pizza restaurant, the pizza fast food…). A term the language does
   * not know is voted on by every language's entries. `lang` also names the candidates.
   */
  resolve(term: string, lang?: string, options?: ResolveOptions): ResolveResult;
  get(slug: string, lang?: string): Category | undefined;
  /** Every category below `slug` (children, grandchildren…), not `slug` itself; empty for a leaf or an unknown slug. */
  descendants(slug: string): string[];
  /** `slug` followed by its descendants: what a `type=` filter matches. Empty for an unknown slug. */
  subtree(slug: string): string[];
  /** The category's name in `lang`, else its base language, else English; undefined for an unknown slug. */
  name(slug: string, lang?: string): string | undefined;
  list(lang?: string): Category[];
}

export interface ResolveOptions {
  /** false: no closest categories for an unknown term (a scan of thousands of names), when only a match counts. */
  suggest?: boolean;
  /**
   * A term found in free text rather than given as a type: slugs and OSM tags are ordinary words there
   * (`union`, `kitchen`), so only the taxonomy's names count, and a term no language names must be a search
   * term of the request's language or English (a Finnish search term `beach` is no kind of business in a name).
   */
  inText?: boolean;
}

const WEIGHT = { name: 4, alias: 2, term: 1 } as const;
/** Categories whose own names may have a term as words before the term counts as generic (see `inLanguage`). */
const MAX_NAMES_WITH_TERM = 8;
const FUZZY_LIMIT = 5;
const FUZZY_MIN = 0.4;

function pluralForms(norm: string): string[] {
  const out: string[] = [];
  if (norm.endsWith('ies')) out.push(`${norm.slice(0, -3)}y`);
  if (norm.endsWith('es')) out.push(norm.slice(0, -2));
  if (norm.endsWith('s') && !norm.endsWith('ss')) out.push(norm.slice(0, -1));
  if (norm.endsWith('en')) out.push(norm.slice(0, -2), norm.slice(0, -1));
  if (norm.endsWith('e')) out.push(norm.slice(0, -1));
  return out;
}

function trigrams(s: string): Set<string> {
  const padded = `  ${s} `;
  const out = new Set<string>();
  for (let i = 0; i + 3 <= padded.length; i++) out.add(padded.slice(i, i + 3));
  return out;
}

function levenshtein(a: string, b: string): number {
  if (a === b) return 0;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/** Similarity in [0, 1]: the better of trigram Dice and normalised edit distance, with a bonus for a prefix. */
function similarity(query: string, queryGrams: Set<string>, candidate: string): number {
  const grams = trigrams(candidate);
  let shared = 0;
  for (const g of queryGrams) if (grams.has(g)) shared++;
  const dice = (2 * shared) / (queryGrams.size + grams.size);
  const edit = 1 - levenshtein(query, candidate) / Math.max(query.length, candidate.length);
  const prefix = query.length >= 3 && candidate.startsWith(query) ? 0.5 + (0.5 * query.length) / candidate.length : 0;
  // Below 1: an exact match is not a fuzzy one.
  return Math.min(0.99, Math.max(dice, edit, prefix));
}

/** An entry of the names table: what a folded text names, in which language, and how strongly. */
export type NameEntry = Pick<TaxonomyName, 'norm' | 'slug' | 'lang' | 'kind'>;

/**
 * Where the index reads the taxonomy's names, aliases and terms (about 120,000 in 270 locales): memory
 * (`namesInMemory`, built from the package) or the `category_names` table (`SqlCategoryNames`), so that a
 * server does not hold them all. The two give the same answers (category-index.test.ts compares them).
 */
export interface CategoryNames {
  /** Every entry whose folded text is `norm`. */
  withNorm(norm: string): readonly NameEntry[];
  /** The category's own name in `lang`, else in `lang`'s base language (`pt` for `pt-BR`); undefined when it has neither. */
  localName(slug: string, lang: string): string | undefined;
  /** Every entry in English, `lang` and `lang`'s base language: what fuzzy matching scans. */
  fuzzyPool(lang: string): readonly NameEntry[];
  /** The own names of every category in `lang` or its base language (`lang` first), for listings. */
  localNames(lang: string): ReadonlyMap<string, string>;
}

/** `CategoryNames` over the names in memory (the package's, as `loadTaxonomyNames` reads them). */
export function namesInMemory(allNames: readonly TaxonomyName[]): CategoryNames {
  const byNorm = new Map<string, TaxonomyName[]>();
  const ownNames = new Map<string, Map<string, string>>();
  for (const n of allNames) {
    const list = byNorm.get(n.norm);
    if (list) list.push(n);
    else byNorm.set(n.norm, [n]);
    if (n.isName) {
      if (!ownNames.has(n.slug)) ownNames.set(n.slug, new Map());
      ownNames.get(n.slug)!.set(n.lang, n.name);
    }
  }
  const pools = new Map<string, NameEntry[]>();
  return {
    withNorm: (norm) => byNorm.get(norm) ?? [],
    localName(slug, lang) {
      const names = ownNames.get(slug);
      return names?.get(lang) ?? names?.get(baseLang(lang));
    },
    fuzzyPool(lang) {
      let pool = pools.get(lang);
      if (!pool) {
        const base = baseLang(lang);
        pool = allNames.filter((n) => n.lang === 'en' || n.lang === lang || n.lang === base);
        pools.set(lang, pool);
      }
      return pool;
    },
    localNames(lang) {
      const out = new Map<string, string>();
      for (const [slug, names] of ownNames) {
        const name = names.get(lang) ?? names.get(baseLang(lang));
        if (name !== undefined) out.set(slug, name);
      }
      return out;
    },
  };
}

const baseLang = (lang: string): string => lang.split('-')[0]!;

/** Position in a ranking, unranked last. */
const rank = (ranked: readonly string[], slug: string): number => {
  const i = ranked.indexOf(slug);
  return i < 0 ? ranked.length : i;
};

export function createCategoryIndex(taxonomy: Taxonomy, names: CategoryNames): CategoryIndex {
  const bySlug = new Map(taxonomy.categories.map((c) => [c.slug, c]));
  // Categories of the closed taxonomies only (`building`, `aerodrome`…): a type= may name them, free text
  // may not (`airport hotel` is a hotel, `factory outlet` a shop, `Chrysler Building` a name).
  const sourceOnly = new Set(taxonomy.categories.filter((c) => SOURCE_ONLY_PRESETS.includes(c.presetId)).map((c) => c.slug));
  const children = new Map<string, string[]>();
  for (const c of taxonomy.categories) {
    if (c.parent) children.set(c.parent, [...(children.get(c.parent) ?? []), c.slug]);
  }
  // English names without their generic last word (`Car Repair Shop` → `car repair`) count as aliases.
  const derived = new Map<string, NameEntry[]>();
  for (const c of taxonomy.categories) {
    const folded = foldText(c.name);
    const norm = folded.replace(GENERIC_LAST_WORD, '');
    if (norm === folded || names.withNorm(norm).some((n) => n.slug === c.slug && n.lang === 'en')) continue;
    if (derived.get(norm)?.some((n) => n.slug === c.slug)) continue;
    const entry: NameEntry = { norm, slug: c.slug, lang: 'en', kind: 'alias' };
    derived.set(norm, [...(derived.get(norm) ?? []), entry]);
  }
  const withNorm = (norm: string): readonly NameEntry[] => {
    const extra = derived.get(norm);
    const own = names.withNorm(norm);
    return extra ? [...own, ...extra] : own;
  };
  const osm = createOsmMatcher(taxonomy);
  const depth = (slug: string): number => bySlug.get(slug)!.presetId.split('/').length;

  const name = (slug: string, lang = 'en'): string | undefined => {
    const c = bySlug.get(slug);
    if (!c) return undefined;
    return names.localName(slug, lang) ?? c.name;
  };
  const toCategory = (slug: string, lang?: string): Category => {
    const c = bySlug.get(slug)!;
    return { slug, parent: c.parent, presetId: c.presetId, osmTags: c.osmTags, name: name(slug, lang)! };
  };
  const candidate = (slug: string, score: number, lang?: string): CategoryCandidate => ({ slug, name: name(slug, lang)!, score });

  const hasAncestor = (slug: string, among: ReadonlySet<string>): boolean => {
    for (let p = bySlug.get(slug)!.parent; p; p = bySlug.get(p)!.parent) if (among.has(p)) return true;
    return false;
  };
  const englishWords = new Map(taxonomy.categories.map((c) => [c.slug, ` ${foldText(c.name)} `]));

  /**
   * Votes of every language's entries for the folded term. A sub-preset repeats its parent's search terms, so
   * within one language a category's vote is dropped when its ancestor got one too (`fitness` does not count
   * twelve times for the fitness-station family). A search term that is a word of the category's English name
   * (`pizza` for `Pizza Restaurant`) weighs as a name.
   */
  const exactMatches = (norm: string, lang: string, langWeight: number): Map<string, number> => {
    const scores = new Map<string, number>();
    const entries = withNorm(norm);
    if (entries.length === 0) return scores;
    const base = lang.split('-')[0];
    const perLang = new Map<string, Set<string>>();
    for (const n of entries) {
      if (!perLang.has(n.lang)) perLang.set(n.lang, new Set());
      perLang.get(n.lang)!.add(n.slug);
    }
    for (const n of entries) {
      if (hasAncestor(n.slug, perLang.get(n.lang)!)) continue;
      const inLang = n.lang === lang || n.lang === base;
      const kind = n.kind === 'term' && englishWords.get(n.slug)!.includes(` ${norm} `) ? 'name' : n.kind;
      scores.set(n.slug, (scores.get(n.slug) ?? 0) + WEIGHT[kind] * (inLang ? langWeight : 1));
    }
    return scores;
  };

  // Fuzzy matching scans the names, aliases and terms of English and the requested language (a few thousand).
  const slugEntries: NameEntry[] = [...bySlug.keys()].map((slug) => ({ norm: foldText(slug), slug, lang: 'en', kind: 'name' }));
  const poolFor = (lang: string): Iterable<NameEntry> => [...names.fuzzyPool(lang), ...slugEntries];

  /**
   * The term as written and its singular forms vote together (a singular form's votes count half), so that
   * `restaurants`, a search term of one preset, still goes where `restaurant` names a category in 100 languages.
   * The requested language's votes count triple; without one, English counts 1.5 and so breaks ties
   * (`coffee shop`: a café in English, a cannabis shop in Polish).
   */
  const voted = (norm: string, lang: string | undefined): ResolveResult | null => {
    const voteLang = lang ?? 'en';
    const langWeight = lang ? 3 : 1.5;
    const scores = exactMatches(norm, voteLang, langWeight);
    for (const form of pluralForms(norm)) {
      for (const [slug, s] of exactMatches(form, voteLang, langWeight)) scores.set(slug, (scores.get(slug) ?? 0) + s / 2);
    }
    const ranked = [...scores].sort((a, b) => b[1] - a[1] || depth(a[0]) - depth(b[0]) || (a[0] < b[0] ? -1 : 1));
    const known = ranked.map(([slug]) => slug);
    // The request's language first, its categories in the order of the votes.
    const order = (slugs: string[]) =>
      [...slugs].sort((a, b) => rank(known, a) - rank(known, b) || depth(a) - depth(b) || (a < b ? -1 : 1));
    const local = inLanguage(norm, voteLang, order);
    if (!local && ranked.length === 0) return null;
    const top = ranked[0]?.[1] ?? 1;
    const voteCandidates = ranked.map(([slug, s]) => candidate(slug, Math.round((s / top) * 1000) / 1000, lang));
    if (local) {
      const candidates = [...local.map((slug) => candidate(slug, 1, lang)), ...voteCandidates.filter((c) => !local.includes(c.slug))];
      return { slug: local[0]!, slugs: local, candidates: candidates.slice(0, Math.max(FUZZY_LIMIT, local.length)) };
    }
    // A tie at the top of the votes names every category in it.
    const tied = ranked.filter(([, s]) => s === top).map(([slug]) => slug);
    return { slug: tied[0]!, slugs: tied, candidates: voteCandidates.slice(0, FUZZY_LIMIT) };
  };

  /** Every category's own name in a language (or its base language), folded and padded with spaces, for word tests. */
  const foldedLocalNames = new Map<string, ReadonlyMap<string, string>>();
  const localFolded = (lang: string): ReadonlyMap<string, string> => {
    let padded = foldedLocalNames.get(lang);
    if (!padded) {
      padded = new Map([...names.localNames(lang)].map(([slug, n]) => [slug, ` ${foldText(n)} `]));
      foldedLocalNames.set(lang, padded);
    }
    return padded;
  };

  /**
   * What the term names in one language: the categories whose own name it is (or a plural of), else those
   * that language lists it for or whose own name has it as words, narrowed to those whose name begins
   * with it when any does; null when the language has nothing for it. Ordered by `order` (the votes).
   */
  const inLanguage = (norm: string, lang: string, order: (slugs: string[]) => string[]): string[] | null => {
    const forms = [norm, ...pluralForms(norm)];
    const base = baseLang(lang);
    const entries = forms.flatMap((f) => withNorm(f)).filter((e) => e.lang === lang || e.lang === base);
    const named = [...new Set(entries.filter((e) => e.kind === 'name').map((e) => e.slug))];
    if (named.length > 0) return order(named);
    const local = localFolded(lang);
    // A word in the names of many categories is a generic one (`shop` in Croatian, `centre` in Welsh), not a trade.
    const withWord = GENERIC_LAST_WORD.test(` ${norm}`)
      ? []
      : [...local].filter(([, padded]) => forms.some((f) => padded.includes(` ${f} `))).map(([slug]) => slug);
    const containing = withWord.length <= MAX_NAMES_WITH_TERM ? withWord : [];
    const shared = [...new Set([...entries.map((e) => e.slug), ...containing])];
    if (shared.length === 0) return null;
    const beginning = shared.filter((slug) => forms.some((f) => local.get(slug)?.startsWith(` ${f} `)));
    const chosen = new Set(beginning.length > 0 ? beginning : shared);
    // Sub-presets repeat their parent's terms: the parent stands for them (its subtree is what a search matches).
    return order([...chosen].filter((slug) => !hasAncestor(slug, chosen)));
  };

  const fuzzy = (norm: string, lang: string | undefined): CategoryCandidate[] => {
    const grams = trigrams(norm);
    const best = new Map<string, number>();
    for (const entry of poolFor(lang ?? 'en')) {
      const s = similarity(norm, grams, entry.norm) * (entry.kind === 'term' ? 0.9 : 1);
      if (s > (best.get(entry.slug) ?? 0)) best.set(entry.slug, s);
    }
    return [...best]
      .filter(([, s]) => s >= FUZZY_MIN)
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, FUZZY_LIMIT)
      .map(([slug, s]) => candidate(slug, Math.round(s * 1000) / 1000, lang));
  };

  return {
    resolve(term, lang, options) {
      const trimmed = term.trim();
      if (trimmed === '') return { slug: null, slugs: [], candidates: [] };
      const lower = trimmed.toLowerCase();
      if (options?.inText) {
        const norm = foldText(trimmed);
        const forms = [norm, ...pluralForms(norm)];
        const entries = forms.flatMap((f) => withNorm(f));
        const langs = new Set(['en', ...(lang ? [lang, baseLang(lang)] : [])]);
        // A search term alone is weak evidence in free text (`plaza` is one of the park's): it counts when it
        // is several words (`coffee shop`) or a word of the category's own name in that language (`pizza`).
        const ownNameHas = (e: NameEntry) => forms.some((f) => localFolded(e.lang).get(e.slug)?.includes(` ${f} `));
        const named = entries.some((e) => e.kind !== 'term' || (langs.has(e.lang) && (norm.includes(' ') || ownNameHas(e))));
        if (!named) return { slug: null, slugs: [], candidates: [] };
        const found = voted(norm, lang);
        const slugs = (found?.slugs ?? []).filter((slug) => !sourceOnly.has(slug));
        if (!found || slugs.length === 0) return { slug: null, slugs: [], candidates: [] };
        return { slug: slugs[0]!, slugs, candidates: found.candidates.filter((c) => !sourceOnly.has(c.slug)) };
      }
      if (bySlug.has(lower)) {
        // A slug means that category; other categories whose own name it is in the language come with it (`bank` is the bench in Breton).
        const named = withNorm(foldText(trimmed)).filter(
          (e) => e.kind === 'name' && (e.lang === (lang ?? 'en') || e.lang === baseLang(lang ?? 'en')) && e.slug !== lower,
        );
        const slugs = [lower, ...new Set(named.map((e) => e.slug))];
        return { slug: lower, slugs, candidates: slugs.map((slug) => candidate(slug, 1, lang)) };
      }
      const tag = /^([a-z][a-z0-9_:]*)=(.+)$/.exec(lower);
      if (tag) {
        const slug = osm.match({ [tag[1]!]: tag[2]! })[0];
        if (slug) return { slug, slugs: [slug], candidates: [candidate(slug, 1, lang)] };
      }
      const norm = foldText(trimmed);
      if (norm === '') return { slug: null, slugs: [], candidates: [] };
      // `beauty salon`, `optiker shop`: else the trade without the word for its premises.
      const trade = norm.replace(GENERIC_LAST_WORD, '');
      return (
        voted(norm, lang) ??
        (trade !== norm ? voted(trade, lang) : null) ?? {
          slug: null,
          slugs: [],
          candidates: options?.suggest === false ? [] : fuzzy(norm, lang),
        }
      );
    },
    get: (slug, lang) => (bySlug.has(slug) ? toCategory(slug, lang) : undefined),
    descendants(slug) {
      const out: string[] = [];
      const stack = [...(children.get(slug) ?? [])];
      while (stack.length > 0) {
        const s = stack.pop()!;
        out.push(s);
        stack.push(...(children.get(s) ?? []));
      }
      return out.sort();
    },
    subtree(slug) {
      return bySlug.has(slug) ? [slug, ...this.descendants(slug)] : [];
    },
    name,
    list(lang = 'en') {
      const local = names.localNames(lang);
      return taxonomy.categories.map((c) => ({
        slug: c.slug,
        parent: c.parent,
        presetId: c.presetId,
        osmTags: c.osmTags,
        name: local.get(c.slug) ?? c.name,
      }));
    },
  };
}
