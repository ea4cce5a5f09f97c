import { withTimeBudget } from '../../infra/db/time-budget.ts';
import { AppError } from '../../infra/errors.ts';
import { jsonOf } from '../../infra/json.ts';
import { foldText } from '../../infra/text.ts';
import { citiesByIds } from '../geo/geo.ts';
import { accountExclusion, withoutSuppressions } from '../leads/exclusion.ts';
import { defaultWindowDays } from '../places/opening-hours.reads.ts';
import { type PlaceField, parseFields } from '../places/places.schema.ts';
import { searchOtherCities } from './city-fallback.ts';
import { matchContact } from './contact-lookup.ts';
import type { FacetDimension } from './engine/bitmap-index.ts';
import { describeOpen, openFilterOf, unparsedCriteria } from './open-filter.ts';
import { type MultiPolygonCoordinates, parseSearchPolygon, polygonBbox } from './polygon.ts';
import { fuzzyNarrowed } from './query/criteria.sql.ts';
import type { PlaceCriteria, PlaceSort } from './query/criteria.ts';
import { allowedEdits } from './query/typos.ts';
import { bad, queryWords, type ResolvedSearch, resolveSearchCached } from './resolve.ts';
import {
  asSaved,
  decodeSearchCursor,
  encodeSearchCursor,
  forAccount,
  getSearchForAccount,
  newSearchId,
  onlyNewOf,
  searchAsItRunsNow,
} from './saved-searches.ts';
import { type PlacePage, rowCheck } from './search.reads.ts';
import {
  defaultPerPage,
  type FacetsQuery,
  type FacetsResponse,
  type MapSearchBody,
  type MapSearchQuery,
  type V1SearchInput,
} from './search.schema.ts';
import type { SavedSearch, SearchDeps, SearchInput, SearchPageResult, SearchResolution } from './search.types.ts';

/**
 * The operations of search: a new search (saved, or not for `/v1/search`), a page of a saved one, facet counts.
 * Each new one runs over one private pipeline: `prepare` (names resolved, open filter, the account's
 * exclusions), then `run` (the engine, with its typo and other-city fallbacks, under the request's time budget).
 */

function toPage(search: SavedSearch, page: PlacePage, fields: PlaceField[], suppressed: number): SearchPageResult {
  return { search, total: page.total, suppressed, page, fields, nextCursor: page.next ? encodeSearchCursor(search.id, page.next) : null };
}

/**
 * Matches the account's suppression list keeps out of a result of `total` places: the same criteria
 * counted without the list, less `total` (both counts are exact and cached per catalog and list version).
 */
async function suppressedCount(deps: SearchDeps, criteria: PlaceCriteria, total: number): Promise<number> {
  if (!criteria.exclude?.suppressed) return 0;
  const unsuppressed = await deps.engine.countMatches(forAccount(asSaved(criteria), withoutSuppressions(criteria.exclude)));
  return Math.max(0, unsuppressed - total);
}

/**
 * Whether a search that found nothing has matches the account's exclusions left out: then the search
 * found what was asked, and no typo-tolerant run or other city of that name is tried instead.
 */
async function onlyExcluded(deps: SearchDeps, criteria: PlaceCriteria): Promise<boolean> {
  return criteria.exclude ? (await deps.engine.countMatches(asSaved(criteria))) > 0 : false;
}

/** Every filter of a search; a cursor continues a saved search and takes none of them. */
const filterNames = [
  'type',
  'city',
  'country',
  'query',
  'min_rating',
  'has_phone',
  'has_website',
  'has_email',
  'has_social',
  'include_closed',
  'email_status',
  'phone_type',
  'website_status',
  'min_confidence',
  'min_lead_score',
  'updated_since',
  'verified_since',
  'open_now',
  'open_at',
  'near',
  'radius',
  'bbox',
  'sort',
  'lang',
  'only_new',
] as const;
/** What a new search must name at least one of: the others only narrow or order. */
export const criteriaNames = ['type', 'city', 'country', 'query', 'near', 'bbox'] as const;

/** The open filter's parameters of a request. */
type OpenParams = Pick<SearchInput, 'open_now' | 'open_at'>;

/** What every new search needs to know besides its filters. */
interface PrepareOptions {
  lang: string | null;
  /** Where the parameters came from, for the open filter's errors: `querystring` or `body`. */
  location: 'body' | 'querystring';
  /** The account whose exclusions apply (its suppression list; `onlyNew`, its leads); none for an anonymous count. */
  accountId?: number;
  onlyNew: boolean;
  /** A drawn area: searched as its bounding box, each place then tested (`rowCheck`). */
  polygon?: MultiPolygonCoordinates;
}

