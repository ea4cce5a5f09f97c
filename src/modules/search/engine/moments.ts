import type { OpenAt } from '../../places/opening-hours.reads.ts';

/** The small LRU maps of the engine's open filter: the moments it keeps schedules and slots for. */

/** Moments whose open places the engine keeps (`open_now` moves every minute; `open_at` names any). */
const MOMENTS_KEPT = 32;

export const momentOf = (open: OpenAt): string => `${open.clock}:${open.at}`;

/** A value of a small LRU map (a Map keeps insertion order: the one read moves to the end). */
export function recall<V>(map: Map<string, V>, key: string): V | undefined {
  const value = map.get(key);
  if (value !== undefined) {
    map.delete(key);
    map.set(key, value);
  }
  return value;
}

/** Adds to a small LRU map; answers the value it pushed out, if any, for the caller to release. */
export function remember<V>(map: Map<string, V>, key: string, value: V): V | undefined {
  map.set(key, value);
  if (map.size <= MOMENTS_KEPT) return undefined;
  const [oldest, evicted] = map.entries().next().value!;
  map.delete(oldest);
  return evicted;
}
