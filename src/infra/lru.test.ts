import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Lru } from './lru.ts';

test('an LRU drops the least recently used entry past its capacity, a read counting as a use', () => {
  const lru = new Lru<string, number>(2);
  lru.set('a', 1);
  lru.set('b', 2);
  assert.equal(lru.get('a'), 1);
  lru.set('c', 3);
  assert.equal(lru.has('b'), false);
  assert.deepEqual([lru.get('a'), lru.get('c'), lru.size], [1, 3, 2]);
  assert.equal(
    lru.getOrSet('d', () => 4),
    4,
  );
  assert.equal(lru.has('a'), false);
});

test('an LRU of capacity 0 keeps nothing, and remembers an undefined value as one', () => {
  const none = new Lru<string, number>(0);
  none.set('a', 1);
  assert.equal(none.size, 0);
  const lru = new Lru<string, undefined>(1);
  let calls = 0;
  lru.getOrSet('x', () => void calls++);
  lru.getOrSet('x', () => void calls++);
  assert.equal(calls, 1);
});
