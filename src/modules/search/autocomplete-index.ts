import { searchFold } from '../../infra/text.ts';

/**
 * Prefix look-ups over folded keys, best entries first: the structure under `GET /api/v2/autocomplete`.
 *
 * Entries are numbered in rank order (the caller sorts them, most places first), so "best" is simply the
 * lowest number. The distinct keys are sorted; each key has its entries (postings, ascending). A prefix is
 * a contiguous range of keys, found by two binary searches. The best entries of a range come from a
 * segment tree holding, for every span of keys, the key whose first posting is lowest: the range's best
 * key, then either its next posting or the best key of the spans left and right of it, in a small heap.
 * A query of `limit` suggestions reads about `limit` postings whatever the size of the range (a prefix of
 * one letter spans a hundred thousand keys at a million places).
 */
export class PrefixIndex {
  private readonly keys: string[];
  /** Postings of key k: `postings[starts[k] .. starts[k + 1])`. */
  private readonly starts: Int32Array;
  private readonly postings: Int32Array;
  /** Bottom-up segment tree over keys: the key whose first posting is lowest in each span (-1: none). */
  private readonly tree: Int32Array;
  private readonly leaves: number;

  private constructor(keys: string[], starts: Int32Array, postings: Int32Array) {
    this.keys = keys;
    this.starts = starts;
    this.postings = postings;
    let leaves = 1;
    while (leaves < keys.length) leaves *= 2;
    this.leaves = leaves;
    this.tree = new Int32Array(2 * leaves).fill(-1);
    for (let k = 0; k < keys.length; k++) this.tree[leaves + k] = k;
    for (let i = leaves - 1; i >= 1; i--) this.tree[i] = this.better(this.tree[2 * i]!, this.tree[2 * i + 1]!);
  }

  /** `keysOf(entry)` for entries 0..count-1, numbered best first. */
  static build(count: number, keysOf: (entry: number) => Iterable<string>): PrefixIndex {
    const byKey = new Map<string, number[]>();
    for (let e = 0; e < count; e++) {
      for (const key of keysOf(e)) {
        const list = byKey.get(key);
        if (list === undefined) byKey.set(key, [e]);
        else if (list.at(-1) !== e) list.push(e);
      }
    }
    const keys = [...byKey.keys()].sort(compareKeys);
    const starts = new Int32Array(keys.length + 1);
    let total = 0;
    for (let k = 0; k < keys.length; k++) {
      starts[k] = total;
      total += byKey.get(keys[k]!)!.length;
    }
    starts[keys.length] = total;
    const postings = new Int32Array(total);
    // Entries were visited in ascending order, so each key's list is already sorted.
    for (let k = 0; k < keys.length; k++) postings.set(byKey.get(keys[k]!)!, starts[k]!);
    return new PrefixIndex(keys, starts, postings);
  }

  get size(): number {
    return this.keys.length;
  }

  /** Bytes held by the typed arrays and (roughly) the keys. */
  bytes(): number {
    let chars = 0;
    for (const k of this.keys) chars += k.length;
    return this.starts.byteLength + this.postings.byteLength + this.tree.byteLength + 2 * chars + 16 * this.keys.length;
  }

  /** The first `limit` entries (lowest numbers) with a key starting with `prefix` and that `accept` takes. */
  top(prefix: string, limit: number, accept: (entry: number) => boolean = () => true, maxReads = 50_000): number[] {
    const [lo, hi] = this.range(prefix);
    const out: number[] = [];
    if (lo >= hi || limit <= 0) return out;
    const seen = new Set<number>();
    const heap = new CandidateHeap();
    const pushSpan = (from: number, to: number) => {
      if (from >= to) return;
      const k = this.bestKey(from, to);
      heap.push(this.postings[this.starts[k]!]!, k, this.starts[k]!, from, to);
    };
    pushSpan(lo, hi);
    for (let reads = 0; heap.size > 0 && out.length < limit && reads < maxReads; reads++) {
      const { entry, key, at, from, to } = heap.pop();
      if (from >= 0) {
        // The best key of a span: the spans beside it may hold the next best.
        pushSpan(from, key);
        pushSpan(key + 1, to);
      }
      if (at + 1 < this.starts[key + 1]!) heap.push(this.postings[at + 1]!, key, at + 1, -1, -1);
      if (!seen.has(entry)) {
        seen.add(entry);
        if (accept(entry)) out.push(entry);
      }
    }
    return out;
  }

