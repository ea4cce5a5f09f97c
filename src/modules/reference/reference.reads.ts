import type { Db } from '../../infra/db/database.ts';
import { placesVersion } from '../places/place-changes.repository.ts';
import { countPlacesByCategory, countPlacesByCountry } from './reference.repository.ts';

/**
 * Place counts per category and per country for the reference lists, run in the read pool. A count
 * over a million places is an index pass: each thread keeps the last one while the places version
 * (migration 0007) stays where it was, so the lists stay exact and cost a one-row read otherwise.
 */
const cache = new Map<string, { version: number; counts: Array<[string, number]> }>();

async function versioned(db: Db, name: string, count: (db: Db) => Promise<Array<[string, number]>>): Promise<Array<[string, number]>> {
  const version = await placesVersion(db);
  const hit = cache.get(name);
  if (hit && hit.version === version) return hit.counts;
  const counts = await count(db);
  cache.set(name, { version, counts });
  return counts;
}

export const placeCountsByCategory = (db: Db) => versioned(db, 'category', countPlacesByCategory);
export const placeCountsByCountry = (db: Db) => versioned(db, 'country', countPlacesByCountry);

/** The reference module's tasks, part of the API's read pool (modules/search/read-tasks.ts). */
export const referenceReadTasks = { placeCountsByCategory, placeCountsByCountry };
export type ReferenceReadTasks = typeof referenceReadTasks;
