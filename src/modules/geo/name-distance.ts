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

/** Levenshtein distance when it is at most `max`, else `max + 1` (banded, stops early). */
export function boundedEditDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev = new Array<number>(b.length + 1);
  let cur = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let rowMin = i;
    const ca = a.charCodeAt(i - 1);
    for (let j = 1; j <= b.length; j++) {
      const cost = ca === b.charCodeAt(j - 1) ? 0 : 1;
      const v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > max) return max + 1;
    [prev, cur] = [cur, prev];
  }
  return prev[b.length]!;
}