  /** Every entry with a key starting with `prefix` (an entry once per key it has there), up to `maxReads`. */
  *entries(prefix: string, maxReads = 50_000): Generator<number> {
    const [lo, hi] = this.range(prefix);
    let reads = 0;
    for (let k = lo; k < hi; k++) {
      for (let at = this.starts[k]!; at < this.starts[k + 1]!; at++) {
        if (reads++ >= maxReads) return;
        yield this.postings[at]!;
      }
    }
  }

  /** The keys starting with `prefix`: [first, past the last). */
  private range(prefix: string): [number, number] {
    return [this.lowerBound(prefix), this.lowerBound(`${prefix}\uffff`)];
  }

  private lowerBound(value: string): number {
    let lo = 0;
    let hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.keys[mid]! < value) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private better(a: number, b: number): number {
    if (a < 0) return b;
    if (b < 0) return a;
    return this.postings[this.starts[a]!]! <= this.postings[this.starts[b]!]! ? a : b;
  }

  /** The key in [from, to) whose first posting is lowest. */
  private bestKey(from: number, to: number): number {
    let best = -1;
    for (let l = from + this.leaves, r = to + this.leaves; l < r; l >>= 1, r >>= 1) {
      if (l & 1) best = this.better(best, this.tree[l++]!);
      if (r & 1) best = this.better(best, this.tree[--r]!);
    }
    return best;
  }
}

/** Code-unit order, the order `<` compares in (what the binary search assumes). */
const compareKeys = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** A min-heap of candidates by entry number: a posting of a key, or a span's best key (`from` ≥ 0). */
class CandidateHeap {
  private readonly items: Array<{ entry: number; key: number; at: number; from: number; to: number }> = [];

  get size(): number {
    return this.items.length;
  }

  push(entry: number, key: number, at: number, from: number, to: number): void {
    const items = this.items;
    items.push({ entry, key, at, from, to });
    for (let i = items.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (items[parent]!.entry <= items[i]!.entry) break;
      [items[parent], items[i]] = [items[i]!, items[parent]!];
      i = parent;
    }
  }

  pop(): { entry: number; key: number; at: number; from: number; to: number } {
    const items = this.items;
    const top = items[0]!;
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && items[l]!.entry < items[m]!.entry) m = l;
        if (r < items.length && items[r]!.entry < items[m]!.entry) m = r;
        if (m === i) break;
        [items[m], items[i]] = [items[i]!, items[m]!];
        i = m;
      }
    }
    return top;
  }
}

/** Letters of scripts written without spaces between words (as `searchForm` sets apart). */
const unspaced = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u3005\u30fc]/u;

/** Suffixes a name is found by: from each word on, and in unspaced scripts from each letter on. */
const MAX_SUFFIXES = 12;

/**
 * The keys of a name: its folded form (`searchFold`, every script) from the start of each word, so that a
 * prefix of any word, or of several words in order, finds it (`Pizzeria Napoli`: `pizzeria na`, `napo`). Names in scripts written without spaces (`ドトール新宿店`) are also keyed
 * from each of their letters (`新宿` finds it).
 */
export function nameKeys(name: string): string[] {
  const folded = searchFold(name);
  if (folded.length === 0) return [];
  const keys = [folded];
  for (let i = 1; i < folded.length && keys.length < MAX_SUFFIXES; i++) {
    const c = folded[i]!;
    if (folded[i - 1] === ' ' && c !== ' ') keys.push(folded.slice(i));
    else if (c !== ' ' && unspaced.test(c)) keys.push(folded.slice(i));
  }
  return keys;
}

/** The folded query a prefix is looked up by: `searchFold`, so that case, accents and widths do not matter. */
export const foldQuery = (q: string): string => searchFold(q);
