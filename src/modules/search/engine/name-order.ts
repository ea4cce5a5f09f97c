import type { RoaringBitmap32 } from 'roaring-wasm';
import type { PlaceFacts } from './engine.repository.ts';
import type { SlotExtension } from './slot-extension.ts';

/**
 * `sort=name` for any number of matches: every slot's display name as UTF-8 bytes, and the order of the slots
 * by name (`order`, and each slot's place in it, `rank`), made once with the index. The order is SQL's: names
 * compared as code points (SQLite's BINARY collation compares the UTF-8 bytes; PostgreSQL is told `COLLATE "C"`,
 * byte order too: `nameOrder` in query/criteria.sql.ts), ties by place id ascending.
 *
 * A page is the first matches after the cursor in that order: with many matches, a walk along `order` from the
 * cursor testing each slot against the matches (a page of 20 among 10 % of the catalog reads about 200 slots);
 * with few, one pass over the matches keeping the best by rank. Slots whose name changed after the order was
 * made, or that were added or moved to the tail, are "loose": left out of the walk and merged into each page by
 * comparing names (the owner rebuilds when they grow: `looseSize`).
 */

const encoder = new TextEncoder();

export class NameOrder implements SlotExtension {
  /** The names' bytes: slot s's name is `bytes[start[s] .. start[s] + length[s]]`. */
  private bytes = new Uint8Array(0);
  private used = 0;
  private start = new Uint32Array(0);
  private length = new Uint32Array(0);
  /** Slots in name order (the build's slots); `rank[s]`: slot s's position there. */
  private order = new Int32Array(0);
  private rank = new Int32Array(0);
  private readonly loose = new Set<number>();
  /** The current names of build slots renamed since the order was made. */
  private readonly renamed = new Map<number, Uint8Array>();
  private sealed = -1;
  /** The build's names as strings until `seal` sorts them (a native string comparison sorts far faster than bytes). */
  private pending: string[] = [];

  constructor(
    /** The place id of a slot (the index's). */
    private readonly idOf: (slot: number) => number,
  ) {}

  get looseSize(): number {
    return this.loose.size;
  }

  fill(slot: number, facts: PlaceFacts): void {
    if (slot >= this.start.length) this.grow(slot + 1);
    const encoded = encoder.encode(facts.name);
    if (slot < this.sealed) {
      // The order's name stays where the order holds it (the binary search reads it); a new one is kept aside.
      if (this.length[slot] === encoded.length && equalBytes(this.bytes, this.start[slot]!, encoded)) {
        this.renamed.delete(slot);
        this.loose.delete(slot);
      } else {
        this.renamed.set(slot, encoded);
        this.loose.add(slot);
      }
      return;
    }
    if (this.sealed >= 0) this.loose.add(slot);
    else this.pending[slot] = facts.name;
    if (this.used + encoded.length > this.bytes.length) {
      const next = new Uint8Array(Math.max(this.used + encoded.length, Math.ceil(this.bytes.length * 1.5), 1 << 16));
      next.set(this.bytes.subarray(0, this.used));
      this.bytes = next;
    }
    this.bytes.set(encoded, this.used);
    this.start[slot] = this.used;
    this.length[slot] = encoded.length;
    this.used += encoded.length;
  }

  /** Orders the build's slots 0..sorted-1 by name, then place id. */
  seal(sorted: number): void {
    this.sealed = sorted;
    // The build's names are all in: the arrays are cut to them (growth resumes with the next change).
    this.bytes = this.bytes.slice(0, this.used);
    this.start = this.start.slice(0, sorted);
    this.length = this.length.slice(0, sorted);
    const order = new Int32Array(sorted);
    for (let s = 0; s < sorted; s++) order[s] = s;
    const names = this.pending;
    // UTF-16 order (`<`) is code point order unless both strings hold a unit at or above U+D800 (a surrogate
    // against U+E000–U+FFFF): only such pairs are compared by their bytes.
    const high = Uint8Array.from(names, (n) => (/[\uD800-\uFFFF]/.test(n) ? 1 : 0));
    order.sort((a, b) => {
      if (high[a] === 1 && high[b] === 1) return this.compareSlots(a, b);
      const x = names[a]!;
      const y = names[b]!;
      return x < y ? -1 : x > y ? 1 : this.idOf(a) - this.idOf(b);
    });
    this.pending = [];
    this.order = order;
    this.rank = new Int32Array(sorted);
    for (let r = 0; r < sorted; r++) this.rank[order[r]!] = r;
  }

  /** The slot's name. */
  nameOf(slot: number): string {
    return decoder.decode(this.renamed.get(slot) ?? this.bytes.subarray(this.start[slot]!, this.start[slot]! + this.length[slot]!));
  }

