import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contentHash, derivedPlaceColumns, type PlaceRecord, placeColumns, publicPlaceId } from './place-record.ts';

type Stored = Omit<PlaceRecord, 'content_hash'>;

const full: Stored = {
  public_id: 'plc_ipqpurfv7v2igbnx',
  source: 'test',
  source_id: 'a',
  name: 'Zum Löwen',
  names: '{"de":"Zum Löwen"}',
  category: 'restaurant',
  categories: ['restaurant', 'cafe'],
  source_categories: '["amenity=restaurant"]',
  phone: '+49 89 1',
  phone_e164: '+49891',
  website: 'https://example.com',
  website_domain: 'example.com',
  email: 'a@example.com',
  street: 'Marienplatz',
  housenumber: '1',
  postcode: '80331',
  address: 'Marienplatz 1, 80331 München',
  region: 'Bayern',
  city: 'München',
  city_id: 2867714,
  city_source: 'address',
  city_distance_m: 120,
  country_code: 'DE',
  lat: 48.137,
  lon: 11.575,
  rating: 4.5,
  review_count: 10,
  opening_hours: 'Mo-Fr 09:00-18:00',
  attributes: '{"wifi":true}',
  closed: 0,
};

const empty: Stored = {
  ...full,
  names: null,
  category: null,
  categories: [],
  source_categories: null,
  phone: null,
  phone_e164: null,
  website: null,
  website_domain: null,
  email: null,
  street: null,
  housenumber: null,
  postcode: null,
  address: null,
  region: null,
  city: null,
  city_id: null,
  city_source: null,
  city_distance_m: null,
  country_code: null,
  lat: null,
  lon: null,
  rating: null,
  review_count: null,
  opening_hours: null,
  attributes: null,
};

/** Other values for a field: a small change, and (where it may be null) null or, from null, a value that reads like null. */
function variants(field: keyof Stored, v: unknown): unknown[] {
  // A 0/1 flag: 1 is the only other value.
  if (field === 'closed') return [1];
  if (Array.isArray(v))
    return [[], ['cafe', 'restaurant'], ['restaurant'], ['restaurant', 'cafe', 'bar'], ['restaurantcafe'], ['restaurant,cafe']];
  if (typeof v === 'number') return [v + 1, v + 1e-9, -v, 0, null];
  if (typeof v === 'string')
    return [`${v}x`, v.slice(1), ` ${v}`, '', 'null', ...(['public_id', 'source', 'source_id', 'name'].includes(field) ? [] : [null])];
  return ['null', '-', '0', 0, ''];
}

test('the content hash changes whenever any stored field changes', () => {
  // A derived column changes with its source column, which the hash covers.
  const derived: readonly string[] = derivedPlaceColumns;
  const fields = placeColumns.filter((c): c is keyof Stored => c !== 'content_hash' && !derived.includes(c));
  assert.equal(fields.length, placeColumns.length - 1 - derived.length);
  for (const base of [full, empty]) {
    const hash = contentHash(base);
    for (const field of fields) {
      for (const other of variants(field, base[field])) {
        if (JSON.stringify(other) === JSON.stringify(base[field])) continue;
        const changed = { ...base, [field]: other } as Stored;
        assert.notEqual(contentHash(changed), hash, `${field}: ${JSON.stringify(base[field])} -> ${JSON.stringify(other)}`);
      }
    }
  }
  // A value moving from one field to the next is a change too.
  assert.notEqual(contentHash({ ...empty, street: 'a', housenumber: null }), contentHash({ ...empty, street: null, housenumber: 'a' }));
  assert.notEqual(contentHash({ ...empty, street: 'ab', housenumber: null }), contentHash({ ...empty, street: 'a', housenumber: 'b' }));
});

test('the content hash is the same on every run and does not depend on key order', () => {
  const reordered = Object.fromEntries(Object.entries(full).reverse()) as Stored;
  assert.equal(contentHash(reordered), contentHash(full));
  // Pinned: a different value here means every stored row is rewritten on its next re-import.
  assert.equal(contentHash(full), PINNED);
});

test('public ids are stable: the same as ever for the same (source, source id)', () => {
  assert.equal(publicPlaceId('osm', 'n1'), 'plc_a3kq6phkyisnuh5t');
  assert.equal(publicPlaceId('osm', 'w42'), 'plc_o5hu2hofgd3vzzwk');
  assert.equal(publicPlaceId('test', 'a'), 'plc_ipqpurfv7v2igbnx');
  assert.equal(publicPlaceId('ndjson', 'Café 1'), 'plc_kx4guylrcaitfzqz');
  assert.match(publicPlaceId('x', ''), /^plc_[a-z2-7]{16}$/);
});

const PINNED = 'TBQPwYRZe_2Mu-5TZWY8t-CY2Gw';
