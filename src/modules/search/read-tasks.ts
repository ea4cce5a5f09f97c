import { referenceReadTasks } from '../reference/reference.reads.ts';
import { citiesWithMatches, countMatches, facetCounts, placesAfterId, placesByIds, searchPage } from './search.reads.ts';

/**
 * Every read the API sends to the read pool (src/infra/db/read-pool.ts). The worker threads import
 * this module by URL, so it must only pull in the read side (no HTTP, no resolvers).
 */
export const readTasks = { searchPage, countMatches, facetCounts, citiesWithMatches, placesAfterId, placesByIds, ...referenceReadTasks };
export type ApiReadTasks = typeof readTasks;
export const readTasksModule = new URL(import.meta.url);
