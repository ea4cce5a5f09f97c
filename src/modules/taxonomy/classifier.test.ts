import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { PlaceInput } from '../places/place-input.ts';
import { SOURCE_OVERRIDES } from './source-overrides.ts';
import { loadTaxonomy } from './taxonomy.build.ts';
import { readSourceSamples } from './taxonomy.samples.ts';
import { loadClassifier } from './taxonomy.ts';

const dataDir = fileURLToPath(new URL('../../../../shared/data', import.meta.url));
const classifier = loadClassifier();
const place = (sourceCategories: string[], osmTags?: Record<string, string>): PlaceInput => ({
  sourceId: 'test',
  name: 'Test',
  sourceCategories,
  ...(osmTags ? { osmTags } : {}),
});
const classify = (source: string, categories: string[], osmTags?: Record<string, string>) =>
  classifier.classify(source, place(categories, osmTags));

describe('classifying OpenStreetMap places on their tags', () => {
  test('picks the most specific preset: an Italian restaurant, not just a restaurant', () => {
    assert.deepEqual(classify('osm', ['amenity=restaurant'], { amenity: 'restaurant', cuisine: 'italian', name: 'Da Mario' }), [
      'restaurant_italian',
    ]);
    assert.deepEqual(classify('osm', ['amenity=restaurant'], { amenity: 'restaurant', cuisine: 'basque' }), ['restaurant']);
  });

  test('adds the best preset of another key the place also carries', () => {
    assert.deepEqual(classify('osm', [], { amenity: 'cafe', shop: 'bakery' }), ['cafe', 'bakery']);
  });

  test('maps merged and generic presets onto their category', () => {
    assert.deepEqual(classify('osm', [], { amenity: 'university' }), ['university']);
    assert.deepEqual(classify('osm', [], { shop: 'yes' }), ['shop']);
    assert.deepEqual(classify('osm', [], { shop: 'boutique' }), ['clothes']);
    assert.deepEqual(classify('osm', [], { shop: 'an_unheard_of_value' }), ['shop']);
    assert.deepEqual(classify('osm', [], { shop: 'optician' }), ['optician']);
    assert.deepEqual(classify('osm', [], { amenity: 'veterinary' }), ['veterinary']);
  });

  test('gives the same answer whatever the order of the tags', () => {
    assert.deepEqual(classify('osm', [], { shop: 'bakery', amenity: 'cafe' }), ['cafe', 'bakery']);
    assert.deepEqual(classify('osm', [], { amenity: 'cafe', shop: 'bakery' }), ['cafe', 'bakery']);
  });

  test('upgrades deprecated tags and cuts multi-values when only a generic preset matched', () => {
    assert.deepEqual(classify('osm', [], { amenity: 'gym' }), ['fitness_centre']);
    assert.deepEqual(classify('osm', [], { shop: 'jewellery' }), ['jewelry']);
    assert.deepEqual(classify('osm', [], { shop: 'hairdresser;beauty' }), ['hairdresser']);
  });

  test('returns nothing for tags no category preset matches', () => {
    assert.deepEqual(classify('osm', [], { highway: 'bus_stop', name: 'Central' }), []);
    assert.deepEqual(classify('osm', [], { shop: 'no' }), []);
  });

  test('matches key=value source categories when the tags are missing', () => {
    assert.deepEqual(classify('osm', ['amenity=restaurant', 'cuisine=italian']), ['restaurant_italian']);
  });
});

describe('classifying other sources on their category terms', () => {
  test('maps Google Maps categories', () => {
    assert.deepEqual(classify('gmaps', ['Italian restaurant']), ['restaurant_italian']);
    assert.deepEqual(classify('gmaps', ['Hair salon']), ['hairdresser']);
    assert.deepEqual(classify('gmaps', ['Southern Italian restaurant']), ['restaurant_italian']);
    assert.deepEqual(classify('gmaps', ['Coffee shop']), ['cafe_coffee_shop']);
    assert.deepEqual(classify('gmaps', ['Bakery']), ['bakery']);
  });

  test('maps Yelp aliases and titles alike', () => {
    assert.deepEqual(classify('yelp', ['sandwiches', 'delis']), ['fast_food_sandwich', 'deli']);
    assert.deepEqual(classify('yelp', ['Sandwiches', 'Delis']), ['fast_food_sandwich', 'deli']);
    assert.deepEqual(classify('yelp', ['newamerican']), ['restaurant_american']);
    assert.deepEqual(classify('yelp', ['American (New)']), ['restaurant_american']);
    assert.deepEqual(classify('yelp', ['Veterinarians', 'Pets']), ['veterinary', 'pet']);
  });

  test('drops a category when one of its descendants is also listed', () => {
    assert.deepEqual(classify('yelp', ['Restaurants', 'Italian', 'Pizza']), ['restaurant_italian', 'restaurant_pizza']);
  });

  test('puts specific categories before broad parents and skips parents that mean nothing', () => {
    assert.deepEqual(classify('yelp', ['Health & Medical', 'Doctors']), ['doctors', 'healthcare']);
    assert.deepEqual(classify('yelp', ['Food']), []);
  });

  test('maps Overture snake_case categories', () => {
    assert.deepEqual(classify('overture', ['real_estate_agent']), ['estate_agent']);
    assert.deepEqual(classify('overture', ['college_university']), ['university']);
    assert.deepEqual(classify('overture', ['italian_restaurant']), ['restaurant_italian']);
    assert.deepEqual(classify('overture', ['clothing_store']), ['clothes']);
    assert.deepEqual(classify('overture', ['park', 'hiking_trail']), ['park']);
  });

  test('makes every Michelin and Zomato place a restaurant, with its cuisine where iD has a preset for it', () => {
    assert.deepEqual(classify('michelin', ['Modern Cuisine']), ['restaurant']);
    assert.deepEqual(classify('michelin', ['Japanese']), ['restaurant_japanese']);
    assert.deepEqual(classify('michelin', ['Seafood']), ['restaurant_seafood']);
    assert.deepEqual(classify('zomato', ['North Indian', 'Chinese']), ['restaurant_indian', 'restaurant_chinese']);
    assert.deepEqual(classify('zomato', ['Cafe']), ['cafe']);
    assert.deepEqual(classify('zomato', ['Vegetarian']), ['restaurant']);
  });

  test('has override tables that name existing categories only', () => {
    const slugs = new Set(loadTaxonomy().categories.map((c) => c.slug));
    for (const [source, table] of Object.entries(SOURCE_OVERRIDES)) {
      for (const [term, slug] of Object.entries(table)) if (slug !== null) assert.ok(slugs.has(slug), `${source}: ${term} → ${slug}`);
    }
  });

  test('falls back to names in other languages for any source', () => {
    assert.deepEqual(classify('csv', ['Optiker']), ['optician']);
    assert.deepEqual(classify('csv', ['Tierarzt']), ['veterinary']);
    assert.deepEqual(classify('csv', ['no such trade anywhere']), []);
  });
});

describe('coverage on the real sample files', () => {
  for (const sample of readSourceSamples(dataDir)) {
    test(`maps more than 90% of the ${sample.source} places with a category in ${sample.file}`, () => {
      const withCategory = sample.places.filter((p) => p.sourceCategories.length > 0 || p.osmTags);
      const mapped = withCategory.filter((p) => classifier.classify(sample.source, { sourceId: 'x', name: 'x', ...p }).length > 0);
      assert.ok(mapped.length / withCategory.length > 0.9, `${mapped.length} of ${withCategory.length}`);
    });
  }
});
