import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { readParquet, writeParquetLike } from '../../../test/helpers/parquet.ts';
import { placeColumns, placeRowWidth } from '../places/place-record.ts';
import { enrichedChunks } from './enriched-chunks.ts';
import { loadEnricher } from './enricher.ts';
import type { OpenOptions, ReaderFactory } from './importer.types.ts';
import { foursquareCsv } from './readers/foursquare.ts';
import { parquetPlaces } from './readers/parquet-places.ts';

const data = resolve(import.meta.dirname, '../../../../shared/data');
const boulderParquet = join(data, 'places/overture-places-boulder-3545.parquet');
const fsqCsv = join(data, 'places/fsq-os-places-sample-10k-2024-11-19.csv.gz');

const category = placeColumns.indexOf('category');
const carried = placeColumns.indexOf('source_categories');

/** Of the records that carry a category, how many got a project category; and the source they are stored under. */
async function categorised(
  factory: ReaderFactory,
  path: string,
  options: OpenOptions,
): Promise<{ carrying: number; mapped: number; sources: Set<unknown> }> {
  const reader = await factory.open(path, options);
  const out = { carrying: 0, mapped: 0, sources: new Set<unknown>() };
  for await (const chunk of enrichedChunks(reader, loadEnricher(), 5000)) {
    const v = chunk.rows.values;
    for (let i = 0; i < chunk.rows.count; i++) {
      out.sources.add(v[i * placeRowWidth + placeColumns.indexOf('source')]);
      if (v[i * placeRowWidth + carried] === null) continue;
      out.carrying++;
      if (v[i * placeRowWidth + category] !== null) out.mapped++;
    }
  }
  return out;
}

describe('the publisher decides the category table, not the --source label', () => {
  let dir: string;
  let noCategories: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'publisher-categories-'));
    // A current Overture release: `taxonomy` and `basic_category` only, the older `categories` column gone.
    const { metadata, rows } = await readParquet(boulderParquet);
    noCategories = join(dir, 'overture-boulder-no-categories.parquet');
    writeParquetLike(noCategories, metadata, rows, { drop: ['categories'] });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('Overture places labelled acme-overture get the categories the default label gives them', async () => {
    const plain = await categorised(parquetPlaces, noCategories, {});
    const labelled = await categorised(parquetPlaces, noCategories, { source: 'acme-overture' });
    assert.deepEqual([...labelled.sources], ['acme-overture']);
    assert.deepEqual([plain.carrying, plain.mapped], [3285, 3259]);
    assert.deepEqual([labelled.carrying, labelled.mapped], [plain.carrying, plain.mapped]);
  });

  test('Foursquare places labelled fsq-eu get the categories the default label gives them', async () => {
    const plain = await categorised(foursquareCsv, fsqCsv, {});
    const labelled = await categorised(foursquareCsv, fsqCsv, { source: 'fsq-eu' });
    assert.deepEqual([...labelled.sources], ['fsq-eu']);
    assert.equal(plain.carrying, 8904);
    assert.deepEqual([labelled.carrying, labelled.mapped], [plain.carrying, plain.mapped]);
  });
});
