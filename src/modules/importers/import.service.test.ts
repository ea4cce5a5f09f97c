import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { copyTestSqlite, type TestSqlite } from '../../../test/helpers/databases.ts';
import { loadEnricher } from '../../bootstrap.ts';
import { runImport } from './import.service.ts';

const monaco = resolve(import.meta.dirname, '../../../../shared/data/osm/monaco-2026.osm.pbf');

describe('runImport on a worker thread and inline', () => {
  let inline: TestSqlite;
  let threaded: TestSqlite;
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-import-'));
  before(async () => {
    inline = await copyTestSqlite('prepared');
    threaded = await copyTestSqlite('prepared');
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
      t.db.kysely
        .selectFrom('places')
        .select(['public_id', 'content_hash', 'city', 'category', 'phone_e164'])
        .orderBy('public_id')
        .execute();
    assert.deepEqual(await rows(threaded), await rows(inline));
    // The file's digest, read on a thread of its own, is recorded with the finished run.
    const sha256 = createHash('sha256').update(readFileSync(monaco)).digest('hex');
    for (const [t, summary] of [
      [inline, a],
      [threaded, b],
    ] as const) {
      const run = await t.db.kysely
        .selectFrom('import_runs')
        .select(['file_sha256', 'status'])
        .where('id', '=', summary.runId)
        .executeTakeFirstOrThrow();
      assert.deepEqual(run, { file_sha256: sha256, status: 'done' });
    }
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
    await assert.rejects(
      runImport(threaded.db, null, monaco, { format: 'shapefile' }),
      (e: Error & { extras?: { errors?: Array<{ allowed: string[] }> } }) => {
        assert.match(e.message, /unknown format shapefile/);
        assert.ok(e.extras?.errors?.[0]?.allowed.includes('osm-pbf'));
        return true;
      },
    );
  });
});
