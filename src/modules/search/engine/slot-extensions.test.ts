import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { RoaringBitmap32, roaringLibraryInitialize } from 'roaring-wasm';
import type { PlaceFacts } from './engine.repository.ts';
import { GeoIndex } from './geo-index.ts';
import { NameOrder } from './name-order.ts';

const facts = (id: number, name: string, lat: number | null = null, lon: number | null = null) => ({ id, name, lat, lon }) as PlaceFacts;

/** A name order over slots 0..n-1 whose place ids are `ids`. */
function built(names: string[], ids = names.map((_, i) => 100 + i)): NameOrder {
  const order = new NameOrder((slot) => ids[slot]!);
  names.forEach((name, slot) => order.fill(slot, facts(ids[slot]!, name)));
  order.seal(names.length);
  return order;
}

const all = (n: number) => RoaringBitmap32.from(Array.from({ length: n }, (_, i) => i));

describe('NameOrder', () => {
  before(() => roaringLibraryInitialize());

  test('orders by code point, not by UTF-16 unit: a letter past U+FFFF after U+FF30', () => {
    const names = ['\u{1F355} pizza', '\uFF30izza', 'Zebra', 'apple', 'Äpfel'];
    const order = built(names);
    const page = order.page(all(names.length), null, 10, names.length).map((s) => names[s]);
    assert.deepEqual(page, ['Zebra', 'apple', 'Äpfel', '\uFF30izza', '\u{1F355} pizza']);
  });

  test('breaks ties on the place id, and continues strictly after a cursor of name and id', () => {
    const names = ['Café', 'Café', 'Café', 'Bar'];
    const ids = [7, 3, 5, 9];
    const order = built(names, ids);
    const result = all(names.length);
    assert.deepEqual(
      order.page(result, null, 10, 4).map((s) => ids[s]),
      [9, 3, 5, 7],
    );
    assert.deepEqual(
      order.page(result, { key: 'Café', id: 3 }, 10, 4).map((s) => ids[s]),
      [5, 7],
    );
    // A cursor between names (its place renamed or gone since) still finds its place in the order.
    assert.deepEqual(
      order.page(result, { key: 'C', id: 0 }, 10, 4).map((s) => ids[s]),
      [3, 5, 7],
    );
    // The walk along the order (many matches: a small universe) and the pass over the matches (few) agree.
    for (const cursor of [null, { key: 'Bar', id: 9 }, { key: 'Café', id: 5 }]) {
      const walked = order.page(RoaringBitmap32.from([0, 2, 3]), cursor, 2, 1);
      const passed = order.page(RoaringBitmap32.from([0, 2, 3]), cursor, 2, 1_000_000);
      assert.deepEqual(walked, passed, JSON.stringify(cursor));
    }
    assert.deepEqual(
      order.page(RoaringBitmap32.from([0, 2, 3]), null, 2, 1).map((s) => ids[s]),
      [9, 5],
    );
  });

  test('merges a renamed place and a new slot by their current names until the rebuild', () => {
    const names = ['Alpha', 'Beta', 'Gamma'];
    const ids = [1, 2, 3, 4];
    const order = new NameOrder((slot) => ids[slot]!);
    names.forEach((name, slot) => order.fill(slot, facts(ids[slot]!, name)));
    order.seal(3);
    order.fill(2, facts(3, 'Aardvark'));
    order.fill(3, facts(4, 'Delta'));
    assert.equal(order.looseSize, 2);
    const page = order.page(all(4), null, 10, 4);
    assert.deepEqual(
      page.map((s) => order.nameOf(s)),
      ['Aardvark', 'Alpha', 'Beta', 'Delta'],
    );
    assert.deepEqual(
      order.page(all(4), { key: 'Alpha', id: 1 }, 10, 4).map((s) => order.nameOf(s)),
      ['Beta', 'Delta'],
    );
  });
});

describe('GeoIndex', () => {
  before(() => roaringLibraryInitialize());

  test('answers a box on the exact coordinates, bounds included, and follows a moved place', () => {
    const geo = new GeoIndex();
    geo.fill(0, facts(1, 'a', 43.7, 7.4));
    geo.fill(1, facts(2, 'b', 43.70000001, 7.4));
    geo.fill(2, facts(3, 'c', null, null));
    geo.seal(3);
    assert.deepEqual(geo.inBox(7.4, 43.7, 7.5, 43.7).toArray(), [0]);
    assert.deepEqual(geo.inBox(7.3, 43.6, 7.5, 43.8).toArray(), [0, 1]);
    assert.deepEqual(geo.inBox(7.5, 43.6, 7.3, 43.8).toArray(), [], 'a west edge east of the east edge holds nothing');
    geo.fill(0, facts(1, 'a', 10, 10));
    geo.fill(3, facts(4, 'd', 43.75, 7.45));
    assert.deepEqual(geo.inBox(7.3, 43.6, 7.5, 43.8).toArray(), [1, 3]);
    assert.deepEqual(geo.inBox(9, 9, 11, 11).toArray(), [0]);
  });
});
