import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { loadClassifier } from '../classifier.ts';
import { loadTaxonomy } from '../taxonomy.build.ts';
import { lookUpSourceMap, SOURCE_MAPS, SOURCE_UNMAPPED } from './index.ts';
import { UNMAPPED_REASONS } from './unmapped.ts';

const data = resolve(import.meta.dirname, '../../../../../shared/data');
const csv = (file: string, delimiter = ','): Array<Record<string, string>> =>
  parse(readFileSync(resolve(data, file), 'utf8'), { columns: true, bom: true, delimiter, trim: true, relax_quotes: true }) as Array<
    Record<string, string>
  >;
const slugs = new Set(loadTaxonomy().categories.map((c) => c.slug));

/** Every code the published Overture files name: current taxonomy, its basic categories, the old list, the counts. */
function publishedOvertureCodes(): Set<string> {
  const codes = new Set<string>();
  for (const r of csv('taxonomies/overture-categories-hierarchies-2026-03-04.csv')) {
    for (const k of ['New Primary Category', 'New Basic Level Category', 'Old Primary Category', 'PC Redirect To'])
      if (r[k]) codes.add(r[k]!);
  }
  for (const r of csv('taxonomies/overture-categories-counts-2025-12-05.csv'))
    for (const k of ['primary', 'primary_category', 'basic_category']) if (r[k]) codes.add(r[k]!);
  for (const r of csv('taxonomies/overture-categories-legacy.csv', ';')) codes.add(r['Category code']!);
  const sample = gunzipSync(readFileSync(resolve(data, 'places/overture-places-boulder-3545.ndjson.gz')))
    .toString('utf8')
    .split('\n')
    .filter(Boolean);
  for (const line of sample) {
    const o = JSON.parse(line) as {
      categories?: { primary?: string; alternate?: string[] };
      basic_category?: string;
      taxonomy?: { hierarchy?: string[]; alternates?: string[] };
    };
    for (const c of [
      o.categories?.primary,
      ...(o.categories?.alternate ?? []),
      o.basic_category,
      ...(o.taxonomy?.hierarchy ?? []),
      ...(o.taxonomy?.alternates ?? []),
    ])
      if (c) codes.add(c);
  }
  return codes;
}

describe('the explicit category tables of Overture and Foursquare', () => {
  test('map every Overture category of the published taxonomy files and of the sample to a category or list it as unmapped', () => {
    const table = SOURCE_MAPS.overture!;
    const missing = [...publishedOvertureCodes()].filter((c) => !Object.hasOwn(table, c));
    assert.deepEqual(missing, []);
    const unknown = Object.entries(table).filter(([, slug]) => slug !== null && !slugs.has(slug));
    assert.deepEqual(unknown, []);
  });

  test('map every one of the 1,245 published Foursquare categories to a category or list it as unmapped', () => {
    const table = SOURCE_MAPS.foursquare!;
    const labels = csv('taxonomies/fsq-os-categories-1245.csv').map((r) => r['category_label']!);
    assert.equal(labels.length, 1245);
    assert.deepEqual(
      labels.filter((l) => !Object.hasOwn(table, l)),
      [],
    );
    assert.deepEqual(
      Object.entries(table).filter(([, slug]) => slug !== null && !slugs.has(slug)),
      [],
    );
  });

  for (const source of ['overture', 'foursquare']) {
    test(`list every ${source} category left unmapped with its reason, and only those`, () => {
      const table = SOURCE_MAPS[source]!;
      const unmapped = SOURCE_UNMAPPED[source]!;
      const nulls = Object.keys(table).filter((k) => table[k] === null);
      assert.deepEqual(
        nulls.filter((k) => !Object.hasOwn(unmapped, k)),
        [],
        'left null without a reason',
      );
      assert.deepEqual(
        Object.keys(unmapped).filter((k) => table[k] !== null),
        [],
        'listed as unmapped but mapped (or not in the table)',
      );
      assert.deepEqual(
        Object.entries(unmapped).filter(([, reason]) => !Object.hasOwn(UNMAPPED_REASONS, reason)),
        [],
      );
    });
  }

  test('file a code a newer release adds under its nearest known parent, and a deliberately unmapped one nowhere', () => {
    const table = SOURCE_MAPS.overture!;
    assert.equal(lookUpSourceMap(table, 'food_and_drink > restaurant > italian_restaurant > pizza_restaurant'), 'restaurant_pizza');
    assert.equal(
      lookUpSourceMap(table, 'food_and_drink > restaurant > italian_restaurant > a_code_of_2027'),
      lookUpSourceMap(table, 'italian_restaurant'),
    );
    assert.equal(lookUpSourceMap(table, 'geographic_entities > water_feature > lake'), null);
    assert.equal(lookUpSourceMap(table, 'no_such_group > no_such_code'), undefined);
    const classifier = loadClassifier();
    const classify = (source: string, sourceCategories: string[]) =>
      classifier.classify(source, { sourceId: 'x', name: 'x', sourceCategories });
    assert.deepEqual(classify('overture', ['food_and_drink > restaurant > italian_restaurant > a_code_of_2027']), ['restaurant_italian']);
    assert.deepEqual(classify('foursquare', ['Dining and Drinking > Restaurant > Italian Restaurant > Trattoria of the Future']), [
      'restaurant_italian',
    ]);
    assert.deepEqual(classify('foursquare', ['Landmarks and Outdoors > Lake']), []);
  });
});
