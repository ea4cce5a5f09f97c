import { jsonOf } from '../../infra/json.ts';
import { defaultPerPage, type MapSearchQuery } from './search.schema.ts';
import { pagePlacesJson, type quickSearch, type SearchPageResult } from './search.service.ts';

/*
 * The search responses as JSON text, one renderer per response shape. Built here rather than by the schemas'
 * serializers because the places part is rendered once per cached page (`pagePlacesJson`); the route tests
 * check every answer against its schema.
 */

/** A page of a saved search: the shape of SearchPageSchema (`GET` and `POST /api/v2/map/search`). */
export function searchPageJson(
  result: SearchPageResult,
  query: Pick<MapSearchQuery, 'per_page' | 'fields'>,
  selfUrl: string,
  base: string,
): string {
  const perPage = query.per_page ?? defaultPerPage;
  const next = result.nextCursor
    ? `${base}/api/v2/map/search?${new URLSearchParams({ cursor: result.nextCursor, per_page: String(perPage), ...(query.fields ? { fields: query.fields } : {}) })}`
    : null;
  const { search } = result;
  return (
    `{"search_id":${JSON.stringify(search.id)},"total":${result.total},"suppressed":${result.suppressed},"per_page":${perPage},"sort":${JSON.stringify(search.sort)},` +
    `"resolved":${jsonOf(search.resolution)},"data":${pagePlacesJson(result.page, result.fields)},"links":${JSON.stringify({ self: `${base}${selfUrl}`, next })}}`
  );
}

/** An unsaved search's first page: the shape of V1SearchResponseSchema (`/v1/search`). */
export function v1SearchJson(result: Awaited<ReturnType<typeof quickSearch>>): string {
  return `{"total":${result.total},"suppressed":${result.suppressed},"data":${pagePlacesJson(result.page, [])},"resolved":${jsonOf(result.resolution)}}`;
}