/** A new search as this account runs it now: its names resolved, the open filter, the drawn area, the account's exclusions. */
async function prepare(deps: SearchDeps, filters: SearchInput, open: OpenParams, options: PrepareOptions): Promise<ResolvedSearch> {
  const openAt = openFilterOf(open, clockOf(deps)(), options.location, windowDaysOf(deps));
  const [named, exclusion] = await Promise.all([
    resolveSearchCached(deps, filters, options.lang),
    options.accountId === undefined ? null : accountExclusion(deps.db, options.accountId, { onlyNew: options.onlyNew }),
  ]);
  // A drawn area is not remembered with the names (a polygon is rarely asked twice, and may be large).
  const drawn = options.polygon
    ? { ...named, criteria: { ...named.criteria, bbox: polygonBbox(options.polygon), polygon: options.polygon } }
    : named;
  const resolved = await withContact(deps, withOpen(drawn, openAt));
  return { ...resolved, criteria: forAccount(resolved.criteria, exclusion) };
}

/**
 * The search with the contact its text held (a phone, domain, email or address, `contact-query.ts`) looked up
 * now: when places carry it, they match first (`PlaceCriteria.contact`) and the rest of the text is searched by
 * name; when none does, the whole text is searched by name as before. Either way `resolved.query` says how the
 * text was read. Not remembered with the names: the catalog changes.
 */
async function withContact(deps: SearchDeps, resolved: ResolvedSearch): Promise<ResolvedSearch> {
  const readings = resolved.contact ?? [];
  if (readings.length === 0) return resolved;
  let found = await matchContact(deps, readings[0]!);
  let reading = readings[0]!;
  for (const next of readings.slice(1)) {
    if (found.ids.length + found.related.length > 0) break;
    const other = await matchContact(deps, next);
    if (other.ids.length + other.related.length > 0) [found, reading] = [other, next];
  }
  const resolution = { ...resolved.resolution, query: found.resolved };
  if (found.ids.length + found.related.length === 0) return { ...resolved, resolution };
  const rest = queryWords(reading.rest);
  const sameText = reading.rest === reading.input;
  const criteria: PlaceCriteria = {
    ...resolved.criteria,
    // The rest of the text by name; the kind of business it named stays only when the rest is the whole text.
    text: rest.length > 0 ? { words: rest, mode: 'substring' } : null,
    textKind: sameText ? (resolved.criteria.textKind ?? null) : null,
    contact: { ids: found.ids, related: found.related },
  };
  if (sameText) return { ...resolved, criteria, resolution };
  // What the whole text named (a kind of business, a city in it) no longer applies to the rest.
  const { type, city } = resolution;
  return {
    ...resolved,
    criteria,
    resolution: { ...resolution, type: type?.from === 'query' ? null : type, city: city?.chosen_by === 'query' ? null : city },
  };
}

/** A prepared search run: its first page, the criteria that produced it, how it was understood, what the suppression list left out. */
async function run(
  deps: SearchDeps,
  prepared: ResolvedSearch,
  limit: number,
): Promise<{ page: PlacePage; criteria: PlaceCriteria; resolution: SearchResolution; suppressed: number }> {
  const { page, criteria, resolution: understood } = await withBudget(deps, () => runWithFallbacks(deps, prepared, limit));
  const resolution = await withBudget(deps, () => withOpenResolution(deps, criteria, understood));
  const suppressed = await withBudget(deps, () => suppressedCount(deps, criteria, page.total));
  return { page, criteria, resolution, suppressed };
}

/** A new search must name at least one of `criteriaNames` (the others only narrow or order). */
function requireCriterion(params: Partial<Record<(typeof criteriaNames)[number], unknown>>, detail: string): void {
  if (criteriaNames.some((n) => params[n] !== undefined)) return;
  throw new AppError('validation_failed', `${detail}: at least one of ${criteriaNames.join(', ')}`, {
    errors: [{ field: 'querystring', message: 'needs at least one search parameter', allowed: [...criteriaNames] }],
  });
}

/**
 * A search request as `GET /api/v2/map/search` takes it: a `cursor` continues a saved search (with
 * `per_page` and `fields` only); otherwise the filters start a new search, which must name at least one
 * of `criteriaNames`.
 */