  /**
   * The first `limit` matches of `result` strictly after `after` (a name and a place id) in name order, as
   * slots. `universe`: the slots in use, to estimate which way costs less.
   */
  page(result: RoaringBitmap32, after: { key: string; id: number } | null, limit: number, universe: number): number[] {
    const cursor = after ? { bytes: encoder.encode(after.key), id: after.id } : null;
    const isAfter = (s: number) => !cursor || this.compareToCursor(s, cursor) > 0;
    const size = result.size;
    let ranked: number[];
    if (size > 0 && (limit * universe) / size < size / 4) {
      // Many matches: walk the order from the cursor.
      ranked = [];
      const from = cursor ? this.firstRankAfter(cursor) : 0;
      for (let r = from; r < this.order.length && ranked.length < limit; r++) {
        const s = this.order[r]!;
        if (!this.loose.has(s) && result.has(s)) ranked.push(s);
      }
    } else {
      ranked = [];
      for (const s of result.toUint32Array()) if (s < this.sealed && !this.loose.has(s) && isAfter(s)) ranked.push(s);
      ranked = topK(ranked, limit, (a, b) => this.rank[a]! - this.rank[b]!);
    }
    if (this.loose.size === 0) return ranked;
    const extra: number[] = [];
    for (const s of this.loose) if (result.has(s) && isAfter(s)) extra.push(s);
    if (extra.length === 0) return ranked;
    return [...ranked, ...extra].sort((a, b) => this.compareSlots(a, b)).slice(0, limit);
  }

  bytesHeld(): number {
    let renamed = 0;
    for (const name of this.renamed.values()) renamed += name.byteLength;
    return renamed + this.bytes.byteLength + this.start.byteLength + this.length.byteLength + this.order.byteLength + this.rank.byteLength;
  }

  /** The first rank whose slot comes after the cursor (binary search over the order, by the names it was made with). */
  private firstRankAfter(cursor: { bytes: Uint8Array; id: number }): number {
    let lo = 0;
    let hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.compareToCursor(this.order[mid]!, cursor, true) > 0) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** Slots by their current names, then place id. */
  private compareSlots(a: number, b: number): number {
    const x = this.renamed.get(a);
    const y = this.renamed.get(b);
    const c = compareBytes(
      x ?? this.bytes,
      x ? 0 : this.start[a]!,
      x ? x.length : this.length[a]!,
      y ?? this.bytes,
      y ? 0 : this.start[b]!,
      y ? y.length : this.length[b]!,
    );
    return c !== 0 ? c : this.idOf(a) - this.idOf(b);
  }

  /** A slot against the cursor; `asOrdered`: by the name the order holds for it (the binary search), else its current name. */
  private compareToCursor(s: number, cursor: { bytes: Uint8Array; id: number }, asOrdered = false): number {
    const now = asOrdered ? undefined : this.renamed.get(s);
    const c = now
      ? compareBytes(now, 0, now.length, cursor.bytes, 0, cursor.bytes.length)
      : compareBytes(this.bytes, this.start[s]!, this.length[s]!, cursor.bytes, 0, cursor.bytes.length);
    return c !== 0 ? c : this.idOf(s) - cursor.id;
  }

  private grow(slots: number): void {
    const capacity = Math.max(slots, Math.ceil(this.start.length * 1.5), 1024);
    const start = new Uint32Array(capacity);
    const length = new Uint32Array(capacity);
    start.set(this.start);
    length.set(this.length);
    this.start = start;
    this.length = length;
  }
}

const decoder = new TextDecoder();

function equalBytes(bytes: Uint8Array, at: number, other: Uint8Array): boolean {
  for (let i = 0; i < other.length; i++) if (bytes[at + i] !== other[i]) return false;
  return true;
}

/** UTF-8 byte order, which is code point order. */
function compareBytes(a: Uint8Array, aAt: number, aLen: number, b: Uint8Array, bAt: number, bLen: number): number {
  const n = Math.min(aLen, bLen);
  for (let i = 0; i < n; i++) {
    const d = a[aAt + i]! - b[bAt + i]!;
    if (d !== 0) return d;
  }
  return aLen - bLen;
}

/** The `k` least of `items` by `compare`, in order (one pass, keeping the best `k`). */
export function topK<T>(items: readonly T[], k: number, compare: (a: T, b: T) => number): T[] {
  const best: T[] = [];
  if (k <= 0) return best;
  for (const item of items) {
    if (best.length === k && compare(item, best[k - 1]!) >= 0) continue;
    let i = best.length === k ? k - 1 : best.length;
    while (i > 0 && compare(item, best[i - 1]!) < 0) {
      best[i] = best[i - 1]!;
      i--;
    }
    best[i] = item;
  }
  return best;
}
