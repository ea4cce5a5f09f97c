import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type PageRow, PageRowCache } from './row-cache.ts';

const row = (id: number, name = `place ${id}`) => ({ id, name, distance_m: null }) as unknown as PageRow;

describe('PageRowCache', () => {
  test('keeps the rows it is given and answers them by place id', () => {
    const cache = new PageRowCache(10);
    cache.keep([row(1), row(2)], cache.generation);
    assert.equal(cache.get(1)?.name, 'place 1');
    assert.equal(cache.get(3), undefined);
  });

  test('does not keep a read that began before a change was applied: it may predate the change', () => {
    const cache = new PageRowCache(10);
    const before = cache.generation;
    cache.forget([7]);
    cache.keep([row(1), row(7, 'old name')], before);
    assert.equal(cache.get(7), undefined);
    assert.equal(cache.get(1), undefined, 'nothing of that read is kept');
    cache.keep([row(7, 'new name')], cache.generation);
    assert.equal(cache.get(7)?.name, 'new name');
  });

  test('forgets a changed place, and everything on clear', () => {
    const cache = new PageRowCache(10);
    cache.keep([row(1), row(2)], cache.generation);
    cache.forget([1]);
    assert.equal(cache.get(1), undefined);
    assert.ok(cache.get(2));
    cache.clear();
    assert.equal(cache.get(2), undefined);
  });

  test('drops the least recently used rows past its capacity', () => {
    const cache = new PageRowCache(3);
    cache.keep([row(1), row(2), row(3)], cache.generation);
    assert.ok(cache.get(1), 'used: now the most recent');
    cache.keep([row(4)], cache.generation);
    assert.equal(cache.get(2), undefined, 'the least recently used went first');
    assert.ok(cache.get(1) && cache.get(3) && cache.get(4));
  });
});