export async function searchPlaces(
  deps: SearchDeps,
  accountId: number,
  query: MapSearchQuery,
  lang: string | null,
): Promise<SearchPageResult> {
  const fields = parseFields(query.fields);
  if (query.cursor !== undefined) {
    const extra = filterNames.filter((n) => query[n] !== undefined);
    if (extra.length > 0) {
      throw new AppError('validation_failed', 'A cursor continues a saved search: send it with per_page and fields only', {
        errors: extra.map((n) => ({
          field: `querystring.${n}`,
          message: 'is not allowed with cursor',
          allowed: ['cursor', 'per_page', 'fields'],
        })),
      });
    }
    return continueSearch(deps, accountId, query.cursor, { perPage: query.per_page ?? defaultPerPage, fields });
  }
  requireCriterion(query, 'Say what to search for');
  const { per_page: perPage = defaultPerPage, fields: _fields, cursor: _cursor, lang: _lang, ...input } = query;
  return saveNewSearch(deps, accountId, input, { perPage, fields, lang: lang ?? query.lang?.toLowerCase() ?? null });
}

/**
 * `POST /api/v2/map/search`: a new search in a drawn area (checked by `parseSearchPolygon`: 400 naming
 * the ring or position at fault), with the filters of the GET form; saved like it, so it pages with
 * `cursor` and exports by `search_id`.
 */
export async function searchPlacesInArea(
  deps: SearchDeps,
  accountId: number,
  body: MapSearchBody,
  lang: string | null,
): Promise<SearchPageResult> {
  const fields = parseFields(body.fields);
  const polygon = parseSearchPolygon(body.polygon, 'body.polygon');
  const { per_page: perPage = defaultPerPage, fields: _fields, lang: _lang, polygon: _polygon, ...input } = body;
  return saveNewSearch(deps, accountId, input, { perPage, fields, lang: lang ?? body.lang?.toLowerCase() ?? null, polygon });
}

/**
 * Runs a new search for an account and saves it. Text queries first match names by substring; when
 * nothing matches, they run again tolerating typos (see search.reads.ts).
 */
export async function saveNewSearch(
  deps: SearchDeps,
  accountId: number,
  input: SearchInput,
  options: { perPage: number; fields: PlaceField[]; lang: string | null; polygon?: MultiPolygonCoordinates },
): Promise<SearchPageResult> {
  const { only_new: onlyNew, open_now: openNow, open_at: openAt, ...filters } = input;
  const prepared = await prepare(
    deps,
    filters,
    { open_now: openNow, open_at: openAt },
    {
      lang: options.lang,
      location: options.polygon ? 'body' : 'querystring',
      accountId,
      onlyNew: onlyNew === true,
      polygon: options.polygon,
    },
  );
  const { page, criteria: ran, resolution, suppressed } = await run(deps, prepared, options.perPage);
  if (page.candidateLimit !== undefined && ran.polygon && ran.text?.mode !== 'fuzzy') {
    throw bad('body.polygon', `holds more than ${page.candidateLimit} places with these filters; draw a smaller area or add filters`, {
      maxCandidates: page.candidateLimit,
    });
  }
  const criteria = asSaved(ran);
  const { sort } = prepared;
  const params = options.polygon ? { ...input, polygon: { type: 'MultiPolygon', coordinates: options.polygon } } : input;
  const search: SavedSearch = {
    id: newSearchId(),
    accountId,
    params,
    criteria,
    resolution,
    sort,
    total: page.total,
    createdAt: new Date().toISOString(),
  };
  await deps.saveSearch({
    public_id: search.id,
    account_id: accountId,
    params: JSON.stringify(params),
    criteria: jsonOf(criteria),
    resolution: jsonOf(resolution),
    sort,
    total: page.total,
    created_at: search.createdAt,
  });
  return toPage(search, page, options.fields, suppressed);
}

/**
 * A search that is not saved: the exact total and the first page (for `/v1/search`). It needs one of
 * `query`, `city`, `type`; `location` names where the parameters came from (`body` or `querystring`).
 */
export async function quickSearch(
  deps: SearchDeps,
  params: V1SearchInput | undefined,
  options: { lang: string | null; location: 'body' | 'querystring'; accountId?: number },
): Promise<{ total: number; suppressed: number; page: PlacePage; resolution: SearchResolution }> {
  if (!params || (params.query === undefined && params.city === undefined && params.type === undefined)) {
    throw new AppError(
      'validation_failed',
      'Expected a JSON body (or query parameters) with at least one of query, city, type, e.g. {"query": "ratskeller", "city": "München"}',
      {
        errors: [
          {
            field: options.location,
            message: 'needs at least one of query, city, type',
            allowed: ['query', 'city', 'country', 'type', 'include_closed', 'per_page'],
          },
        ],
      },
    );
  }
  const { per_page: perPage = defaultPerPage, open_now: openNow, open_at: openAt, ...input } = params;
  const prepared = await prepare(
    deps,
    input,
    { open_now: openNow, open_at: openAt },
    { lang: options.lang, location: options.location, accountId: options.accountId, onlyNew: false },
  );
  const { page, resolution, suppressed } = await run(deps, prepared, perPage);
  return { total: page.total, suppressed, page, resolution };
}

