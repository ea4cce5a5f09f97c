import type { Db } from '../../infra/db/database.ts';
import { dailyUsage } from '../auth/usage.service.ts';
import type { DownloadLinks } from '../exports/download-links.ts';
import { type JobOverview, recentJobs } from '../exports/export-jobs.service.ts';
import { type ExportSummary, recentExports } from '../exports/exports.service.ts';
import { citiesByIds, largestCitiesInBox } from '../geo/geo.ts';
import { placeRowToPlace } from '../places/places.schema.ts';
import { iterateSearchPlaces, placesInBox } from '../search/bulk-reads.ts';
import { recentSearches as recentSearchesOf, type SearchSummary, searchAsItRunsNow } from '../search/saved-searches.ts';
import { savedSearchFacets, savedSearchPage } from '../search/search.service.ts';
import type { SavedSearch, SearchDeps } from '../search/search.types.ts';
import { accountWebhookSecret } from '../webhooks/webhooks.service.ts';
import { type MapResult, renderMap, viewBox } from './map.ts';
import type { MarketChart, ResultsView } from './search.views.ts';

/**
 * What the dashboard's pages show, gathered from the modules' services (the dashboard has no tables and
 * queries none): the handlers in the `*.routes.ts` files only parse forms and render.
 */

/** Results drawn on the map; past this the caption says how many are shown. */
const mapMaxResults = 3000;
/** Other places drawn as the settlement footprint. */
const mapMaxContext = 8000;
/** Values the market chart draws one bar each; the rest share one bar. */
const chartTopValues = 10;

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

/**
 * A page of a saved search's results with its map (the results in orange over every other place in view) and
 * its market chart. The chart is an extra: when its count fails or runs over the time budget, the page is
 * shown without it and the reason goes to `log`.
 */
export async function searchResults(
  deps: SearchDeps,
  accountId: number,
  searchId: string,
  cursor: string | undefined,
  perPage: number,
  log: { warn(obj: unknown, msg: string): void },
): Promise<Omit<ResultsView, 'offset'>> {
  const { search, page, total, suppressed, nextCursor } = await savedSearchPage(deps, accountId, searchId, cursor, perPage);
  const chart = marketChart(deps, search).catch((error: unknown) => {
    log.warn({ err: error, searchId }, 'the market chart of a search was left out');
    return null;
  });
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
    chart: await chart,
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

/**
 * How a saved search's matches spread, as the facets route counts them: by city, or by category when the
 * search is in one city. The `chartTopValues` largest values a bar each, then the other values together, then
 * the matches without a value (places filed under no city); null when there is nothing to draw or the search
 * is one facets cannot count exactly (`savedSearchFacets`).
 */
export async function marketChart(deps: SearchDeps, search: SavedSearch): Promise<MarketChart | null> {
  const by = search.criteria.cityId === null ? 'city' : 'category';
  const facets = await savedSearchFacets(deps, search, by);
  if (!facets || facets.total === 0) return null;
  const top = facets.values.slice(0, chartTopValues);
  const rest = facets.values.slice(chartTopValues);
  const cities =
    by === 'city'
      ? new Map(
          (
            await citiesByIds(
              deps.db,
              top.map((v) => Number(v.value)),
            )
          ).map((c) => [Number(c.id), c]),
        )
      : null;
  const labelOf = (value: string | number | boolean): string => {
    if (!cities) return String(value).replaceAll('_', ' ');
    const city = cities.get(Number(value));
    if (!city) return `city ${value}`;
    return search.criteria.countryCode === null ? `${city.name} (${city.country_code})` : city.name;
  };
  const bars: MarketChart['bars'] = top.map((v) => ({ value: v.value, label: labelOf(v.value), count: v.count }));
  const other = rest.reduce((sum, v) => sum + v.count, 0);
  if (other > 0) bars.push({ value: null, label: `${rest.length} other ${by === 'city' ? 'cities' : 'categories'}`, count: other });
  const without = facets.total - facets.values.reduce((sum, v) => sum + v.count, 0);
  if (without > 0) bars.push({ value: null, label: by === 'city' ? 'No city' : 'No category', count: without });
  return { by, total: facets.total, bars };
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
