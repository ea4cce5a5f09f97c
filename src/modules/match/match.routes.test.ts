import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import { munichExtract } from '../../../test/helpers/exports.ts';
import type { App } from '../../app.ts';
import type { Place } from '../places/places.schema.ts';

interface Result {
  ref: string;
  match: { place: Place; score: number; evidence: Record<string, unknown> } | null;
  candidates: Array<{ id: string; score: number }>;
  error?: { status: number; code: string; errors: Array<{ field: string }> };
}

for (const { name: database } of dialects) {
  describe(`POST /api/v2/match on the Munich OpenStreetMap extract (${database})`, () => {
    let t: TestApp;
    let app: App;
    let account: TestAccount;
    let ratskeller: { public_id: string; phone: string | null };

    before(async () => {
      t = await buildTestApp({ dialect: database, files: [munichExtract] });
      app = t.app;
      await app.ready();
      account = await createAccountWithToken(t.db);
      ratskeller = await t.db.kysely
        .selectFrom('places')
        .select(['public_id', 'phone'])
        .where('name', '=', 'Ratskeller')
        .where('city', '=', 'München')
        .executeTakeFirstOrThrow();
    });
    after(async () => {
      await t.close();
    });

    const match = (payload: unknown) =>
      app.inject({ method: 'POST', url: '/api/v2/match', headers: { authorization: account.authorization }, payload: payload as object });

    test('finds records typed the way a CRM holds them, in the order of the request, with the evidence', async () => {
      const res = await match({
        records: [
          { ref: 'by-address', name: 'Ratskeller München GmbH', street: 'Marienpl.', housenumber: '8', city: 'Munich' },
          { ref: 'unknown', name: 'Kanzlei Obermaier & Partner GmbH', city: 'Muenchen' },
          { ref: 'by-phone', name: 'RATSKELLER', phone: '089 2199890', country: 'DE' },
          { ref: 'by-point', name: 'Ratskeller', lat: 48.13737, lon: 11.57546 },
        ],
      });
      assert.equal(res.statusCode, 200, res.body);
      const { results, threshold } = res.json<{ results: Result[]; threshold: number }>();
      assert.deepEqual(
        results.map((r) => r.ref),
        ['by-address', 'unknown', 'by-phone', 'by-point'],
      );
      assert.equal(typeof threshold, 'number');
      for (const ref of ['by-address', 'by-phone', 'by-point']) {
        const r = results.find((x) => x.ref === ref)!;
        assert.equal(r.match?.place.id, ratskeller.public_id, `${ref}: ${JSON.stringify(r)}`);
        assert.ok(r.match!.score >= threshold && r.match!.score <= 1);
        assert.equal(r.candidates[0]!.id, ratskeller.public_id);
      }
      assert.equal(results[0]!.match!.evidence.address, 'same');
      assert.equal(results[0]!.match!.evidence.city, 'same');
      assert.equal(results[2]!.match!.evidence.phone, 'same');
      assert.equal(typeof results[3]!.match!.evidence.distance_m, 'number');
      assert.equal(results[1]!.match, null);
      assert.equal('placeRowId' in results[0]!.match!, false);
    });

    test('answers the matched place exactly as search returns it', async () => {
      const res = await match({ records: [{ ref: 'a', name: 'Ratskeller', street: 'Marienplatz 8', city: 'München' }] });
      const place = res.json<{ results: Result[] }>().results[0]!.match!.place;
      const search = await app.inject({
        method: 'GET',
        url: `/api/v2/map/search?query=Ratskeller&city=M%C3%BCnchen`,
        headers: { authorization: account.authorization },
      });
      assert.equal(search.statusCode, 200, search.body);
      const found = search.json<{ data: Place[] }>().data.find((p) => p.id === place.id);
      assert.deepEqual(place, found);
    });

    test('never matches the business next door: another name at the same address', async () => {
      const res = await match({ records: [{ ref: 'next-door', name: 'Juwelier Hofmann GmbH', address: 'Marienplatz 8, 80331 München' }] });
      const [r] = res.json<{ results: Result[] }>().results;
      assert.equal(r!.match, null, JSON.stringify(r));
    });

    test('matches a closed place and says it is closed', async () => {
      // A place whose name no other place of the extract carries.
      const target = await t.db.kysely
        .selectFrom('places as p')
        .select(['p.id', 'p.public_id', 'p.name'])
        .where('p.phone', 'is not', null)
        .where((eb) =>
          eb.not(eb.exists(eb.selectFrom('places as q').select('q.id').whereRef('q.name', '=', 'p.name').whereRef('q.id', '<>', 'p.id'))),
        )
        .orderBy('p.id')
        .executeTakeFirstOrThrow();
      await t.db.kysely
        .updateTable('places')
        .set({ closed: 1, closed_at: new Date().toISOString(), closed_reason: 'closed' })
        .where('id', '=', target.id)
        .execute();
      const row = await t.db.kysely.selectFrom('places').select(['lat', 'lon']).where('id', '=', target.id).executeTakeFirstOrThrow();
      const res = await match({ records: [{ ref: 'c', name: target.name, lat: row.lat!, lon: row.lon! }] });
      const [r] = res.json<{ results: Result[] }>().results;
      assert.equal(r!.match?.place.id, target.public_id, JSON.stringify(r));
      assert.equal(r!.match!.place.status, 'closed');
    });

    test('answers a bad record with a problem of its own, and the other records as usual', async () => {
      const res = await match({
        records: [
          { ref: 'no-name', city: 'München' },
          { ref: 'blank-name', name: '  ' },
          { ref: 'country', name: 'Ratskeller', country: 'Atlantis' },
          { ref: 'lat', name: 'Ratskeller', lat: 91, lon: 11.5 },
          { ref: 'lon-alone', name: 'Ratskeller', lon: 11.5 },
          { ref: 'good', name: 'Ratskeller', street: 'Marienplatz', housenumber: '8', city: 'München' },
        ],
      });
      assert.equal(res.statusCode, 200, res.body);
      const results = res.json<{ results: Result[] }>().results;
      const fieldOf = (ref: string) => results.find((r) => r.ref === ref)!.error?.errors[0]?.field;
      assert.equal(fieldOf('no-name'), 'name');
      assert.equal(fieldOf('blank-name'), 'name');
      assert.equal(fieldOf('country'), 'country');
      assert.equal(fieldOf('lat'), 'lat');
      assert.equal(fieldOf('lon-alone'), 'lat');
      for (const r of results.filter((x) => x.error)) {
        assert.equal(r.error!.status, 400);
        assert.equal(r.error!.code, 'validation_failed');
        assert.equal(r.match, null);
      }
      assert.equal(results.find((r) => r.ref === 'good')!.match?.place.id, ratskeller.public_id);
    });

    test('answers 400 naming the field for a body that is not a list of records, too many records or a bad threshold', async () => {
      const cases: Array<[unknown, string]> = [
        [{ records: 'Ratskeller' }, 'records'],
        [{ records: Array.from({ length: 101 }, (_, i) => ({ ref: `r${i}`, name: 'x' })) }, 'records'],
        [{ records: [{ ref: 'a', name: 'Ratskeller' }], threshold: 2 }, 'threshold'],
        [{ records: [] }, 'records'],
      ];
      for (const [payload, field] of cases) {
        const res = await match(payload);
        assert.equal(res.statusCode, 400, res.body);
        assert.match(res.headers['content-type'] as string, /application\/problem\+json/);
        const body = res.json<{ errors: Array<{ field: string }> }>();
        assert.ok(
          body.errors.some((e) => e.field.includes(field)),
          `${field}: ${res.body}`,
        );
      }
    });

    describeAuthSuite(
      { method: 'POST', url: '/api/v2/match', scope: 'match', payload: { records: [{ ref: 'a', name: 'Ratskeller', city: 'München' }] } },
      () => ({ app, db: t.db }),
    );
  });
}