const clockOf = (deps: SearchDeps): (() => number) => deps.now ?? Date.now;
const windowDaysOf = (deps: SearchDeps): number => deps.hoursWindowDays ?? defaultWindowDays;

/**
 * The search with its open filter. The engine answers it truly or not at all: from the last opening-hours pass
 * with the places changed since decided directly, or after waiting for a pass within the time budget, or 503
 * `not_ready` (docs/opening-hours.md); so no search is saved with a total the tables could not give.
 */
function withOpen(resolved: ResolvedSearch, open: ReturnType<typeof openFilterOf>): ResolvedSearch {
  return open ? { ...resolved, criteria: { ...resolved.criteria, open } } : resolved;
}

/** `resolved.open` of a search with an open filter: the moment and how many matches have hours that could not be parsed. */
async function withOpenResolution(deps: SearchDeps, criteria: PlaceCriteria, resolution: SearchResolution): Promise<SearchResolution> {
  if (!criteria.open) return resolution;
  // The count first: it waits for the pass the page waited for, which `computed_at` then names.
  const unparsed = await deps.engine.countMatches(unparsedCriteria({ ...criteria, open: criteria.open }));
  const pass = await deps.engine.hoursComputedAt();
  return { ...resolution, open: { ...describeOpen(criteria.open), unparsed, computed_at: pass } };
}

/**
 * The reads of one request under one time budget (`SEARCH_TIME_BUDGET_MS`, held by the read pool): past it
 * the running statement is stopped and the request answers 503 `time_budget_exceeded`.
 */
function withBudget<R>(deps: SearchDeps, fn: () => Promise<R>): Promise<R> {
  const budgetMs = deps.reads.budgetMs;
  return budgetMs === undefined ? fn() : withTimeBudget(budgetMs, fn);
}

/**
 * The search as resolved, then, when it finds nothing, with typos tolerated (`runWithTypoFallback`), then in
 * another city of the same name (`searchOtherCities`). Answers what produced the page.
 */
async function runWithFallbacks(
  deps: SearchDeps,
  resolved: ResolvedSearch,
  limit: number,
): Promise<{ page: PlacePage; criteria: PlaceCriteria; resolution: SearchResolution }> {
  const first = await runWithTypoFallback(deps, resolved.criteria, resolved.sort, limit);
  const resolution = first.typos ? { ...resolved.resolution, typos: first.typos } : resolved.resolution;
  if (first.page.total > 0 || (await onlyExcluded(deps, first.criteria))) return { page: first.page, criteria: first.criteria, resolution };
  return (
    (await searchOtherCities(deps, resolved.criteria, resolved.resolution, resolved.sort, limit)) ?? {
      page: first.page,
      criteria: first.criteria,
      resolution,
    }
  );
}

/**
 * Exact substring matching first; when it finds nothing, the same search tolerating typos, if its
 * candidates are few enough to check (`fuzzyNarrowed`, `fuzzyCandidateLimit`). Answers the page, the
 * criteria that produced it (a new object for the typo-tolerant run: criteria are shared) and, when typos
 * were considered, whether they were tolerated.
 */
async function runWithTypoFallback(
  deps: SearchDeps,
  criteria: PlaceCriteria,
  sort: PlaceSort,
  limit: number,
): Promise<{ page: PlacePage; criteria: PlaceCriteria; typos?: SearchResolution['typos'] }> {
  const page = await deps.engine.searchPage(criteria, sort, null, limit, deps.typoCandidates);
  if (page.candidateLimit !== undefined) return { page, criteria };
  if (
    page.total > 0 ||
    !criteria.text ||
    !criteria.text.words.some((w) => allowedEdits(foldText(w)) > 0) ||
    (await onlyExcluded(deps, criteria))
  )
    return { page, criteria };
  // Typos are tolerated in names only: the kind of business the text named stays exact.
  const fuzzy: PlaceCriteria = { ...criteria, text: { ...criteria.text, mode: 'fuzzy' }, textKind: null };
  const bound = { candidate_limit: deps.typoCandidates };
  // Short words alone would mean checking every place of the catalog or of a world-sized box: they need a
  // city, country, type or small area too.
  if (!fuzzyNarrowed(fuzzy)) return { page, criteria, typos: { tolerated: false, reason: 'not_narrowed', ...bound } };
  const typoPage = await deps.engine.searchPage(fuzzy, sort, null, limit, deps.typoCandidates);
  if (typoPage.candidateLimit !== undefined)
    return { page, criteria, typos: { tolerated: false, reason: 'too_many_candidates', ...bound } };
  return { page: typoPage, criteria: fuzzy, typos: { tolerated: true, ...bound } };
}

