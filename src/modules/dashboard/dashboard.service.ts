import type { Db } from '../../infra/db/database.ts';
import { dailyUsage } from '../auth/usage.service.ts';
import { placeRowToPlace } from '../places/places.schema.ts';
import { iterateSearchPlaces, placesInBox, savedSearchPage, searchAsItRunsNow, type SearchDeps } from '../search/search.service.ts';
import { citiesInBox, listRecentExports, listRecentSearches, type ExportListRow, type SearchListRow } from './dashboard.repository.ts';
import { renderMap, viewBox, type MapResult } from './map.ts';
import type { ResultsView } from './search.views.ts';
import type { DownloadLinks } from '../exports/download-links.ts';
import { listJobsForAccount } from '../exports/export-jobs.repository.ts';
import { accountWebhookSecret } from '../webhooks/webhooks.service.ts';
import { attemptsOfDeliveries, deliveriesOfJobs } from '../webhooks/webhooks.repository.ts';
import type { JobListItem } from './exports.views.ts';

/**
 * What the dashboard's pages show, gathered from the services and the dashboard's list queries: the
 * handlers in dashboard.routes.ts only parse forms and render.
 */

/** Results drawn on the map; past this the caption says how many are shown. */
const mapMaxResults = 3000;
/** Other places drawn as the settlement footprint. */
const mapMaxContext = 8000;

export function recentSearches(db: Db, accountId: number, limit: number): Promise<SearchListRow[]> {
  return listRecentSearches(db, accountId, limit);
}

export async function searchesAndExports(db: Db, accountId: number, limit: number): Promise<{ searches: SearchListRow[]; exports: ExportListRow[] }> {
  const [searches, exports] = await Promise.all([listRecentSearches(db, accountId, limit), listRecentExports(db, accountId, limit)]);
  return { searches, exports };
}

export function usageByDay(db: Db, accountId: number, days: number): Promise<Array<{ day: string; count: number }>> {
  return dailyUsage(db, accountId, days);
}

/** A page of a saved search's results with its map: the results in orange over every other place in view. */
export async function searchResults(deps: SearchDeps, accountId: number, searchId: string, cursor: string | undefined, perPage: number): Promise<Omit<ResultsView, 'offset'>> {
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
  const [context, labels] = await Promise.all([placesInBox(deps, [box.west, box.south, box.east, box.north], mapMaxContext), citiesInBox(deps.db, box, 12)]);
  const shown = results.length;
  const mapCaption = [
    capped ? `The first ${shown.toLocaleString('en')} of ${total.toLocaleString('en')} places, in orange.` : `All ${shown.toLocaleString('en')} places with coordinates, in orange.`,
    !capped && withoutCoordinates > 0 ? `${withoutCoordinates.toLocaleString('en')} have no coordinates.` : '',
    'Grey: every other place in view, which traces the streets and built-up areas.',
  ].filter(Boolean).join(' ');
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
export async function exportJobsOverview(db: Db, links: DownloadLinks, accountId: number, limit: number): Promise<{ items: JobListItem[]; secret: string }> {
  const [jobs, secret] = await Promise.all([listJobsForAccount(db, accountId, limit, null), accountWebhookSecret(db, accountId)]);
  const deliveries = await deliveriesOfJobs(db, jobs.map((j) => j.id));
  const attempts = await attemptsOfDeliveries(db, deliveries.map((d) => d.id));
  const items = await Promise.all(
    jobs.map(async (job) => ({
      job,
      downloadPath: job.status === 'succeeded' && job.file_name ? (await links.linkFor(job.public_id)).path : null,
      deliveries: deliveries.filter((d) => d.job_id === job.id).map((delivery) => ({ delivery, attempts: attempts.filter((a) => a.delivery_id === delivery.id) })),
    })),
  );
  return { items, secret };
}
