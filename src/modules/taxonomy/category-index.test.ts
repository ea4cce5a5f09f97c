import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { copyTestSqlite, type TestDatabase } from '../../../test/helpers/databases.ts';
import { loadTaxonomyNames } from './taxonomy.build.ts';
import { categoryIndexFor, loadCategoryIndex, syncTaxonomy } from './taxonomy.ts';

const index = loadCategoryIndex();

describe('resolving category terms for the API', () => {
  test('resolves a name or synonym in any language to the same category', () => {
    for (const term of ['optician', 'Optician', 'Optiker', 'opticien', 'óptica']) assert.equal(index.resolve(term).slug, 'optician', term);
    assert.equal(index.resolve('Tierarzt').slug, 'veterinary');
    assert.equal(index.resolve('Zahnarzt', 'de').slug, 'dentist');
    assert.equal(index.resolve('boulangerie', 'fr').slug, 'bakery');
  });

  test('resolves the categories of the closed taxonomies as types, never out of free text', () => {
    assert.equal(index.resolve('airport').slug, 'aerodrome');
    assert.equal(index.resolve('factory').slug, 'works');
    for (const term of ['airport', 'factory', 'building', 'apartments'])
      assert.equal(index.resolve(term, 'en', { inText: true }).slug, null, term);
    assert.equal(index.resolve('hotel', 'en', { inText: true }).slug, 'hotel');
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
    assert.deepEqual(index.resolve('   '), { slug: null, slugs: [], candidates: [] });
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
    assert.deepEqual(optician, {
      slug: 'optician',
      parent: 'shop',
      presetId: 'shop/optician',
      osmTags: { shop: 'optician' },
      name: 'Optiker',
    });
    assert.ok(list.length > 500);
  });
});

describe('the category index over the category_names table (SQLite)', () => {
  let t: TestDatabase;
  const memory = loadCategoryIndex();
  before(async () => {
    t = await copyTestSqlite('migrated');
    await syncTaxonomy(t.db);
  });
  after(() => t.dispose());

  test('is used once the table holds the current taxonomy, and only then', async () => {
    const migratedOnly = await copyTestSqlite('migrated');
    try {
      assert.equal(categoryIndexFor(migratedOnly.db), memory, 'an empty table falls back to the names in memory');
    } finally {
      await migratedOnly.dispose();
    }
    assert.notEqual(categoryIndexFor(t.db), memory);
  });

  test('resolves every kind of term as the index in memory does', () => {
    const sql = categoryIndexFor(t.db);
    const norms = [...new Set(loadTaxonomyNames().map((n) => n.norm))].sort();
    // Names, aliases and terms of every language, their plural-looking forms, slugs and tags, and misspellings.
    const terms = norms.filter((_, i) => i % 37 === 0);
    terms.push(
      ...terms.slice(0, 60).map((w) => `${w}s`),
      'restaurant_italian',
      'shop=optician',
      'amenity=cafe',
      'Optiker Shop',
      'car repair',
    );
    const typos = norms.filter((n, i) => i % 1601 === 0 && n.length > 4).map((n) => n.slice(0, 2) + n.slice(3));
    for (const lang of [undefined, 'de', 'fr', 'pt-BR', 'ja']) {
      for (const term of [...terms, ...(lang === undefined || lang === 'de' ? typos : [])]) {
        assert.deepEqual(sql.resolve(term, lang), memory.resolve(term, lang), `${term} (${lang ?? 'no language'})`);
      }
    }
    assert.ok(terms.length > 2000 && typos.length > 30, `${terms.length} terms, ${typos.length} misspellings`);
  });

  test('names and lists the categories in every language as the index in memory does', () => {
    const sql = categoryIndexFor(t.db);
    for (const lang of [undefined, 'en', 'de', 'de-CH', 'fr', 'pt-BR', 'zh-TW', 'xx']) {
      assert.deepEqual(sql.list(lang), memory.list(lang), lang);
      for (const c of memory.list().filter((_, i) => i % 7 === 0))
        assert.equal(sql.name(c.slug, lang), memory.name(c.slug, lang), `${c.slug} ${lang}`);
    }
    assert.deepEqual(sql.subtree('shop'), memory.subtree('shop'));
  });
});
