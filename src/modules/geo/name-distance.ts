/**
 * Closeness of folded names, for suggesting the spelling a user meant (the gazetteer and the API's
 * place-name resolver alike): a letter-set mask that rules most names out cheaply, and a banded edit distance.
 */

/** Which characters a name has, folded into 32 bits (code point mod 32). */
export function letterMask(name: string): number {
  let mask = 0;
  for (let i = 0; i < name.length; i++) mask |= 1 << (name.charCodeAt(i) & 31);
  return mask;
}

/** Set bits in a 32-bit mask. */
export function popcount(v: number): number {
  let x = v - ((v >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** Rows of `boundedEditDistance`, kept between calls: it runs for every pair of words conflation compares. */
let rowA = new Int32Array(64);
let rowB = new Int32Array(64);

/** Levenshtein distance when it is at most `max`, else more than `max` (banded, stops early). */
export function boundedEditDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const n = b.length;
  if (rowA.length <= n) {
    rowA = new Int32Array(2 * (n + 1));
    rowB = new Int32Array(2 * (n + 1));
  }
  let prev = rowA;
  let cur = rowB;
  for (let j = 0; j <= n; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let rowMin = i;
    const ca = a.charCodeAt(i - 1);
    for (let j = 1; j <= n; j++) {
      let v = prev[j - 1]! + (ca === b.charCodeAt(j - 1) ? 0 : 1);
      const up = prev[j]! + 1;
      if (up < v) v = up;
      const left = cur[j - 1]! + 1;
      if (left < v) v = left;
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > max) return max + 1;
    const t = prev;
    prev = cur;
    cur = t;
  }
  return prev[n]!;
}

/** Distinct folded names grouped by length, each with its letter mask: what `closeNames` scans. */
export type NamesByLength = Map<number, { names: string[]; masks: Int32Array }>;

export function indexNamesByLength(names: Iterable<string>): NamesByLength {
  const byLength = new Map<number, string[]>();
  for (const n of names) {
    const bucket = byLength.get(n.length);
    if (bucket) bucket.push(n);
    else byLength.set(n.length, [n]);
  }
  return new Map([...byLength].map(([length, list]) => [length, { names: list, masks: Int32Array.from(list, letterMask) }]));
}

/**
 * Known names within a few edits of `key` (1 for names of up to 4 letters, 2 up to 8, else 3), with their
 * edit counts, shortest names first and each length in the index's order.
 */
export function closeNames(index: NamesByLength, key: string): Array<{ name: string; edits: number }> {
  const max = key.length <= 4 ? 1 : key.length <= 8 ? 2 : 3;
  const mask = letterMask(key);
  const found: Array<{ name: string; edits: number }> = [];
  for (let len = key.length - max; len <= key.length + max; len++) {
    const bucket = index.get(len);
    if (!bucket) continue;
    for (let k = 0; k < bucket.names.length; k++) {
      // Each edit adds or removes at most two letters from the set, so more differing letters cannot be close.
      if (popcount(mask ^ bucket.masks[k]!) > 2 * max) continue;
      const name = bucket.names[k]!;
      const edits = boundedEditDistance(key, name, max);
      if (edits <= max) found.push({ name, edits });
    }
  }
  return found;
}
