import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { readParquet, writeParquetLike } from '../../../test/helpers/parquet.ts';
import { loadEnricher } from '../../bootstrap.ts';
import { lookUpSourceMap, SOURCE_MAPS } from '../taxonomy/source-maps/index.ts';
import { type ImportSummary, runImport } from './import.service.ts';

const data = resolve(import.meta.dirname, '../../../../shared/data');
const boulderParquet = join(data, 'places/overture-places-boulder-3545.parquet');
const boulderNdjson = join(data, 'places/overture-places-boulder-3545.ndjson.gz');
const fsqParquet = join(data, 'places/fsq-os-places-sample-10k-2024-11-19.parquet');
const fsqCsv = join(data, 'places/fsq-os-places-sample-10k-2024-11-19.csv.gz');

const noConflation = { conflate: false };

interface Coverage {
  /** Places whose record carries a category. */
  carrying: number;
  /** Of those, the ones that got a project category. */
  mapped: number;
  /** Of the carrying ones, those whose every category the source's table deliberately leaves unmapped. */
  deliberatelyUnmapped: number;
}

for (const dialect of dialects) {
  describe(`importing Overture and Foursquare Parquet (${dialect.name})`, () => {
    let t: TestDatabase;
    let dir: string;
    let overture: ImportSummary;
    let foursquare: ImportSummary;

    const rows = (source: string) =>
      t.db.kysely
        .selectFrom('places')
        .select(['id', 'public_id', 'source_id', 'category', 'source_categories', 'closed', 'closed_reason', 'phone', 'attributes'])
        .where('source', '=', source)
        .execute();

    async function coverage(source: string): Promise<Coverage> {
      const table = SOURCE_MAPS[source]!;
      const c: Coverage = { carrying: 0, mapped: 0, deliberatelyUnmapped: 0 };
      for (const r of await rows(source)) {
        if (r.source_categories === null) continue;
        c.carrying++;
        if (r.category !== null) c.mapped++;
        else if ((JSON.parse(r.source_categories) as string[]).every((term) => lookUpSourceMap(table, term) === null))
          c.deliberatelyUnmapped++;
      }
      return c;
    }

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'parquet-import-'));
      t = await dialect.open('prepared');
      // Conflation is not what these tests are about, and conflating the global Foursquare sample's 10,000
      // records costs minutes on PostgreSQL (bench/RESULTS.md): no import here conflates.
      overture = await runImport(t.db, loadEnricher(), boulderParquet, noConflation);
      foursquare = await runImport(t.db, loadEnricher(), fsqParquet, noConflation);
    });
    after(async () => {
      await t.dispose();
      rmSync(dir, { recursive: true, force: true });
    });

    test('stores every Overture place under its GERS id, with its contacts and confidence', async () => {
      assert.equal(overture.format, 'parquet');
      assert.equal(overture.source, 'overture');
      assert.equal(overture.dataset, 'overture-places-boulder-3545');
      assert.equal(overture.imported_count, 3545);
      const stored = await rows('overture');
      assert.equal(stored.length, 3545);
      const pizza = stored.find((r) => r.source_id === '5d181e52-949d-4557-ba62-93ba3bd8fba1')!;
      assert.equal(pizza.category, 'restaurant_pizza');
      assert.equal(pizza.phone, '(303) 444-4642');
      assert.equal((JSON.parse(pizza.attributes!) as { confidence: number }).confidence, 0.77);
    });

    test('gives at least 97 % of the Overture places that carry a category a project category', async () => {
      const c = await coverage('overture');
      assert.equal(c.carrying, 3285);
      assert.ok(c.mapped / c.carrying >= 0.97, `${c.mapped} of ${c.carrying}`);
    });

    test('the NDJSON of the same rows is the same snapshot: nothing changes', async () => {
      const again = await runImport(t.db, loadEnricher(), boulderNdjson, noConflation);
      assert.equal(again.dataset, overture.dataset);
      assert.equal(again.unchanged_count, 3545);
      assert.equal(again.updated_count + again.imported_count + again.retired_count, 0);
    });

    test('a newer release without `categories` updates the changed places under the same ids and retires the missing', async () => {
      const before1 = new Map((await rows('overture')).map((r) => [r.source_id, r]));
      const { metadata, rows: release } = await readParquet(boulderParquet);
      const closedIds = new Set([release[3]!.id, release[500]!.id, release[2000]!.id] as string[]);
      const phoneChanged = release[42]!.id as string;
      const next = release
        .filter((_, i) => i % 50 !== 9)
        .map((r) => ({
          ...r,
          ...(closedIds.has(r.id as string) ? { operating_status: 'permanently_closed' } : {}),
          ...(r.id === phoneChanged ? { phones: ['+13035550123'] } : {}),
        }));
      mkdirSync(join(dir, 'next'), { recursive: true });
      const path = join(dir, 'next', 'overture-places-boulder-3545.parquet');
      writeParquetLike(path, metadata, next, { drop: ['categories'], rowGroupSize: 1000 });
      const summary = await runImport(t.db, loadEnricher(), path, noConflation);
      assert.equal(summary.dataset, overture.dataset);
      assert.equal(summary.retired_count, release.length - next.length);
      assert.equal(summary.updated_count, closedIds.size + 1);
      assert.equal(summary.unchanged_count, next.length - closedIds.size - 1);
      const after1 = await rows('overture');
      assert.equal(after1.length, 3545, 'nothing is deleted');
      for (const r of after1) {
        const was = before1.get(r.source_id)!;
        assert.equal(r.public_id, was.public_id);
        assert.equal(Number(r.id), Number(was.id));
      }
      const by = new Map(after1.map((r) => [r.source_id, r]));
      for (const id of closedIds) assert.deepEqual([by.get(id)!.closed, by.get(id)!.closed_reason], [1, 'closed']);
      assert.equal(by.get(phoneChanged)!.phone, '+13035550123');
      assert.equal(by.get(release[9]!.id as string)!.closed_reason, 'retired');
      const c = await coverage('overture');
      assert.ok(c.mapped / c.carrying >= 0.97, `${c.mapped} of ${c.carrying}`);
    });

    test('stores every Foursquare place under its fsq_place_id, closed ones closed, date_refreshed kept', async () => {
      assert.equal(foursquare.source, 'foursquare');
      assert.equal(foursquare.imported_count, 10_000);
      const stored = await rows('foursquare');
      assert.equal(stored.filter((r) => r.closed === 1).length, 573);
      const first = stored.find((r) => r.source_id === '4aee4d4688a04abe82d1ace4')!;
      assert.equal(first.category, 'clothes');
      assert.equal((JSON.parse(first.attributes!) as { date_refreshed: string }).date_refreshed, '2024-06-14');
    });

    test('maps the Foursquare categories: all but the deliberately unmapped ones get a project category', async () => {
      const c = await coverage('foursquare');
      assert.equal(c.carrying, 8904);
      // Buildings, landforms, events and vehicles are not businesses: the table leaves them unmapped on purpose.
      assert.ok(c.mapped / c.carrying >= 0.9, `${c.mapped} of ${c.carrying}`);
      assert.ok(c.mapped / (c.carrying - c.deliberatelyUnmapped) >= 0.97, `${c.mapped} of ${c.carrying - c.deliberatelyUnmapped}`);
    });

    test('the CSV form of the same Foursquare rows is the same snapshot: nothing changes', async () => {
      const again = await runImport(t.db, loadEnricher(), fsqCsv, noConflation);
      assert.equal(again.format, 'foursquare-csv');
      assert.equal(again.dataset, foursquare.dataset);
      assert.equal(again.unchanged_count, 10_000);
      assert.equal(again.updated_count + again.imported_count + again.retired_count, 0);
    });

    test('--bbox is refused for a format that cannot select rows', async () => {
      await assert.rejects(
        runImport(t.db, loadEnricher(), fsqCsv, { bbox: [0, 0, 1, 1] }),
        (e: Error & { code?: string }) => e.code === 'validation_failed' && /Parquet/.test(e.message),
      );
    });
  });
}
