import type { Db } from '../../infra/db/database.ts';
import { dailyUsage } from '../auth/usage.service.ts';
import { placeRowToPlace } from '../places/places.schema.ts';
import { recentExports, type ExportSummary } from '../exports/exports.service.ts';
import { largestCitiesInBox } from '../geo/geo.ts';
import {
  iterateSearchPlaces,
  placesInBox,
  recentSearches as recentSearchesOf,
  savedSearchPage,
  searchAsItRunsNow,
  type SearchDeps,
  type SearchSummary,
} from '../search/search.service.ts';
import { renderMap, viewBox, type MapResult } from './map.ts';
import type { ResultsView } from './search.views.ts';
import type { DownloadLinks } from '../exports/download-links.ts';
import { recentJobs, type JobOverview } from '../exports/export-jobs.service.ts';
import { accountWebhookSecret } from '../webhooks/webhooks.service.ts';

/**
 * What the dashboard's pages show, gathered from the modules' services (the dashboard has no tables and
 * queries none): the handlers in the `*.routes.ts` files only parse forms and render.
 */

/** Results drawn on the map; past this the caption says how many are shown. */
const mapMaxResults = 3000;
/** Other places drawn as the settlement footprint. */
const mapMaxContext = 8000;

export function recentSearches(db: Db, accountId: number, limit: number): Promise<SearchSummary[]> {
  return recentSearchesOf(db, accountId, limit);
}

export async function searchesAndExports(
  db: Db,
  accountId: number,
  limit: number,
): Promise<{ searches: SearchSummary[]; exports: ExportSummary[] }> {
  const [searches, exports] = await Promise.all([recentSearchesOf(db, accountId, limit), recentExports(db, accountId, limit)]);
  return { searches, exports };
}

export function usageByDay(db: Db, accountId: number, days: number): Promise<Array<{ day: string; count: number }>> {
  return dailyUsage(db, accountId, days);
}

/** A page of a saved search's results with its map: the results in orange over every other place in view. */
export async function searchResults(
  deps: SearchDeps,
  accountId: number,
  searchId: string,
  cursor: string | undefined,
  perPage: number,
): Promise<Omit<ResultsView, 'offset'>> {
  const { search, page, total, suppressed, nextCursor } = await savedSearchPage(deps, accountId, searchId, cursor, perPage);
  // The map shows what the search finds for this account now: its suppression list (and only_new) apply.
  const running = await searchAsItRunsNow(deps.db, search);
  const results: MapResult[] = [];
  let withoutCoordinates = 0;
  let capped = false;
  // Stops at the cap: a search of 100,000 places must not read them all to draw a page.
  outer: for await (const batch of iterateSearchPlaces(deps.db, running, 1000)) {
    for (const row of batch) {
      if (results.length === mapMaxResults) {
        capped = true;
        break outer;
      }
      if (row.lat === null || row.lon === null) withoutCoordinates++;
      else results.push({ lat: row.lat, lon: row.lon, name: row.name });
    }
  }
  const chosenCity = search.resolution.city?.chosen;
  const center = chosenCity ? { lat: chosenCity.lat, lon: chosenCity.lon } : undefined;
  const box = viewBox(results, center);
  const [context, labels] = await Promise.all([
    placesInBox(deps, [box.west, box.south, box.east, box.north], mapMaxContext),
    largestCitiesInBox(deps.db, box, 12),
  ]);
  const shown = results.length;
  const mapCaption = [
    capped
      ? `The first ${shown.toLocaleString('en')} of ${total.toLocaleString('en')} places, in orange.`
      : `All ${shown.toLocaleString('en')} places with coordinates, in orange.`,
    !capped && withoutCoordinates > 0 ? `${withoutCoordinates.toLocaleString('en')} have no coordinates.` : '',
    'Grey: every other place in view, which traces the streets and built-up areas.',
  ]
    .filter(Boolean)
    .join(' ');
  return {
    search,
    total,
    suppressed,
    places: page.rows.map((r) => placeRowToPlace(r)),
    nextCursor,
    isFirstPage: cursor === undefined,
    map: renderMap({
      results,
      context: context.filter((r) => r.lat !== null && r.lon !== null).map((r) => ({ lat: r.lat as number, lon: r.lon as number })),
      labels,
      center,
      title: `Map of ${shown.toLocaleString('en')} places`,
    }),
    mapCaption,
  };
}

/** The account's export jobs with their webhook deliveries and attempts, for the Exports page. */
export async function exportJobsOverview(
  db: Db,
  links: DownloadLinks,
  accountId: number,
  limit: number,
): Promise<{ items: JobOverview[]; secret: string }> {
  const [items, secret] = await Promise.all([recentJobs(db, links, accountId, limit), accountWebhookSecret(db, accountId)]);
  return { items, secret };
}
