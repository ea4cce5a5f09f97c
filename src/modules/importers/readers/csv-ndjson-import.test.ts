import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { copySqliteTemplate } from '../../../../test/helpers/templates.ts';
import { loadEnricher } from '../../../bootstrap.ts';
import { type Db, openDatabase } from '../../../infra/db/database.ts';
import { type ImportProgress, type ImportSummary, runImport } from '../import.service.ts';

const data = resolve(import.meta.dirname, '../../../../../shared/data');

const files = [
  { file: 'ratings/gmaps-scraper-europe-115.csv.gz', format: 'gmaps-csv', records: 115 },
  { file: 'ratings/gmaps-scraper-plano-tx-73.csv.gz', format: 'gmaps-csv', records: 73 },
  { file: 'ratings/yelp-fusion-4cities-2018.ndjson.gz', format: 'yelp-fusion-ndjson', records: 4100 },
  { file: 'ratings/yelp-open-dataset-business-sample5000.ndjson.gz', format: 'yelp-open-ndjson', records: 5000 },
  { file: 'ratings/zomato-restaurants-9551.csv.gz', format: 'zomato-csv', records: 9551 },
  { file: 'places/overture-places-boulder-3545.ndjson.gz', format: 'overture-ndjson', records: 3545 },
  { file: 'places/michelin-guide-2022-6510.csv.gz', format: 'michelin-csv', records: 6510 },
];

describe('importing the real CSV and NDJSON files into SQLite', () => {
  let dir: string;
  let db: Db;
  const first = new Map<string, ImportSummary>();
  const progress = new Map<string, ImportProgress[]>();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'import-csv-'));
    await copySqliteTemplate('prepared', join(dir, 'catalog.db'));
    db = openDatabase(`sqlite:${join(dir, 'catalog.db')}`);
    for (const { file } of files) {
      const seen: ImportProgress[] = [];
      first.set(file, await runImport(db, loadEnricher(), join(data, file), { batchSize: 1000, onProgress: (p) => seen.push({ ...p }) }));
      progress.set(file, seen);
    }
  });
  after(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const place = (source: string, sourceId: string) =>
    db.kysely.selectFrom('places').selectAll().where('source', '=', source).where('source_id', '=', sourceId).executeTakeFirstOrThrow();

  for (const { file, format, records } of files) {
    test(`${file} imports every record as ${format}, with progress up to the file size`, () => {
      const s = first.get(file)!;
      assert.equal(s.format, format);
      assert.equal(s.read_count, records);
      assert.deepEqual(s.skipped_reasons, {});
      assert.equal(s.imported_count + s.updated_count + s.unchanged_count, records);
      const seen = progress.get(file)!;
      assert.ok(seen.length >= 1);
      assert.equal(seen.at(-1)!.bytesRead, seen.at(-1)!.totalBytes);
    });
  }

  test('phones are stored in E.164 where they are valid numbers', async () => {
    assert.equal((await place('gmaps', '9089864112570766741')).phone_e164, '+393427988613');
    assert.equal((await place('yelp', '2hGIxgprREdBieylltWaRQ')).phone_e164, '+14156386361');
    assert.equal((await place('overture', '5d181e52-949d-4557-ba62-93ba3bd8fba1')).phone_e164, '+13034444642');
    const pinchiorri = await place('michelin', 'https://guide.michelin.com/en/toscana/firenze/restaurant/enoteca-pinchiorri');
    assert.equal(pinchiorri.phone_e164, '+3905526311');
    assert.equal(pinchiorri.country_code, 'IT');
  });

  test('known records keep rating, review count and country through enrichment', async () => {
    const tuccio = await place('gmaps', '9089864112570766741');
    assert.deepEqual([tuccio.name, tuccio.rating, tuccio.review_count, tuccio.country_code], ['Tuccio - Cucina Caffè', 4.5, 918, 'IT']);
    const souffle = await place('zomato', '6317637');
    assert.deepEqual([souffle.name, souffle.rating, souffle.review_count, souffle.country_code], ['Le Petit Souffle', 4.8, 314, 'PH']);
  });

  test('Zomato names are stored byte for byte as the file has them', async () => {
    assert.equal((await place('zomato', '6601005')).name, 'Cafí© Daniel Briand');
    assert.equal((await place('zomato', '7300483')).name, 'Zazíç BistríÇ Tropical');
  });

  test('Yelp Fusion and the Yelp Open Dataset share business ids, so a business in both files is one row', async () => {
    const fusion = first.get('ratings/yelp-fusion-4cities-2018.ndjson.gz')!;
    const open = first.get('ratings/yelp-open-dataset-business-sample5000.ndjson.gz')!;
    assert.equal(fusion.imported_count, 4100);
    assert.ok(open.updated_count > 0, 'some Open Dataset businesses were already imported from Fusion');
    assert.equal(open.imported_count + open.updated_count, 5000);
  });

  test('importing a file again imports and updates nothing: all rows are unchanged', async () => {
    const sourceOf = (file: string) => first.get(file)!.source;
    for (const { file, records } of files) {
      // A file that shares its source with another (the Yelp overlap) is imported once first: the other may have
      // written their shared rows last. The rest are imported again as they are, after the files of other sources.
      if (files.some((other) => other.file !== file && sourceOf(other.file) === sourceOf(file)))
        await runImport(db, loadEnricher(), join(data, file));
      const again = await runImport(db, loadEnricher(), join(data, file));
      assert.deepEqual(
        { file, imported: again.imported_count, updated: again.updated_count, unchanged: again.unchanged_count },
        { file, imported: 0, updated: 0, unchanged: records },
      );
    }
    // One row per record (a place of several sources, which conflation made of records of different files, is a row of its own).
    const count = async (ofSeveral: boolean) =>
      Number(
        (
          await db.kysely
            .selectFrom('places')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('sources', ofSeveral ? 'is not' : 'is', null)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const yelpOverlap = first.get('ratings/yelp-open-dataset-business-sample5000.ndjson.gz')!.updated_count;
    assert.equal(await count(false), files.reduce((n, f) => n + f.records, 0) - yelpOverlap);
    assert.ok((await count(true)) > 0, 'Michelin, Yelp, Zomato and Google Maps share restaurants: some are places of several sources');
  });
});
