import type { Db } from '../../infra/db/database.ts';
import { decodeCursor, encodeCursor } from '../../infra/cursor.ts';
import { AppError } from '../../infra/errors.ts';
import { deepFreeze, jsonOf } from '../../infra/json.ts';
import { randomBytesFromPool } from '../../infra/random.ts';
import { foldText } from '../../infra/text.ts';
import { withTimeBudget } from '../../infra/db/time-budget.ts';
import { allowedEdits, fuzzyNarrowed, noCriteria, type PlaceCriteria, type PlaceKey, type PlaceSort } from '../places/places.repository.ts';
import { streamPlaces } from '../places/places.stream.ts';
import { parseFields, pickFields, placeRowToPlace, type Place, type PlaceField, type PublicPlaceRow } from '../places/places.schema.ts';
import { businessKindOfQuery } from './business-words.ts';
import { searchOtherCities } from './city-fallback.ts';
import { countMatches, rowCheck, type PlacePage } from './search.reads.ts';
import { checkAgainstSchema } from '../../infra/http/check-schema.ts';
import {
  defaultPerPage,
  MapSearchQuerySchema,
  radiusM,
  type MapSearchBody,
  type FacetsQuery,
  type FacetsResponse,
  type MapSearchQuery,
  type V1SearchInput,
} from './search.schema.ts';
import { parseSearchPolygon, polygonBbox, type MultiPolygonCoordinates } from './polygon.ts';
import { findSearchById, findSearchForAccount, insertSearch, listRecentSearches, type SearchRow } from './search.repository.ts';
import { accountExclusion, withoutSuppressions } from '../leads/exclusion.ts';
import { citiesByIds } from '../geo/geo.ts';
import { defaultWindowDays } from '../places/opening-hours.repository.ts';
import { describeOpen, openFilterOf, trueOpenCriteria, unparsedCriteria } from './open-filter.ts';
import type { AccountExclusion } from '../places/places.repository.ts';
import type { FacetDimension } from './engine/search-engine.ts';

export type {
  CityChoice,
  CityChoiceReason,
  PlaceNameResolver,
  SavedSearch,
  SearchDeps,
  SearchInput,
  SearchPageResult,
  SearchResolution,
  TypeResolver,
} from './search.types.ts';
export { toChoice } from './search.types.ts';
export type { FacetDimension } from './engine/search-engine.ts';
// The public place shape's field list is the places module's; importable from here as before.
export { parseFields };
import {
  toChoice,
  type CityChoiceReason,
  type SavedSearch,
  type SearchDeps,
  type SearchInput,
  type SearchPageResult,
  type SearchResolution,
} from './search.types.ts';

function bad(field: string, message: string, allowed?: unknown): AppError {
  return new AppError('validation_failed', `${field}: ${message}`, {
    errors: [allowed === undefined ? { field, message } : { field, message, allowed }],
  });
}

function parseNear(near: string, radius: number): PlaceCriteria['near'] {
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*$/.exec(near);
  const lat = Number(m?.[1]);
  const lon = Number(m?.[2]);
  if (!m || Math.abs(lat) > 90 || Math.abs(lon) > 180)
    throw bad('querystring.near', 'must be lat,lon in degrees (-90..90, -180..180)', { pattern: 'lat,lon', example: '48.137,11.575' });
  return { lat, lon, radiusM: radius };
}

function parseBbox(bbox: string): [number, number, number, number] {
  const parts = bbox.split(',').map((p) => Number(p.trim()));
  const allowed = { pattern: 'minLon,minLat,maxLon,maxLat', example: '11.50,48.10,11.65,48.18' };
  if (parts.length !== 4 || parts.some((p) => !Number.isFinite(p)))
    throw bad('querystring.bbox', 'must be four numbers: minLon,minLat,maxLon,maxLat', allowed);
  const [minLon, minLat, maxLon, maxLat] = parts as [number, number, number, number];
  if (Math.abs(minLon) > 180 || Math.abs(maxLon) > 180 || Math.abs(minLat) > 90 || Math.abs(maxLat) > 90) {
    throw bad('querystring.bbox', 'longitudes must be within -180..180 and latitudes within -90..90', allowed);
  }
  if (minLon > maxLon || minLat > maxLat)
    throw bad('querystring.bbox', 'must be ordered minLon,minLat,maxLon,maxLat (min not above max)', allowed);
  return [minLon, minLat, maxLon, maxLat];
}

