import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fieldPreferences, type MemberRecord, mergeRecords, otherSourceNamesKey } from './merge.ts';

let nextId = 1;
/** A stored record with only what a test sets. */
function record(source: string, fields: Partial<MemberRecord> = {}): MemberRecord {
  return {
    id: nextId++,
    public_id: `plc_${source}`,
    source,
    source_id: `${source}-1`,
    name: 'Le Grill',
    names: null,
    category: 'restaurant',
    categories: '["restaurant"]',
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
    city: 'Monaco',
    city_id: 1,
    city_source: 'nearest',
    city_distance_m: 10,
    country_code: 'MC',
    lat: 43.7,
    lon: 7.4,
    rating: null,
    review_count: null,
    opening_hours: null,
    attributes: null,
    closed: 0,
    content_hash: `h-${source}`,
    ...fields,
  };
}

test('OpenStreetMap leads what the business is and where, whichever record joined first', () => {
  const yelp = record('yelp', { name: 'The Grill', lat: 43.71, lon: 7.41, country_code: 'FR', city: 'Beausoleil' });
  const osm = record('osm', { name: 'Le Grill', lat: 43.7, lon: 7.4, country_code: 'MC', city: 'Monaco' });
  const m = mergeRecords([yelp, osm]);
  assert.equal(m.values.name, 'Le Grill');
  assert.equal(m.values.source, 'osm');
  assert.deepEqual([m.values.lat, m.values.lon, m.values.country_code, m.values.city], [43.7, 7.4, 'MC', 'Monaco']);
  assert.deepEqual(m.sources, [
    { source: 'osm', source_id: 'osm-1' },
    { source: 'yelp', source_id: 'yelp-1' },
  ]);
  // The other source's name stays searchable.
  assert.deepEqual(JSON.parse(m.values.names!)[otherSourceNamesKey], ['The Grill']);
  assert.equal(m.fieldSources.name, 'osm');
  assert.equal(m.fieldSources.location, 'osm');
});

test('the rating comes from the source with the most reviews, with its own review count', () => {
  const m = mergeRecords([
    record('osm'),
    record('gmaps', { rating: 4.1, review_count: 900 }),
    record('yelp', { rating: 4.5, review_count: 120 }),
  ]);
  assert.deepEqual([m.values.rating, m.values.review_count, m.fieldSources.rating], [4.1, 900, 'gmaps']);
});

test('opening hours from OpenStreetMap where it has them; website, phone, email from whichever has one', () => {
  const m = mergeRecords([
    record('michelin', {
      website: 'https://grill.mc/',
      website_domain: 'grill.mc',
      opening_hours: 'daily 12-14',
      phone: '+377 1',
      phone_e164: '+3771',
    }),
    record('osm', { opening_hours: 'Mo-Su 19:00-22:00', email: 'grill@example.mc' }),
  ]);
  assert.equal(m.values.opening_hours, 'Mo-Su 19:00-22:00');
  assert.deepEqual([m.values.website, m.values.website_domain, m.fieldSources.website], ['https://grill.mc/', 'grill.mc', 'michelin']);
  assert.deepEqual([m.values.phone, m.values.phone_e164, m.fieldSources.phone], ['+377 1', '+3771', 'michelin']);
  assert.deepEqual([m.values.email, m.fieldSources.email], ['grill@example.mc', 'osm']);
  assert.equal(m.fieldSources.rating, undefined, 'no source rates it: no rating source');
  const osmWithoutHours = mergeRecords([record('michelin', { opening_hours: 'daily 12-14' }), record('osm')]);
  assert.deepEqual([osmWithoutHours.values.opening_hours, osmWithoutHours.fieldSources.opening_hours], ['daily 12-14', 'michelin']);
});

test('an address is taken whole from one record, never a street from one and a number from another', () => {
  const m = mergeRecords([
    record('osm', { street: 'Place du Casino', housenumber: null, address: 'Place du Casino' }),
    record('michelin', { street: 'Avenue des Spélugues', housenumber: '12', postcode: '98000', address: '12 Avenue des Spélugues, 98000' }),
  ]);
  assert.deepEqual([m.values.street, m.values.housenumber, m.values.postcode], ['Place du Casino', null, null]);
  assert.equal(m.fieldSources.address, 'osm');
});

test('categories are the union, the preferred record’s first; the place is closed only when every source says so', () => {
  const m = mergeRecords([
    record('osm', { categories: '["restaurant","bar"]' }),
    record('yelp', { category: 'cafe', categories: '["cafe","bar"]', closed: 1 }),
  ]);
  assert.deepEqual(m.values.categories, ['restaurant', 'bar', 'cafe']);
  assert.equal(m.values.category, 'restaurant');
  assert.equal(m.closed, false);
  assert.equal(mergeRecords([record('osm', { closed: 1 }), record('yelp', { closed: 1 })]).closed, true);
});

test('every field of a record is in exactly one group of the preferences', () => {
  const grouped = Object.values(fieldPreferences).flatMap((g) => [...g.columns]);
  assert.equal(new Set(grouped).size, grouped.length, 'no field in two groups');
  const rest = ['id', 'public_id', 'source', 'source_id', 'categories', 'closed', 'content_hash'];
  const all = Object.keys(record('osm'))
    .filter((k) => !rest.includes(k))
    .sort();
  assert.deepEqual([...grouped].sort(), all);
});
