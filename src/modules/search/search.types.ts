/**
 * The shapes the search service works with, apart from its functions, so that the helpers it calls
 * (business-words.ts, city-fallback.ts) use them without importing the service back.
 */
import type { Db } from '../../infra/db/database.ts';
import type { ReadPool } from '../../infra/db/read-pool.ts';
import type { Lru } from '../../infra/lru.ts';
import type { City, CityResolution, Country } from '../geo/gazetteer.ts';
import type { PlaceField } from '../places/places.schema.ts';
import type { ContactReading, ResolvedContact } from './contact-query.ts';
import type { SearchEngine } from './engine/search-engine.ts';
import type { OpenResolution } from './open-filter.ts';
import type { PlaceCriteria, PlaceSort } from './query/criteria.ts';
import type { ApiReadTasks } from './read-tasks.ts';
import type { PlacePage } from './search.reads.ts';
import type { SearchRow } from './search.repository.ts';
import type { SearchFilters } from './search.schema.ts';

/** Resolves `type` terms through the taxonomy (any language or synonym it knows). */
export interface TypeResolver {
  /**
   * The category a term names, in `lang` first, then any language; null when unknown. `categories`: every
   * category it names, that one first (several when the language uses the term for several).
   */
  resolve(term: string, lang: string | null): { slug: string; name: string; categories: Array<{ slug: string; name: string }> } | null;
  /** The same for a term found in free text, where only the taxonomy's names count (not slugs or tags, see `ResolveOptions.inText`). */
  resolveInText(
    term: string,
    lang: string | null,
  ): { slug: string; name: string; categories: Array<{ slug: string; name: string }> } | null;
  /** Closest known categories for an unknown term, best first: their name and slug. */
  suggest(term: string, lang: string | null): Array<{ term: string; slug: string }>;
  /** The slug and every slug below it. */
  descendants(slug: string): string[];
}

/** Resolves `city` and `country` through the gazetteer. */
export interface PlaceNameResolver {
  resolveCity(name: string, countryCodeOrName?: string | null): CityResolution;
  resolveCountry(nameOrCode: string): Country | null;
  /** Every city the name may mean, the chosen one first (`resolveCity` lists at most 10 alternatives). */
  sameNamedCities(name: string, countryCodeOrName?: string | null): City[];
  /**
   * Cities a name GeoNames does not know stands for as an address city: where the places written with it are
   * filed (most places first), then the cities it names as the importers read it (`Wellington City`,
   * `Cedar Rapids/Iowa City`).
   */
  citiesFiledAs(writtenCity: string, countryCode: string | null): Promise<City[]>;
}

export interface SearchDeps {
  db: Db;
  reads: ReadPool<ApiReadTasks>;
  /** Where searches are answered: the in-memory index, or SQL for what it does not hold (`engine/`). */
  engine: SearchEngine;
  /** Loaded on first use, then kept. */
  types: () => Promise<TypeResolver>;
  places: () => PlaceNameResolver;
  /** Typo-tolerant candidates checked at most (`SEARCH_TYPO_CANDIDATES`). */
  typoCandidates: number;
  /** Days ahead the opening-hours pass computes (`OPENING_HOURS_WINDOW_DAYS`); absent: the default. */
  hoursWindowDays?: number;
  /** The clock of `open_now` (tests pass a fixed one); absent: the system's. */
  now?: () => number;
  /** What the names of searches resolved to, per parameters and language (`resolveSearchCached`). */
  resolvedNames: Lru<string, ResolvedNames>;
  /** Saves a new search (`createSearchInserter`: on SQLite, the saves of one event-loop turn commit together). */
  saveSearch: (row: Omit<SearchRow, 'id'>) => Promise<void>;
  /** Each page's places as JSON per list of fields, kept while the page is (`pagePlacesJson`). */
  renderedPages: WeakMap<PlacePage, Map<string, string>>;
}

/** What the names of a search resolved to: everything of a resolved search but the narrowing filters and the order. */
export interface ResolvedNames {
  resolution: SearchResolution;
  categories: string[] | null;
  cityId: number | null;
  countryCode: string | null;
  text: PlaceCriteria['text'];
  textKind: PlaceCriteria['textKind'];
  /** What the text may hold besides names, likeliest first (`contact-query.ts`), looked up as each search runs. */
  contact: ContactReading[];
  near: PlaceCriteria['near'];
  bbox: PlaceCriteria['bbox'];
}

/** Search parameters after schema validation (the names of the query string). */
export type SearchInput = SearchFilters;

export interface CityChoice {
  id: number;
  name: string;
  country: string;
  admin1: string | null;
  population: number;
  lat: number;
  lon: number;
}

/** How the names in a search were understood; returned with every page and stored with the search. */
export interface SearchResolution {
  /**
   * `categories`: every category the term names (several when its language uses it for several); `from`:
   * `query` when the term was found in the free text. Both absent from searches saved before they existed.
   */
  type: {
    input: string;
    slug: string;
    name: string;
    includes: string[];
    categories?: Array<{ slug: string; name: string }>;
    from?: 'type' | 'query';
  } | null;
  /** `chosen_by`: why that city (see `CityChoiceReason`); absent from searches saved before it existed. */
  city: { input: string; chosen: CityChoice; alternatives: CityChoice[]; chosen_by?: CityChoiceReason } | null;
  country: { input: string; code: string; name: string } | null;
  /**
   * Whether typos were tolerated, present when nothing matched exactly and a word is long enough for typos:
   * `tolerated: false` with `reason` when the search is not narrow enough to check its candidates
   * (`not_narrowed`: short words and no city, country, type or small area; `too_many_candidates`: more than
   * `candidate_limit`). Absent from searches saved before it existed.
   */
  typos?: { tolerated: boolean; reason?: 'not_narrowed' | 'too_many_candidates'; candidate_limit: number };
  /** With `open_now` or `open_at` (`open-filter.ts`). */
  open?: OpenResolution;
  /**
   * How the text was read when it held a phone, domain, email or address (`contact-lookup.ts`): the places
   * carrying it come first. Absent when the text is names only, and from searches saved before it existed.
   */
  query?: ResolvedContact;
}

/**
 * Why a search took the city it did: `population`, the most populous of that name (within the country);
 * `matches`, the chosen one had no match and this one, of the same name or where places written with it are
 * filed, has; `address`, GeoNames does not know the name and places with that address city are filed there;
 * `query`, the free text named the city.
 */
export type CityChoiceReason = 'population' | 'matches' | 'address' | 'query';

/** A saved search as the export side sees it. */
export interface SavedSearch {
  /** Public id, `srch_…`. */
  id: string;
  accountId: number;
  params: SearchInput;
  criteria: PlaceCriteria;
  resolution: SearchResolution;
  sort: PlaceSort;
  /** Exact number of places when the search was created. */
  total: number;
  createdAt: string;
}

export interface SearchPageResult {
  search: SavedSearch;
  /** Exact number of places, the account's exclusions applied. */
  total: number;
  /** Exact number of matches the account's suppression list leaves out. */
  suppressed: number;
  /** The page as read; shared with the read cache, so never mutated. `pagePlacesJson` renders it. */
  page: PlacePage;
  fields: PlaceField[];
  /** Opaque cursor of the next page, null on the last page. */
  nextCursor: string | null;
}

export function toChoice(c: City): CityChoice {
  return { id: c.id, name: c.name, country: c.countryCode, admin1: c.admin1, population: c.population, lat: c.lat, lon: c.lon };
}
