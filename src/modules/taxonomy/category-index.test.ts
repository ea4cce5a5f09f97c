import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadCategoryIndex } from './taxonomy.ts';

const index = loadCategoryIndex();

describe('resolving category terms for the API', () => {
  test('resolves a name or synonym in any language to the same category', () => {
    for (const term of ['optician', 'Optician', 'Optiker', 'opticien', 'óptica']) assert.equal(index.resolve(term).slug, 'optician', term);
    assert.equal(index.resolve('Tierarzt').slug, 'veterinary');
    assert.equal(index.resolve('Zahnarzt', 'de').slug, 'dentist');
    assert.equal(index.resolve('boulangerie', 'fr').slug, 'bakery');
  });

  test('resolves plural forms', () => {
    assert.equal(index.resolve('restaurants').slug, 'restaurant');
    assert.equal(index.resolve('hotels').slug, 'hotel');
    assert.equal(index.resolve('bakeries').slug, 'bakery');
  });

  test('resolves English trade words without the word for the premises', () => {
    assert.equal(index.resolve('car repair').slug, 'car_repair');
    assert.equal(index.resolve('beauty salon').slug, 'beauty');
    assert.equal(index.resolve('Optiker Shop').slug, 'optician');
  });

  test('lets English break a tie between languages when no language is given', () => {
    assert.equal(index.resolve('coffee shop').slug, 'cafe_coffee_shop');
    assert.equal(index.resolve('gym').slug, 'fitness_centre');
  });

  test('accepts slugs and OSM tags', () => {
    assert.equal(index.resolve('restaurant_italian').slug, 'restaurant_italian');
    assert.equal(index.resolve('shop=optician').slug, 'optician');
  });

  test('returns the closest candidates and no slug for an unknown term', () => {
    const typo = index.resolve('resturant');
    assert.equal(typo.slug, null);
    assert.equal(typo.candidates[0]?.slug, 'restaurant');
    assert.ok(typo.candidates.length <= 5);
    for (const c of typo.candidates) assert.ok(c.score > 0 && c.score < 1, `${c.slug} ${c.score}`);
    assert.deepEqual(index.resolve('   '), { slug: null, candidates: [] });
  });

  test('names the category in the requested language, falling back to the base language and English', () => {
    assert.equal(index.name('optician', 'de'), 'Optiker');
    assert.equal(index.name('optician', 'de-CH'), 'Optiker');
    assert.equal(index.name('optician', 'xx'), 'Optician');
    assert.equal(index.name('no_such_category', 'en'), undefined);
    assert.equal(index.resolve('Optiker', 'de').candidates[0]?.name, 'Optiker');
  });

  test('expands a category to its descendants for a type filter', () => {
    const restaurants = index.subtree('restaurant');
    assert.equal(restaurants[0], 'restaurant');
    assert.ok(restaurants.includes('restaurant_italian'));
    assert.ok(!restaurants.includes('cafe'));
    assert.ok(index.descendants('shop').includes('optician'));
    assert.ok(!index.descendants('restaurant').includes('restaurant'));
    assert.deepEqual(index.descendants('restaurant_italian'), []);
    assert.deepEqual(index.subtree('no_such_category'), []);
  });

  test('lists every category with its parent and localised name', () => {
    const list = index.list('de');
    const optician = list.find((c) => c.slug === 'optician');
    assert.deepEqual(optician, { slug: 'optician', parent: 'shop', presetId: 'shop/optician', osmTags: { shop: 'optician' }, name: 'Optiker' });
    assert.ok(list.length > 500);
  });
});