/** Words of a free-text query: split on anything that is not a letter or digit. */
export function queryWords(query: string): string[] {
  return query
    .split(/[^\p{L}\p{N}\p{M}]+/u)
    .filter((w) => w.length > 0)
    .slice(0, 8);
}

export interface ResolvedSearch {
  criteria: PlaceCriteria;
  resolution: SearchResolution;
  sort: PlaceSort;
}

/** The filters that only narrow, and the order: no name to resolve; applied to the remembered names per request. */
type SearchFilters = Pick<SearchInput, 'min_rating' | 'has_phone' | 'has_website' | 'has_email' | 'has_social' | 'include_closed' | 'sort'>;

/** What the names of a search resolved to: everything of `ResolvedSearch` but the narrowing filters and the order. */
interface ResolvedNames {
  resolution: SearchResolution;
  categories: string[] | null;
  cityId: number | null;
  countryCode: string | null;
  text: PlaceCriteria['text'];
  textKind: PlaceCriteria['textKind'];
  near: PlaceCriteria['near'];
  bbox: PlaceCriteria['bbox'];
}

const resolvedNames = new WeakMap<Pick<SearchDeps, 'types' | 'places'>, Map<string, ResolvedNames>>();
const resolvedNamesSize = 5000;

/**
 * Turns parameters into criteria: names resolved (`resolveNames`, 400 with candidates when unknown), values
 * checked. The names are remembered per deps for the same parameters and language: the taxonomy and the
 * place names do not change while the process runs, and searches repeat their type and city with other
 * filters (`SearchFilters`, left out of the key and applied each time). The names are frozen and shared, so
 * the resolution's JSON is written once too (`jsonOf`). Errors are not remembered.
 */
export async function resolveSearchCached(
  deps: Pick<SearchDeps, 'types' | 'places'>,
  input: SearchInput,
  lang: string | null,
): Promise<ResolvedSearch> {
  const { min_rating, has_phone, has_website, has_email, has_social, include_closed, sort, ...rest } = input;
  // The order matters to the names only where it is checked against them (`distance` needs `near`).
  const named = sort === 'distance' ? { ...rest, sort } : rest;
  let cache = resolvedNames.get(deps);
  if (!cache) {
    cache = new Map();
    resolvedNames.set(deps, cache);
  }
  const key = JSON.stringify([named, lang]);
  let names = cache.get(key);
  if (names) {
    // Most recently used last: Map keeps insertion order, so the first key is the one to drop.
    cache.delete(key);
  } else {
    names = deepFreeze(await resolveNames(deps, named, lang));
    if (cache.size >= resolvedNamesSize) cache.delete(cache.keys().next().value!);
  }
  cache.set(key, names);
  return deepFreeze(withFilters(names, { min_rating, has_phone, has_website, has_email, has_social, include_closed, sort }));
}

/** The criteria of resolved names with the narrowing filters. */
function withFilters(names: ResolvedNames, input: SearchFilters): ResolvedSearch {
  const criteria: PlaceCriteria = {
    categories: names.categories,
    // The city implies its country: filtering on both would only hide the city_id index.
    cityId: names.cityId,
    countryCode: names.cityId === null ? names.countryCode : null,
    text: names.text,
    ...(names.textKind ? { textKind: names.textKind } : {}),
    minRating: input.min_rating ?? null,
    hasPhone: input.has_phone ?? null,
    hasWebsite: input.has_website ?? null,
    hasEmail: input.has_email ?? null,
    // Only when asked, as `includeClosed`: other searches' criteria (saved searches, cache keys) stay as they were.
    ...(input.has_social !== undefined ? { hasSocial: input.has_social } : {}),
    near: names.near,
    bbox: names.bbox,
    // Only when asked: the criteria of every other search stay as they were (saved searches, cache keys).
    ...(input.include_closed === true ? { includeClosed: true } : {}),
  };
  return { criteria, resolution: names.resolution, sort: input.sort ?? 'relevance' };
}

