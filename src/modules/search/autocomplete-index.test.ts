import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nameKeys, PrefixIndex } from './autocomplete-index.ts';

/** A small deterministic generator (the test must fail the same way each run). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

test('answers the same best entries as a scan of every key, for every prefix, limit and filter', () => {
  const next = random(7);
  const letters = 'abcdeé';
  const word = () => Array.from({ length: 1 + Math.floor(next() * 4) }, () => letters[Math.floor(next() * letters.length)]).join('');
  const keys = Array.from({ length: 400 }, () => Array.from({ length: 1 + Math.floor(next() * 3) }, word));
  const index = PrefixIndex.build(keys.length, (e) => keys[e]!);
  const prefixes = ['', 'a', 'b', 'ab', 'abc', 'é', 'ée', 'dd', 'zz', 'abcde'];
  for (const prefix of prefixes) {
    for (const limit of [1, 3, 10, 1000]) {
      for (const accept of [() => true, (e: number) => e % 3 === 0]) {
        const expected = keys
          .map((k, e) => ({ k, e }))
          .filter(({ k, e }) => k.some((w) => w.startsWith(prefix)) && accept(e))
          .map(({ e }) => e)
          .slice(0, limit);
        assert.deepEqual(index.top(prefix, limit, accept), expected, `prefix "${prefix}", limit ${limit}`);
      }
    }
    const scanned = new Set(index.entries(prefix));
    assert.deepEqual(
      [...scanned].sort((a, b) => a - b),
      keys.flatMap((k, e) => (k.some((w) => w.startsWith(prefix)) ? [e] : [])),
    );
  }
});

test('an empty index and a prefix past every key answer nothing', () => {
  assert.deepEqual(PrefixIndex.build(0, () => []).top('a', 5), []);
  assert.deepEqual(PrefixIndex.build(2, (e) => [['zeta'], ['omega']][e]!).top('zz', 5), []);
});

test('a name is keyed from each word, and from each letter of a script written without spaces', () => {
  assert.deepEqual(nameKeys("Café de l'Opéra"), ['cafe de l opera', 'de l opera', 'l opera', 'opera']);
  assert.deepEqual(nameKeys('ドトール新宿店'), ['ドトール新宿店', 'トール新宿店', 'ール新宿店', 'ル新宿店', '新宿店', '宿店', '店']);
  assert.deepEqual(nameKeys('Кафе Пушкинъ'), ['кафе пушкинъ', 'пушкинъ']);
  assert.deepEqual(nameKeys('!!!'), []);
});
