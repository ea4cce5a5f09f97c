import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { writePlaces } from '../../../test/helpers/places.ts';
import { createReadPool } from '../../infra/db/read-pool.ts';
import { AppError } from '../../infra/errors.ts';
import { contentHash, type PlaceRecord, publicPlaceId } from '../places/place-record.ts';
import { createReadTasks, readTasksModule } from './read-tasks.ts';
import { quickSearch } from './search.service.ts';
import { createSearch } from './search.ts';
import type { SearchDeps, SearchInput } from './search.types.ts';

const MUNICH = 2867714;
const RABAT_MA = 2538475;
const RABAT_MT = 2562620;
const WELLINGTON_NZ = 2179537;
/** The populated place next to Bergambacht (NL), a village GeoNames does not list. */
const NEAR_BERGAMBACHT = 2759105;

let n = 0;
function place(name: string, category: string, city: string, cityId: number, over: Partial<PlaceRecord> = {}): PlaceRecord {
  n++;
  const base: Omit<PlaceRecord, 'content_hash'> = {
    public_id: publicPlaceId('understand', `u${n}`),
    source: 'understand',
    source_id: `u${n}`,
    name,
    names: null,
    category,
    categories: [category],
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
    city,
    city_id: cityId,
    city_source: 'address',
    city_distance_m: null,
    country_code: 'DE',
    lat: 48.13,
    lon: 11.57,
    rating: null,
    review_count: n,
    opening_hours: null,
    attributes: null,
    ...over,
  };
  return { ...base, content_hash: contentHash(base) };
}

const places = [
  place('Dr. Huber', 'dentist', 'München', MUNICH),
  place('Zahnarztpraxis Müller', 'dentist', 'München', MUNICH),
  place('Zahnarzt Café', 'cafe', 'München', MUNICH),
  place('Dental Lounge', 'bar', 'München', MUNICH),
  place('Pizzeria Roma', 'restaurant_pizza', 'München', MUNICH),
  place('Pizza Hut', 'fast_food_pizza', 'München', MUNICH),
  place('Trattoria Sole', 'restaurant_italian', 'München', MUNICH),
  place('Pizza Hut', 'fast_food_pizza', 'Köln', 2886242, { country_code: 'DE' }),
  place('Peristyle', 'restaurant', 'Rabat', RABAT_MT, { country_code: 'MT', lat: 35.88, lon: 14.4 }),
  place('Riad Café', 'cafe', 'Rabat', RABAT_MA, { country_code: 'MA', lat: 34.02, lon: -6.83 }),
  place('Pieters Restaurant', 'restaurant', 'Bergambacht', NEAR_BERGAMBACHT, {
    city_source: 'address_unmatched',
    country_code: 'NL',
    lat: 51.93,
    lon: 4.79,
  }),
  place('Five Boroughs', 'restaurant', 'Wellington City', WELLINGTON_NZ, { country_code: 'NZ', lat: -41.29, lon: 174.78 }),
];

