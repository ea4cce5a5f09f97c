import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boundedEditDistance } from './name-distance.ts';

/** Levenshtein distance, the textbook way. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return d[a.length]![b.length]!;
}

test('boundedEditDistance is the edit distance up to its bound, and more than the bound beyond it', () => {
  // A fixed pseudo-random sequence: words over a small alphabet (many near misses), lengths 0 to 80.
  let seed = 23;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const word = () => Array.from({ length: Math.floor(next() ** 2 * 80) }, () => 'abcde'[Math.floor(next() * 5)]).join('');
  for (let k = 0; k < 3000; k++) {
    const a = word();
    const b =
      next() < 0.5 ? word() : a.slice(0, Math.floor(next() * a.length)) + word().slice(0, 3) + a.slice(Math.floor(next() * a.length));
    const max = Math.floor(next() * 12);
    const exact = editDistance(a, b);
    const bounded = boundedEditDistance(a, b, max);
    if (exact <= max) assert.equal(bounded, exact, `${a} / ${b} within ${max}`);
    else assert.ok(bounded > max, `${a} / ${b}: ${exact} > ${max}, got ${bounded}`);
  }
  assert.equal(boundedEditDistance('halsted', 'halstead', 1), 1);
  assert.equal(boundedEditDistance('', 'abc', 3), 3);
  assert.equal(boundedEditDistance('kitten', 'sitting', 2), 3);
});
