import type { PlaceKey, PlaceSort } from '../query/criteria.ts';

/** Positions in a search's order, and the one-pass selection of a page's first keys. */

/** A position in the default order: its key (`coalesce(review_count, -1)`, descending) and the place id (descending). */
export interface OrderKey {
  key: number;
  id: number;
}

/**
 * Keeps `best` the first `limit` keys in the order `ahead` says, inserting `k` in place: one pass over the matches,
 * no sort of them all.
 */
export function keepFirst(best: OrderKey[], k: OrderKey, limit: number, ahead: (x: OrderKey, y: OrderKey) => boolean): void {
  if (best.length === limit && !ahead(k, best[limit - 1]!)) return;
  let i = best.length === limit ? limit - 1 : best.length;
  while (i > 0 && ahead(k, best[i - 1]!)) {
    best[i] = best[i - 1]!;
    i--;
  }
  best[i] = k;
}

/** Whether `k` comes strictly after `after` in the default order (descending key, then descending id). */
export function before(after: OrderKey, k: OrderKey): boolean {
  return k.key < after.key || (k.key === after.key && k.id < after.id);
}

const numeric = /^-?\d+(\.\d+)?$/;

/**
 * A cursor of a numeric order with its key as a number: PostgreSQL's text relevance comes back as text (`'1'`), and
 * a cursor it made is continued from the index too. Names stay text.
 */
export function numericAfter(after: PlaceKey | null, sort: PlaceSort): PlaceKey | null {
  if (after === null || typeof after.key !== 'string' || sort === 'name' || !numeric.test(after.key)) return after;
  return { ...after, key: Number(after.key) };
}