for (const dialect of dialects) {
  describe(`what a search understands, on ${dialect.name}`, () => {
    let t: TestDatabase;
    let deps: SearchDeps;
    before(async () => {
      t = await dialect.open('migrated');
      await writePlaces(t.db, places);
      deps = createSearch(t.db, createReadPool({ db: t.db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule }));
    });
    after(async () => t.dispose());

    const search = (input: SearchInput, lang: string | null = null) =>
      quickSearch(deps, { ...input, per_page: 20 }, { lang, location: 'querystring' });
    const names = (r: Awaited<ReturnType<typeof search>>) => r.page.rows.map((p) => p.name);

    test('finds the places of a kind of business named in the free text, those whose names have the word first', async () => {
      const r = await search({ query: 'Zahnarzt', city: 'München' });
      assert.equal(r.total, 3, 'the two dentists and the café named after one');
      assert.deepEqual(names(r).slice(0, 2).sort(), ['Zahnarzt Café', 'Zahnarztpraxis Müller']);
      assert.equal(names(r)[2], 'Dr. Huber');
      assert.deepEqual(
        { ...r.resolution.type, includes: undefined, categories: undefined },
        { input: 'Zahnarzt', slug: 'dentist', name: 'Dentist', includes: undefined, categories: undefined, from: 'query' },
      );
      const english = await search({ query: 'dentist', city: 'München' });
      assert.deepEqual(names(english).sort(), ['Dr. Huber', 'Zahnarztpraxis Müller']);
      assert.equal(english.total, 2);
    });

    test('narrows the kind by the other words of the query, and keeps the places named by all of them', async () => {
      const r = await search({ query: 'pizza hut', city: 'München' });
      assert.deepEqual(names(r), ['Pizza Hut']);
      assert.deepEqual(r.resolution.type?.categories?.map((c) => c.slug).sort(), [
        'fast_food_pizza',
        'restaurant_pizza',
        'vending_machine_pizza',
      ]);
    });

    test('reads a city in the query next to a kind of business when no place was given', async () => {
      const r = await search({ query: 'pizza München' });
      assert.deepEqual(names(r).sort(), ['Pizza Hut', 'Pizzeria Roma']);
      assert.equal(r.resolution.city?.chosen.id, MUNICH);
      assert.equal(r.resolution.city?.chosen_by, 'query');
    });

    test('matches every category a type names when its language uses the term for several', async () => {
      const r = await search({ type: 'pizza', city: 'München' });
      assert.deepEqual(names(r).sort(), ['Pizza Hut', 'Pizzeria Roma']);
      assert.ok(r.resolution.type!.includes.includes('restaurant_pizza') && r.resolution.type!.includes.includes('fast_food_pizza'));
      assert.equal(r.resolution.type?.from, 'type');
    });

    test('turns to the city of the same name that has the place when the most populous one has none', async () => {
      const here = await search({ query: 'Riad Café', city: 'Rabat' });
      assert.deepEqual(
        [names(here), here.resolution.city?.chosen.id, here.resolution.city?.chosen_by],
        [['Riad Café'], RABAT_MA, 'population'],
      );
      const there = await search({ query: 'Peristyle', city: 'Rabat' });
      assert.deepEqual(
        [names(there), there.resolution.city?.chosen.id, there.resolution.city?.chosen_by],
        [['Peristyle'], RABAT_MT, 'matches'],
      );
      assert.equal(there.resolution.city?.alternatives[0]?.id, RABAT_MA, 'the first choice stays among the alternatives');
      const misspelt = await search({ query: 'Peristlye', city: 'Rabat' });
      assert.deepEqual([names(misspelt), misspelt.resolution.city?.chosen.id], [['Peristyle'], RABAT_MT]);
      const nowhere = await search({ query: 'Xylophonia', city: 'Rabat' });
      assert.deepEqual(
        [nowhere.total, nowhere.resolution.city?.chosen.id, nowhere.resolution.city?.chosen_by],
        [0, RABAT_MA, 'population'],
      );
    });

    test('resolves an address city GeoNames does not know to where its places are filed', async () => {
      const village = await search({ query: 'Pieters', city: 'Bergambacht' });
      assert.deepEqual(
        [names(village), village.resolution.city?.chosen.id, village.resolution.city?.chosen_by],
        [['Pieters Restaurant'], NEAR_BERGAMBACHT, 'address'],
      );
      const written = await search({ query: 'Five Boroughs', city: 'Wellington City' });
      assert.deepEqual(
        [names(written), written.resolution.city?.chosen.id, written.resolution.city?.chosen_by],
        [['Five Boroughs'], WELLINGTON_NZ, 'address'],
      );
      await assert.rejects(
        search({ query: 'Pieters', city: 'Xyzzyville' }),
        (e: unknown) => e instanceof AppError && e.code === 'unknown_value',
      );
    });
  });
}
