import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadEnricher, prepareDatabase } from '../../bootstrap.ts';
import { openTestSqlite } from '../../../test/helpers/databases.ts';
import { contentHash, placeRowsOf, publicPlaceId, type PlaceRecord } from '../places/place-record.ts';
import type { EnrichedChunk } from './enriched-chunks.ts';
import { runImport, storeChunks } from './import.service.ts';

const monaco = resolve(import.meta.dirname, '../../../../shared/data/osm/monaco-2026.osm.pbf');

describe('runImport on a worker thread and inline', () => {
  const inline = openTestSqlite();
  const threaded = openTestSqlite();
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-import-'));
  before(async () => {
    await prepareDatabase(inline.db);
    await prepareDatabase(threaded.db);
  });
  after(async () => {
    await inline.dispose();
    await threaded.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test('stores the same rows whether reading and enriching run on a worker thread or inline', async () => {
    const a = await runImport(inline.db, loadEnricher(), monaco, { batchSize: 100 });
    const progress: number[] = [];
    const b = await runImport(threaded.db, null, monaco, { batchSize: 100, onProgress: (p) => progress.push(p.bytesRead) });
    assert.ok(a.imported_count > 500, `imported ${a.imported_count}`);
    assert.equal(b.imported_count, a.imported_count);
    assert.equal(b.read_count, a.read_count);
    assert.deepEqual(b.skipped_reasons, a.skipped_reasons);
    assert.ok(progress.length > 3 && progress.at(-1)! >= progress[0]!, 'progress is reported batch by batch');
    const rows = async (t: typeof inline) =>
      t.db.kysely.selectFrom('places').select(['public_id', 'content_hash', 'city', 'category', 'phone_e164']).orderBy('public_id').execute();
    assert.deepEqual(await rows(threaded), await rows(inline));
  });

  test('a reader error on the worker thread fails the import and marks the run failed', async () => {
    const truncated = join(dir, 'truncated.osm.pbf');
    copyFileSync(monaco, truncated);
    writeFileSync(truncated, readFileSync(monaco).subarray(0, 200_000));
    await assert.rejects(runImport(threaded.db, null, truncated, { format: 'osm-pbf' }), /./);
    const run = await threaded.db.kysely.selectFrom('import_runs').selectAll().where('path', '=', truncated).executeTakeFirstOrThrow();
    assert.equal(run.status, 'failed');
    assert.ok(run.error && run.error.length > 0);
  });

  test('an unknown format is refused with the list of formats', async () => {
    await assert.rejects(runImport(threaded.db, null, monaco, { format: 'shapefile' }), (e: Error & { extras?: { errors?: Array<{ allowed: string[] }> } }) => {
      assert.match(e.message, /unknown format shapefile/);
      assert.ok(e.extras?.errors?.[0]?.allowed.includes('osm-pbf'));
      return true;
    });
  });
});

describe('storeChunks of a large import', () => {
  const t = openTestSqlite();
  before(async () => prepareDatabase(t.db));
  after(async () => t.dispose());

  const record = (id: string): PlaceRecord => {
    const base: Omit<PlaceRecord, 'content_hash'> = {
      public_id: publicPlaceId('test', id), source: 'test', source_id: id, name: `Large ${id}`, names: null, category: 'cafe',
      categories: ['cafe'], source_categories: null, phone: null, phone_e164: null, website: null, email: null, street: null,
      housenumber: null, postcode: null, address: null, region: null, city: 'Monaco', city_id: null, city_source: null,
      city_distance_m: null, country_code: 'MC', lat: 43.73, lon: 7.42, rating: null, review_count: null, opening_hours: null,
      attributes: JSON.stringify({ note: 'x'.repeat(2000) }),
    };
    return { ...base, content_hash: contentHash(base) };
  };

  test('checkpoints from a thread of its own while it writes, and leaves the connection as it found it', async () => {
    const h = t.db.sqlite!;
    const settings = () => ({ checkpoints: h.pragma('wal_autocheckpoint', { simple: true }), cache: h.pragma('cache_size', { simple: true }) });
    const before = settings();
    const fileSizes: number[] = [];
    // Chunks committed one by one (batchSize 500), with pauses longer than the thread's interval between them.
    async function* chunks(): AsyncGenerator<EnrichedChunk> {
      for (let c = 0; c < 3; c++) {
        fileSizes.push(statSync(t.path).size);
        assert.equal(h.pragma('wal_autocheckpoint', { simple: true }), 0, 'no checkpoint inside the writer’s commits');
        const rows = placeRowsOf(Array.from({ length: 500 }, (_, i) => record(`${c}-${i}`)));
        yield { rows, read: rows.count, skipped: {}, bytesRead: 0 };
        await new Promise((r) => setTimeout(r, 800));
      }
      fileSizes.push(statSync(t.path).size);
    }
    const info = { source: 'test', format: 'test', path: '/large', fileSha256: 'x', startedAt: new Date().toISOString() };
    const { counters } = await storeChunks(t.db, info, chunks(), { large: true, batchSize: 500 });
    assert.equal(counters.imported_count, 1500);
    // The database file grows only when a checkpoint copies pages into it: here, between the writer's commits.
    for (let i = 1; i < fileSizes.length; i++) assert.ok(fileSizes[i]! > fileSizes[i - 1]!, `file sizes ${fileSizes.join(', ')}`);
    assert.deepEqual(settings(), before);
  });
});
