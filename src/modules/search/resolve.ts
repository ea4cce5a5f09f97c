import { type Bbox, parseBbox } from '../../infra/bbox.ts';
import { AppError } from '../../infra/errors.ts';
import { checkAgainstSchema } from '../../infra/http/check-schema.ts';
import { deepFreeze } from '../../infra/json.ts';
import { businessKindOfQuery } from './business-words.ts';
import { type ContactReading, readContact } from './contact-query.ts';
import type { PlaceCriteria, PlaceSort, TrustKind } from './query/criteria.ts';
import { type MapSearchQuery, MapSearchQuerySchema, radiusM } from './search.schema.ts';
import {
  type CityChoiceReason,
  type ResolvedNames,
  type SearchDeps,
  type SearchInput,
  type SearchResolution,
  toChoice,
} from './search.types.ts';

/**
 * A search's parameters turned into criteria: its names (type, city, country, the kind of business in its text)
 * resolved through the taxonomy and the place names, its place and order checked.
 */

export function bad(field: string, message: string, allowed?: unknown): AppError {
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

const bboxAllowed = { pattern: 'minLon,minLat,maxLon,maxLat', example: '11.50,48.10,11.65,48.18' };
const bboxProblems = {
  format: 'must be four numbers: minLon,minLat,maxLon,maxLat',
  range: 'longitudes must be within -180..180 and latitudes within -90..90',
  order: 'must be ordered minLon,minLat,maxLon,maxLat (min not above max)',
} as const;

function checkedBbox(bbox: string): Bbox {
  const parsed = parseBbox(bbox);
  if ('problem' in parsed) throw bad('querystring.bbox', bboxProblems[parsed.problem], bboxAllowed);
  return parsed.box;
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
  /** What the text may hold besides names, likeliest first, looked up as the search runs (`withContact` in search.service.ts). */
  contact?: ContactReading[];
}

/** The filters that only narrow, and the order: no name to resolve; applied to the remembered names per request. */
const narrowingNames = [
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
  'sort',
] as const;
type SearchFilters = Pick<SearchInput, (typeof narrowingNames)[number]>;

/**
 * Turns parameters into criteria: names resolved (`resolveNames`, 400 with candidates when unknown), values
 * checked. The names are remembered by the search object (`resolvedNames`) for the same parameters and language: the taxonomy and the
 * place names do not change while the process runs, and searches repeat their type and city with other
 * filters (`SearchFilters`, left out of the key and applied each time). The names are frozen and shared, so
 * the resolution's JSON is written once too (`jsonOf`). Errors are not remembered.
 */
export async function resolveSearchCached(
  deps: Pick<SearchDeps, 'types' | 'places' | 'resolvedNames'>,
  input: SearchInput,
  lang: string | null,
): Promise<ResolvedSearch> {
  const filters: SearchFilters = {};
  const rest: SearchInput = { ...input };
  for (const name of narrowingNames) {
    if (input[name] !== undefined) Object.assign(filters, { [name]: input[name] });
    delete rest[name];
  }
  const { sort } = filters;
  // The order matters to the names only where it is checked against them (`distance` needs `near`).
  const named = sort === 'distance' ? { ...rest, sort } : rest;
  const key = JSON.stringify([named, lang]);
  let names = deps.resolvedNames.get(key);
  if (!names) {
    names = deepFreeze(await resolveNames(deps, named, lang));
    deps.resolvedNames.set(key, names);
  }
  return deepFreeze(withFilters(names, filters));
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
    ...trustCriteria(input),
  };
  return { criteria, resolution: names.resolution, sort: input.sort ?? 'relevance', contact: names.contact };
}

/**
 * The trust filters as criteria, each only when asked (the criteria of other searches stay as they were).
 * `min_confidence` applies to the kinds a contact filter asks for; alone, or beside only `has_…=false`, it would
 * narrow nothing the user named, so it is refused.
 */
function trustCriteria(input: SearchFilters): Partial<PlaceCriteria> {
  const out: Partial<PlaceCriteria> = {};
  if (input.email_status !== undefined) out.emailStatus = input.email_status;
  if (input.phone_type !== undefined) out.phoneType = input.phone_type;
  if (input.website_status !== undefined) out.websiteStatus = input.website_status;
  if (input.min_confidence !== undefined) {
    const kinds: TrustKind[] = [];
    if (input.has_email === true || input.email_status !== undefined) kinds.push('email');
    if (input.has_phone === true || input.phone_type !== undefined) kinds.push('phone');
    if (input.has_website === true || input.website_status !== undefined) kinds.push('website');
    if (kinds.length === 0)
      throw bad('querystring.min_confidence', 'applies to a contact filter: give one with it', [...confidenceFilters]);
    out.minConfidence = { value: input.min_confidence, kinds };
  }
  if (input.min_lead_score !== undefined) out.minLeadScore = input.min_lead_score;
  if (input.updated_since !== undefined) out.updatedSince = instant('updated_since', input.updated_since);
  if (input.verified_since !== undefined) out.verifiedSince = instant('verified_since', input.verified_since);
  return out;
}

/** The filters `min_confidence` applies to. */
const confidenceFilters = ['has_email=true', 'has_phone=true', 'has_website=true', 'email_status', 'phone_type', 'website_status'] as const;

/** A date or instant of the schema's pattern as the columns hold instants (`toISOString`); no zone is UTC. */
function instant(name: string, value: string): string {
  const zoned = value.length === 10 ? `${value}T00:00:00Z` : /(Z|[+-]\d{2}:\d{2})$/.test(value) ? value : `${value}Z`;
  const ms = Date.parse(zoned);
  if (Number.isNaN(ms) || !sameCalendarDay(value, ms, zoned))
    throw bad(`querystring.${name}`, 'is not a date and time of the calendar', { format: 'YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][Z|±HH:MM]' });
  return new Date(ms).toISOString();
}

/** `Date.parse` rolls 2026-02-31 over to March: the date written must be the one parsed (in its own offset). */
function sameCalendarDay(value: string, ms: number, zoned: string): boolean {
  const offset = /([+-])(\d{2}):(\d{2})$/.exec(zoned);
  const shift = offset ? (offset[1] === '-' ? -1 : 1) * (Number(offset[2]) * 60 + Number(offset[3])) * 60_000 : 0;
  return new Date(ms + shift).toISOString().slice(0, 10) === value.slice(0, 10);
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
    throw bad('querystring.sort', 'sort=distance needs near=lat,lon', ['relevance', 'rating', 'review_count', 'name', 'lead_score']);

  let text: PlaceCriteria['text'] = null;
  let textKind: PlaceCriteria['textKind'] = null;
  let contact: ResolvedNames['contact'] = [];
  if (input.query !== undefined) {
    const words = queryWords(input.query);
    if (words.length === 0) throw bad('querystring.query', 'must contain at least one letter or digit');
    text = { words, mode: 'substring' };
    // A phone is read in the country given, else the city's (`+49…` and `0049…` need neither).
    contact = readContact(input.query, countryCode ?? resolution.city?.chosen.country ?? null);
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

  const bbox = input.bbox !== undefined ? checkedBbox(input.bbox) : null;
  return { resolution, categories, cityId, countryCode, text, textKind, contact, near, bbox };
}

/**
 * Search parameters given as text (a dashboard form, already stripped of empty inputs), checked and
 * converted by the API's own schema: the same rules and the same errors as `GET /api/v2/map/search`.
 */
export function parseSearchParams(raw: Record<string, string>): MapSearchQuery {
  return checkAgainstSchema(MapSearchQuerySchema, raw, 'querystring', { coerce: true });
}