/** The names of a search resolved (400 with candidates when unknown), its place and order checked. */
async function resolveNames(deps: Pick<SearchDeps, 'types' | 'places'>, input: SearchInput, lang: string | null): Promise<ResolvedNames> {
  const resolution: SearchResolution = { type: null, city: null, country: null };
  let categories: string[] | null = null;
  if (input.type !== undefined) {
    const types = await deps.types();
    const found = types.resolve(input.type, lang);
    if (!found) {
      const candidates = types.suggest(input.type, lang);
      throw new AppError('unknown_value', `type "${input.type}" is not a kind of business the taxonomy knows`, {
        errors: [{ field: 'querystring.type', message: 'is not a known kind of business', allowed: candidates.map((c) => c.term) }],
        candidates,
      });
    }
    // A term its language uses for several categories matches all of them.
    categories = [...new Set(found.categories.flatMap((c) => types.descendants(c.slug)))];
    resolution.type = {
      input: input.type,
      slug: found.slug,
      name: found.name,
      includes: categories,
      categories: found.categories,
      from: 'type',
    };
  }

  let countryCode: string | null = null;
  if (input.country !== undefined) {
    const country = deps.places().resolveCountry(input.country);
    if (!country) {
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
    countryCode = country.code;
    resolution.country = { input: input.country, code: country.code, name: country.name };
  }

  let cityId: number | null = null;
  if (input.city !== undefined) {
    let found = deps.places().resolveCity(input.city, countryCode);
    let chosenBy: CityChoiceReason = 'population';
    if (!found.chosen) {
      // Not a GeoNames name: where the places written with that address city are filed, if any.
      const [filed, ...others] = await deps.places().citiesFiledAs(input.city, countryCode);
      if (filed) found = { ...found, chosen: filed, alternatives: others };
      chosenBy = 'address';
    }
    if (!found.chosen) {
      const candidates = found.candidates.map((c) => ({
        name: c.city.name,
        country: c.city.countryCode,
        population: c.city.population,
        id: c.city.id,
      }));
      throw new AppError('unknown_value', `city "${input.city}"${countryCode ? ` in ${countryCode}` : ''} is not a known city`, {
        errors: [
          { field: 'querystring.city', message: 'is not a known city name', allowed: candidates.map((c) => `${c.name} (${c.country})`) },
        ],
        candidates,
      });
    }
    cityId = found.chosen.id;
    resolution.city = {
      input: input.city,
      chosen: toChoice(found.chosen),
      alternatives: found.alternatives.map(toChoice),
      chosen_by: chosenBy,
    };
  }

  const near = input.near !== undefined ? parseNear(input.near, input.radius ?? radiusM.default) : null;
  if (input.radius !== undefined && input.near === undefined) throw bad('querystring.radius', 'needs near=lat,lon');
  const sort = input.sort ?? 'relevance';
  if (sort === 'distance' && !near)
    throw bad('querystring.sort', 'sort=distance needs near=lat,lon', ['relevance', 'rating', 'review_count', 'name']);

  let text: PlaceCriteria['text'] = null;
  let textKind: PlaceCriteria['textKind'] = null;
  if (input.query !== undefined) {
    const words = queryWords(input.query);
    if (words.length === 0) throw bad('querystring.query', 'must contain at least one letter or digit');
    text = { words, mode: 'substring' };
    if (input.type === undefined) {
      const placeGiven = [input.city, input.country, input.near, input.bbox].some((v) => v !== undefined);
      const kind = await businessKindOfQuery(deps, words, lang, placeGiven);
      if (kind) {
        textKind = kind.textKind;
        resolution.type = kind.type;
        if (kind.city) resolution.city = kind.city;
      }
    }
  }

  const bbox = input.bbox !== undefined ? parseBbox(input.bbox) : null;
  return { resolution, categories, cityId, countryCode, text, textKind, near, bbox };
}

/** A page cursor of a saved search: the search and the position after which the next page starts. */
export function encodeSearchCursor(searchId: string, key: PlaceKey): string {
  return encodeCursor({ s: searchId, k: key.key, i: key.id });
}

export function decodeSearchCursor(cursor: string): { searchId: string; key: PlaceKey } {
  return decodeCursor(
    cursor,
    (value) => {
      const v = value as { s?: unknown; k?: unknown; i?: unknown } | null;
      if (
        typeof v?.s === 'string' &&
        /^srch_[a-z2-7]{16}$/.test(v.s) &&
        (typeof v.k === 'number' || typeof v.k === 'string') &&
        Number.isSafeInteger(v.i)
      ) {
        return { searchId: v.s, key: { key: v.k, id: v.i as number } };
      }
      return undefined;
    },
    { field: 'querystring.cursor', message: 'is not a cursor this API issued: use links.next of a previous page' },
  );
}

const searchIdAlphabet = 'abcdefghijklmnopqrstuvwxyz234567';

function newSearchId(): string {
  const bytes = randomBytesFromPool(16);
  let id = 'srch_';
  for (let i = 0; i < 16; i++) id += searchIdAlphabet[bytes[i]! & 31];
  return id;
}

/** A saved search as a list shows it: what it looked for, how that resolved, how many places it found. */
export interface SearchSummary {
  id: string;
  params: SearchInput;
  resolution: SearchResolution;
  total: number;
  createdAt: string;
}

/** The account's most recent saved searches, newest first. */
export async function recentSearches(db: Db, accountId: number, limit: number): Promise<SearchSummary[]> {
  const rows = await listRecentSearches(db, accountId, limit);
  return rows.map((row) => ({
    id: row.public_id,
    params: JSON.parse(row.params) as SearchInput,
    resolution: JSON.parse(row.resolution) as SearchResolution,
    total: Number(row.total),
    createdAt: row.created_at,
  }));
}

function rowToSavedSearch(row: SearchRow): SavedSearch {
  return {
    id: row.public_id,
    accountId: Number(row.account_id),
    params: JSON.parse(row.params) as SearchInput,
    criteria: JSON.parse(row.criteria) as PlaceCriteria,
    resolution: JSON.parse(row.resolution) as SearchResolution,
    sort: row.sort as PlaceSort,
    total: Number(row.total),
    createdAt: row.created_at,
  };
}

function toPage(search: SavedSearch, page: PlacePage, fields: PlaceField[], suppressed: number): SearchPageResult {
  return { search, total: page.total, suppressed, page, fields, nextCursor: page.next ? encodeSearchCursor(search.id, page.next) : null };
}

/** The criteria as they run for this account now: the saved ones plus what the account leaves out. */
function forAccount(criteria: PlaceCriteria, exclusion: AccountExclusion | null): PlaceCriteria {
  return exclusion ? { ...criteria, exclude: exclusion } : criteria;
}

/** The criteria as saved: an exclusion is added each time the search runs, never stored with it. */
function asSaved(criteria: PlaceCriteria): PlaceCriteria {
  if (criteria.exclude === undefined) return criteria;
  const { exclude: _exclude, ...saved } = criteria;
  return saved;
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

/**
 * A saved search as it runs for its account now: its criteria plus what the account leaves out (its
 * suppression list, and with `onlyNew`, by default the search's own, its leads), for the bulk reads
 * (exports, the dashboard's map) that take a SavedSearch.
 */
export async function searchAsItRunsNow(db: Db, search: SavedSearch, onlyNew = onlyNewOf(search)): Promise<SavedSearch> {
  const exclusion = await accountExclusion(db, search.accountId, { onlyNew });
  return exclusion ? { ...search, criteria: forAccount(search.criteria, exclusion) } : search;
}

/** Whether a saved search asked for new places only (`only_new`). */
function onlyNewOf(search: SavedSearch): boolean {
  return search.params.only_new === true;
}

/** The page's places in the public shape, narrowed to `fields`, with `distance_m` when the search has a point. */
function pagePlaces(page: PlacePage, fields: readonly PlaceField[]): Array<Partial<Place> & { distance_m?: number }> {
  return page.rows.map((r) => {
    const place = pickFields(placeRowToPlace(r), fields);
    return r.distance_m === null ? place : { ...place, distance_m: Math.round(r.distance_m) };
  });
}

/**
 * `pagePlaces` as a JSON array, remembered per page object and `fields`: a page served from the read
 * cache to many clients is rendered once, and the text is dropped with the page.
 */
const renderedPages = new WeakMap<PlacePage, Map<string, string>>();

export function pagePlacesJson(page: PlacePage, fields: readonly PlaceField[]): string {
  const key = fields.join(',');
  let byFields = renderedPages.get(page);
  const hit = byFields?.get(key);
  if (hit !== undefined) return hit;
  const json = JSON.stringify(pagePlaces(page, fields));
  if (!byFields) {
    byFields = new Map();
    renderedPages.set(page, byFields);
  }
  byFields.set(key, json);
  return json;
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

/**
 * Search parameters given as text (a dashboard form, already stripped of empty inputs), checked and
 * converted by the API's own schema: the same rules and the same errors as `GET /api/v2/map/search`.
 */
export function parseSearchParams(raw: Record<string, string>): MapSearchQuery {
  return checkAgainstSchema(MapSearchQuerySchema, raw, 'querystring', { coerce: true });
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
  if (!criteriaNames.some((n) => query[n] !== undefined)) {
    throw new AppError('validation_failed', `Say what to search for: at least one of ${criteriaNames.join(', ')}`, {
      errors: [{ field: 'querystring', message: 'needs at least one search parameter', allowed: [...criteriaNames] }],
    });
  }
  const { per_page: perPage = defaultPerPage, fields: _fields, cursor: _cursor, lang: _lang, ...input } = query;
  return createSearch(deps, accountId, input, { perPage, fields, lang: lang ?? query.lang?.toLowerCase() ?? null });
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
  return createSearch(deps, accountId, input, { perPage, fields, lang: lang ?? body.lang?.toLowerCase() ?? null, polygon });
}

/**
 * Runs a new search for an account and saves it. Text queries first match names by substring; when
 * nothing matches, they run again tolerating typos (see search.reads.ts).
 */
export async function createSearch(
  deps: SearchDeps,
  accountId: number,
  input: SearchInput,
  options: { perPage: number; fields: PlaceField[]; lang: string | null; polygon?: MultiPolygonCoordinates },
): Promise<SearchPageResult> {
  const { only_new: onlyNew, open_now: openNow, open_at: openAt, ...filters } = input;
  const open = openFilterOf(
    { open_now: openNow, open_at: openAt },
    clockOf(deps)(),
    options.polygon ? 'body' : 'querystring',
    windowDaysOf(deps),
  );
  const [named, exclusion] = await Promise.all([
    resolveSearchCached(deps, filters, options.lang),
    accountExclusion(deps.db, accountId, { onlyNew: onlyNew === true }),
  ]);
  // A drawn area is searched as its bounding box, each place then tested (`rowCheck`); not remembered with
  // the names (a polygon is rarely asked twice, and may be large).
  const resolved = withOpen(
    options.polygon ? { ...named, criteria: { ...named.criteria, bbox: polygonBbox(options.polygon), polygon: options.polygon } } : named,
    open,
  );
  const { sort } = resolved;
  const {
    page,
    criteria: ran,
    resolution: understood,
  } = await withBudget(deps, () =>
    runWithFallbacks(deps, { ...resolved, criteria: forAccount(resolved.criteria, exclusion) }, options.perPage),
  );
  const resolution = await withBudget(deps, () => withOpenResolution(deps, ran, understood));
  if (page.candidateLimit !== undefined && ran.polygon && ran.text?.mode !== 'fuzzy') {
    throw bad('body.polygon', `holds more than ${page.candidateLimit} places with these filters; draw a smaller area or add filters`, {
      maxCandidates: page.candidateLimit,
    });
  }
  const criteria = asSaved(ran);
  const suppressed = await withBudget(deps, () => suppressedCount(deps, ran, page.total));
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
  await insertSearch(deps.db, {
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
  const open = openFilterOf({ open_now: openNow, open_at: openAt }, clockOf(deps)(), options.location, windowDaysOf(deps));
  const [named, exclusion] = await Promise.all([
    resolveSearchCached(deps, input, options.lang),
    options.accountId === undefined ? null : accountExclusion(deps.db, options.accountId, { onlyNew: false }),
  ]);
  const resolved = withOpen(named, open);
  const {
    page,
    criteria,
    resolution: understood,
  } = await withBudget(deps, () => runWithFallbacks(deps, { ...resolved, criteria: forAccount(resolved.criteria, exclusion) }, perPage));
  const resolution = await withBudget(deps, () => withOpenResolution(deps, criteria, understood));
  return { total: page.total, suppressed: await withBudget(deps, () => suppressedCount(deps, criteria, page.total)), page, resolution };
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

/** Up to `limit` places of the catalog inside a box (whatever they are), in id order. */
export async function placesInBox(
  deps: SearchDeps,
  box: [minLon: number, minLat: number, maxLon: number, maxLat: number],
  limit: number,
): Promise<PublicPlaceRow[]> {
  const criteria: PlaceCriteria = { ...noCriteria, bbox: box };
  return (await deps.reads.run('placesAfterId', criteria, 0, limit)).rows;
}

/**
 * A saved search of this account. Throws AppError `not_found` for an unknown id and for another
 * account's search alike, so ids cannot be probed.
 */
export async function getSearchForAccount(db: Db, accountId: number, searchId: string): Promise<SavedSearch> {
  const row = /^srch_[a-z2-7]{16}$/.test(searchId) ? await findSearchForAccount(db, accountId, searchId) : undefined;
  if (!row) throw new AppError('not_found', `search ${searchId} does not exist`);
  return rowToSavedSearch(row);
}

/** A saved search of any account, for the operator's command line (`leadatlas enrich --search`). */
export async function getSearchById(db: Db, searchId: string): Promise<SavedSearch> {
  const row = /^srch_[a-z2-7]{16}$/.test(searchId) ? await findSearchById(db, searchId) : undefined;
  if (!row) throw new AppError('not_found', `search ${searchId} does not exist`);
  return rowToSavedSearch(row);
}

/**
 * Every place of a saved search, in batches of at most `batchSize`, in ascending internal id order
 * (no row repeats). One streamed query on SQLite (`streamPlaces`); nothing is held beyond a batch.
 */
export async function* iterateSearchPlaces(db: Db, search: SavedSearch, batchSize = 1000): AsyncIterable<PublicPlaceRow[]> {
  const check = searchRowCheck(search);
  for await (const rows of streamPlaces(db, await trueOpenCriteria(db, search.criteria), batchSize)) {
    const matches = check ? rows.filter((r) => check(r.name, r.names, r.lon, r.lat)) : rows;
    if (matches.length > 0) yield matches;
  }
}

/**
 * What a bulk read of a saved search must still check on each row, or null when the SQL decides alone
 * (`rowCheck`: the edit distance of fuzzy text, the point-in-polygon test of a drawn area).
 */
export function searchRowCheck(search: SavedSearch): ReturnType<typeof rowCheck> {
  return rowCheck(search.criteria);
}

/** Exact number of places a saved search matches now (it may differ from `total` as data changes). */
export async function countSearchPlaces(db: Db, search: SavedSearch): Promise<number> {
  return countMatches(db, await trueOpenCriteria(db, search.criteria));
}

/**
 * `GET /api/v2/map/facets`: the exact number of matches of a search per value of a dimension, with the
 * search's rules (at least one criterion, names resolved the same way, the account's exclusions applied).
 * Not saved.
 */
export async function searchFacets(deps: SearchDeps, accountId: number, query: FacetsQuery, lang: string | null): Promise<FacetsResponse> {
  const { by, lang: queryLang, only_new: onlyNew, open_now: openNow, open_at: openAt, ...filters } = query;
  if (!criteriaNames.some((n) => filters[n] !== undefined)) {
    throw new AppError('validation_failed', `Say what to count: at least one of ${criteriaNames.join(', ')}`, {
      errors: [{ field: 'querystring', message: 'needs at least one search parameter', allowed: [...criteriaNames] }],
    });
  }
  const open = openFilterOf({ open_now: openNow, open_at: openAt }, clockOf(deps)(), 'querystring', windowDaysOf(deps));
  const [named, exclusion] = await Promise.all([
    resolveSearchCached(deps, filters, lang ?? queryLang?.toLowerCase() ?? null),
    accountExclusion(deps.db, accountId, { onlyNew: onlyNew === true }),
  ]);
  const counted = await countFacets(deps, forAccount(withOpen(named, open).criteria, exclusion), by);
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
