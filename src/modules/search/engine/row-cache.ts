import type { PublicPlaceRow } from '../../places/places.schema.ts';

/** A page row as the engine answers it (no `near` in an index query: no distance). */
export type PageRow = PublicPlaceRow & { distance_m: number | null };

/**
 * The rows of the places the index put on pages lately, by place id, so that a page of places seen before
 * needs no read: the most reviewed places of a city head the pages of most of its searches. A row is what the
 * database held when it was read; the engine forgets a place here when it applies that place's change from the
 * log (and everything when it rebuilds), so a row is never older than the index's own facts of that place.
 * A read that started before a change was applied is not kept (`generation`): it may predate the change.
 * Least recently used rows go first past `capacity`. Rows are shared by every page that shows them: never
 * changed once read.
 */
export class PageRowCache {
  private readonly rows = new Map<number, PageRow>();
  /** Moves whenever something is forgotten: a read that began at another generation is not kept. */
  private generationNow = 0;

  constructor(private readonly capacity: number) {}

  get generation(): number {
    return this.generationNow;
  }

  /** The row of a place, or undefined (then read it, and `keep` it). */
  get(id: number): PageRow | undefined {
    const row = this.rows.get(id);
    if (row === undefined) return undefined;
    // Most recently used last: Map keeps insertion order, so the first key is the one to drop.
    this.rows.delete(id);
    this.rows.set(id, row);
    return row;
  }

  /** Rows read since `generation` was taken; kept only when nothing was forgotten meanwhile. */
  keep(rows: readonly PageRow[], generation: number): void {
    if (generation !== this.generationNow || this.capacity === 0) return;
    for (const row of rows) {
      this.rows.delete(row.id);
      this.rows.set(row.id, row);
    }
    for (const id of this.rows.keys()) {
      if (this.rows.size <= this.capacity) break;
      this.rows.delete(id);
    }
  }

  /** Places whose row changed (their change is being applied to the index). */
  forget(ids: readonly number[]): void {
    this.generationNow++;
    for (const id of ids) this.rows.delete(id);
  }

  clear(): void {
    this.generationNow++;
    this.rows.clear();
  }
}
