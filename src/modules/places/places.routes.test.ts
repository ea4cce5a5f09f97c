import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { munichExtract } from '../../../test/helpers/exports.ts';
import type { App } from '../../app.ts';
import { type PlaceDetails, placeFields } from './places.schema.ts';

for (const database of ['sqlite', 'postgres'] as const) {
  describe(`GET /api/v1/places/{id} on the Munich OpenStreetMap extract (${database})`, () => {
    let t: TestApp;
    let app: App;
    let account: TestAccount;
    let ratskeller: string;

    before(async () => {
      t = await buildTestApp({ dialect: database, files: [munichExtract] });
      app = t.app;
      await app.ready();
      account = await createAccountWithToken(t.db);
      const row = await t.db.kysely
        .selectFrom('places')
        .select('public_id')
        .where('name', '=', 'Ratskeller')
        .where('city', '=', 'München')
        .executeTakeFirstOrThrow();
      ratskeller = row.public_id;
    });
    after(async () => {
      await t.close();
    });

    const get = (url: string) => app.inject({ method: 'GET', url, headers: { authorization: account.authorization } });

    test('answers the place in the public shape of a search result, every field, plus its origin', async () => {
      const res = await get(`/api/v1/places/${ratskeller}`);
      assert.equal(res.statusCode, 200, res.body);
      const place = res.json<PlaceDetails>();
      for (const f of placeFields) assert.ok(f in place, `field ${f}`);
      assert.equal(place.id, ratskeller);
      assert.equal(place.name, 'Ratskeller');
      assert.equal(place.phone_e164, '+49892199890');
      assert.equal(place.source, 'osm');
      assert.match(place.origin.source_id, /^[nwr]\d+$/);
      assert.match(String(place.origin.url), /^https:\/\/www\.openstreetmap\.org\/(node|way|relation)\/\d+$/);
      assert.equal(place.origin.file, 'munich-center-2020.osm.pbf');
      assert.ok(place.origin.imported_at && !Number.isNaN(Date.parse(place.origin.imported_at)));

      // The same serializer as the search: the place as a search finds it is the same object, origin aside.
      const search = await app.inject({
        method: 'GET',
        url: `/api/v2/map/search?query=Ratskeller&city=M%C3%BCnchen&per_page=100`,
        headers: { authorization: (await createAccountWithToken(t.db, { scopes: ['search'] })).authorization },
      });
      const found = search.json<{ data: Array<Record<string, unknown>> }>().data.find((p) => p.id === ratskeller);
      const { origin: _origin, field_sources: fieldSources, ...shape } = place;
      assert.deepEqual(shape, found);
      // A place of one record: no field comes from another source.
      assert.deepEqual(fieldSources, {});
      assert.deepEqual(place.sources, [{ source: 'osm', source_id: place.origin.source_id }]);
    });

    test('answers 404 problem+json for an id no place has', async () => {
      const res = await get('/api/v1/places/plc_aaaaaaaaaaaaaaaa');
      assert.equal(res.statusCode, 404);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      assert.equal(res.json().code, 'not_found');
    });

    test('answers 400 naming params.id for a malformed id', async () => {
      for (const bad of ['12', 'plc_', 'plc_AAAAAAAAAAAAAAAA', 'srch_aaaaaaaaaaaaaaaa', `plc_${'a'.repeat(17)}`, '%E2%82%AC']) {
        const res = await get(`/api/v1/places/${bad}`);
        assert.equal(res.statusCode, 400, bad);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
        assert.ok(
          res.json<{ errors: Array<{ field: string }> }>().errors.some((e) => e.field === 'params.id'),
          res.body,
        );
      }
    });

    test('refuses query parameters', async () => {
      const res = await get(`/api/v1/places/${ratskeller}?fields=name`);
      assert.equal(res.statusCode, 400);
    });

    describeAuthSuite(
      {
        method: 'GET',
        get url() {
          return `/api/v1/places/${ratskeller}`;
        },
        scope: 'places:read',
      },
      () => ({ app, db: t.db }),
    );
  });
}
