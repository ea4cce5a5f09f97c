import { referenceReadTasks } from '../reference/reference.reads.ts';
import { namedPlacesAfter } from './autocomplete.repository.ts';
import { createSearchReads } from './search.reads.ts';

/**
 * Every read the API sends to the read pool (src/infra/db/read-pool.ts), made once per worker thread (each with
 * its own caches) and once for a pool that runs its tasks inline. The worker threads import this module by URL,
 * so it must only pull in the read side (no HTTP, no resolvers).
 */
export function createReadTasks() {
  return { ...createSearchReads(), ...referenceReadTasks, namedPlacesAfter };
}
export type ApiReadTasks = ReturnType<typeof createReadTasks>;
export const readTasksModule = new URL(import.meta.url);