/** The next page of a saved search, from a cursor of a previous page. */
export async function continueSearch(
  deps: SearchDeps,
  accountId: number,
  cursor: string,
  options: { perPage: number; fields: PlaceField[] },
): Promise<SearchPageResult> {
  const { searchId, key } = decodeSearchCursor(cursor);
  const search = await getSearchForAccount(deps.db, accountId, searchId);
  const criteria = forAccount(search.criteria, await accountExclusion(deps.db, accountId, { onlyNew: onlyNewOf(search) }));
  const page = await withBudget(deps, () => deps.engine.searchPage(criteria, search.sort, key, options.perPage, deps.typoCandidates));
  return toPage(search, page, options.fields, await withBudget(deps, () => suppressedCount(deps, criteria, page.total)));
}

/**
 * A page of a saved search of this account: the first, or the one after `cursor`, which must be a cursor
 * of that same search (`not_found` otherwise, like another account's search).
 */
export async function savedSearchPage(
  deps: SearchDeps,
  accountId: number,
  searchId: string,
  cursor: string | undefined,
  perPage: number,
): Promise<SearchPageResult> {
  const search = await getSearchForAccount(deps.db, accountId, searchId);
  const after = cursor === undefined ? null : decodeSearchCursor(cursor);
  if (after && after.searchId !== search.id) throw new AppError('not_found', `This page link belongs to another search than ${search.id}`);
  const criteria = forAccount(search.criteria, await accountExclusion(deps.db, accountId, { onlyNew: onlyNewOf(search) }));
  const page = await withBudget(deps, () =>
    deps.engine.searchPage(criteria, search.sort, after?.key ?? null, perPage, deps.typoCandidates),
  );
  return toPage(search, page, [], await withBudget(deps, () => suppressedCount(deps, criteria, page.total)));
}

/**
 * `GET /api/v2/map/facets`: the exact number of matches of a search per value of a dimension, with the
 * search's rules (at least one criterion, names resolved the same way, the account's exclusions applied).
 * Not saved.
 */
export async function searchFacets(deps: SearchDeps, accountId: number, query: FacetsQuery, lang: string | null): Promise<FacetsResponse> {
  const { by, lang: queryLang, only_new: onlyNew, open_now: openNow, open_at: openAt, ...filters } = query;
  requireCriterion(filters, 'Say what to count');
  const prepared = await prepare(
    deps,
    filters,
    { open_now: openNow, open_at: openAt },
    { lang: lang ?? queryLang?.toLowerCase() ?? null, location: 'querystring', accountId, onlyNew: onlyNew === true },
  );
  const counted = await countFacets(deps, prepared.criteria, by);
  if (by !== 'city') return counted;
  // A GeoNames id alone says little to a reader: each city with its name and country.
  const cities = new Map(
    (
      await citiesByIds(
        deps.db,
        counted.values.map((v) => Number(v.value)),
      )
    ).map((c) => [c.id, c]),
  );
  return {
    ...counted,
    values: counted.values.map((v) => {
      const city = cities.get(Number(v.value));
      return city ? { ...v, name: city.name, country: city.country_code } : v;
    }),
  };
}

/**
 * A saved search's exact matches per value of a dimension, as the search runs now for its account (its
 * exclusions applied, as `searchFacets` applies them), under the request's time budget. Null when the search
 * holds what facets do not count: a drawn area or typo-tolerant text, which are decided row by row
 * (`rowCheck`), so a count by value would not be exact. An open filter counts at the search's own moment.
 */
export async function savedSearchFacets(deps: SearchDeps, search: SavedSearch, by: FacetDimension): Promise<FacetsResponse | null> {
  if (rowCheck(search.criteria) !== null) return null;
  const running = await searchAsItRunsNow(deps.db, search);
  return countFacets(deps, running.criteria, by);
}

/** The matches per value and their exact total, both from the engine under one time budget. */
async function countFacets(deps: SearchDeps, criteria: PlaceCriteria, by: FacetDimension): Promise<FacetsResponse> {
  const [values, total] = await withBudget(deps, () => Promise.all([deps.engine.facets(criteria, by), deps.engine.countMatches(criteria)]));
  return { by, total, values };
}
