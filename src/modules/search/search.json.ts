import { jsonOf } from '../../infra/json.ts';
import { type Place, type PlaceField, pickFields, placeRowToPlace } from '../places/places.schema.ts';
import type { lookupPlaces } from './contact-lookup.ts';
import type { PlacePage } from './search.reads.ts';
import { defaultPerPage, type MapSearchQuery } from './search.schema.ts';
import type { quickSearch } from './search.service.ts';
import type { SearchDeps, SearchPageResult } from './search.types.ts';

/*
 * The search responses as JSON text, one renderer per response shape. Built here rather than by the schemas'
 * serializers because the places part is rendered once per cached page (`pagePlacesJson`); the route tests
 * check every answer against its schema.
 */

/** A page of a saved search: the shape of SearchPageSchema (`GET` and `POST /api/v2/map/search`). */
export function searchPageJson(
  search: Pick<SearchDeps, 'renderedPages'>,
  result: SearchPageResult,
  query: Pick<MapSearchQuery, 'per_page' | 'fields'>,
  selfUrl: string,
  base: string,
): string {
  const perPage = query.per_page ?? defaultPerPage;
  const next = result.nextCursor
    ? `${base}/api/v2/map/search?${new URLSearchParams({ cursor: result.nextCursor, per_page: String(perPage), ...(query.fields ? { fields: query.fields } : {}) })}`
    : null;
  const saved = result.search;
  return (
    `{"search_id":${JSON.stringify(saved.id)},"total":${result.total},"suppressed":${result.suppressed},"per_page":${perPage},"sort":${JSON.stringify(saved.sort)},` +
    `"resolved":${jsonOf(saved.resolution)},"data":${pagePlacesJson(search, result.page, result.fields)},"links":${JSON.stringify({ self: `${base}${selfUrl}`, next })}}`
  );
}

/** An unsaved search's first page: the shape of V1SearchResponseSchema (`/v1/search`). */
export function v1SearchJson(search: Pick<SearchDeps, 'renderedPages'>, result: Awaited<ReturnType<typeof quickSearch>>): string {
  return `{"total":${result.total},"suppressed":${result.suppressed},"data":${pagePlacesJson(search, result.page, [])},"resolved":${jsonOf(result.resolution)}}`;
}

/** A lookup's places: the shape of LookupResponseSchema (`/api/v2/lookup`). */
export function lookupJson(search: Pick<SearchDeps, 'renderedPages'>, result: Awaited<ReturnType<typeof lookupPlaces>>): string {
  return `{"total":${result.total},"data":${pagePlacesJson(search, result.page, result.fields)},"resolved":${JSON.stringify(result.resolved)}}`;
}

/** The page's places in the public shape, narrowed to `fields`, with `distance_m` when the search has a point. */
function pagePlaces(page: PlacePage, fields: readonly PlaceField[]): Array<Partial<Place> & { distance_m?: number }> {
  return page.rows.map((r) => {
    const place = pickFields(placeRowToPlace(r), fields);
    return r.distance_m === null ? place : { ...place, distance_m: Math.round(r.distance_m) };
  });
}

/**
 * `pagePlaces` as a JSON array, remembered per page object and `fields` by the search object
 * (`renderedPages`): a page served from the read cache to many clients is rendered once, and the text is
 * dropped with the page.
 */
export function pagePlacesJson(search: Pick<SearchDeps, 'renderedPages'>, page: PlacePage, fields: readonly PlaceField[]): string {
  const { renderedPages } = search;
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
