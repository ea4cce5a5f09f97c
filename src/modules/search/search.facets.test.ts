import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { testPlaceRecord, writePlaces } from '../../../test/helpers/places.ts';

/**
 * `GET /api/v2/map/facets` over HTTP (the counts themselves are compared with SQL's on real data, both
 * dialects, in test/parity/search-engine.test.ts): exact counts per value, the search's filters applied,
 * and a problem document naming the allowed values of `by`.
 */
describe('GET /api/v2/map/facets', () => {
  let t: TestApp;
  let user: TestAccount;
  before(async () => {
    t = await buildTestApp({
      prepare: (db) =>
        writePlaces(db, [
          ...Array.from({ length: 5 }, (_, i) => testPlaceRecord('facets', `a${i}`, { phone: i < 2 ? '+49 89 1' : null })),
          ...Array.from({ length: 3 }, (_, i) => testPlaceRecord('facets', `b${i}`, { category: 'cafe', categories: ['cafe'] })),
          testPlaceRecord('facets', 'berlin', { city: 'Berlin', city_id: 2950159, phone: '+49 30 1' }),
        ]),
    });
    user = await createAccountWithToken(t.db, { scopes: ['search'] });
  });
  after(async () => t.close());

  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: user.authorization } });

  test('counts the matches of a search per value, most first, with the exact total', async () => {
    const res = await get('/api/v2/map/facets?country=DE&by=category');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), {
      by: 'category',
      total: 9,
      values: [
        { value: 'restaurant', count: 6 },
        { value: 'cafe', count: 3 },
      ],
    });
    const phones = await get('/api/v2/map/facets?country=DE&has_phone=true&by=city');
    assert.deepEqual(phones.json(), {
      by: 'city',
      total: 3,
      values: [
        { value: 2867714, count: 2 },
        { value: 2950159, count: 1 },
      ],
    });
    const contact = await get('/api/v2/map/facets?country=DE&type=restaurant&by=has_phone');
    assert.deepEqual(contact.json().values, [
      { value: false, count: 3 },
      { value: true, count: 3 },
    ]);
  });

  test('answers 400 problem+json naming the allowed values of a bad `by`, and a missing criterion', async () => {
    const res = await get('/api/v2/map/facets?country=DE&by=colour');
    assert.equal(res.statusCode, 400);
    assert.match(res.headers['content-type'] as string, /application\/problem\+json/);
    assert.match(res.body, /by/);
    for (const value of ['category', 'city', 'country', 'has_phone', 'has_email', 'has_website']) assert.match(res.body, new RegExp(value));
    const none = await get('/api/v2/map/facets?by=city');
    assert.equal(none.statusCode, 400);
    assert.match(none.body, /at least one of/);
  });
});
