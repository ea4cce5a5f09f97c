import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken } from '../../../test/helpers/accounts.ts';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { writePlaces } from '../../../test/helpers/places.ts';
import { contentHash, type PlaceRecord, publicPlaceId } from '../places/place-record.ts';
import { countLeads, listLeads } from './leads.repository.ts';

function record(id: string, categories: string[]): PlaceRecord {
  const base: Omit<PlaceRecord, 'content_hash'> = {
    public_id: publicPlaceId('test', id),
    source: 'test',
    source_id: id,
    name: `Place ${id}`,
    names: null,
    category: categories[0] ?? null,
    categories,
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
    city: 'München',
    city_id: 2867714,
    city_source: 'address',
    city_distance_m: null,
    country_code: 'DE',
    lat: 48.1,
    lon: 11.5,
    rating: null,
    review_count: null,
    opening_hours: null,
    attributes: null,
  };
  return { ...base, content_hash: contentHash(base) };
}

for (const dialect of dialects) {
  describe(`leads' category filter on ${dialect.name}`, () => {
    let t: TestDatabase;
    let accountId: number;
    before(async () => {
      t = await dialect.open('migrated');
      await writePlaces(t.db, [
        record('both', ['restaurant', 'cafe']),
        record('cafe', ['cafe']),
        record('none', []),
        record('bar', ['bar']),
      ]);
      ({ accountId } = await createAccountWithToken(t.db));
      const ids = await t.db.kysely.selectFrom('places').select('id').where('source_id', '!=', 'bar').execute();
      const now = new Date().toISOString();
      await t.db.kysely
        .insertInto('leads')
        .values(
          ids.map((p) => ({
            account_id: accountId,
            place_id: p.id,
            search_id: 'srch_x',
            export_id: 1,
            first_exported_at: now,
            last_exported_at: now,
          })),
        )
        .execute();
    });
    after(async () => t.dispose());

    test("matches any of a lead's categories, primary or not, and only the account's leads", async () => {
      const names = async (category: string) =>
        (await listLeads(t.db, accountId, { category }, { limit: 10 })).map((l) => l.source_id).sort();
      assert.deepEqual(await names('cafe'), ['both', 'cafe']);
      assert.deepEqual(await names('restaurant'), ['both']);
      assert.deepEqual(await names('bar'), [], 'a place that is not a lead');
      assert.deepEqual(await names('caf'), [], 'whole slugs only');
      assert.equal(await countLeads(t.db, accountId, { category: 'cafe' }), 2);
      assert.equal(await countLeads(t.db, accountId, {}), 3);
    });
  });
}
