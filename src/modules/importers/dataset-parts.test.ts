import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { readParquet, writeParquetLike } from '../../../test/helpers/parquet.ts';
import { loadEnricher } from '../../bootstrap.ts';
import { AppError } from '../../infra/errors.ts';
import { expandImportArguments } from './dataset.ts';
import { runImport } from './import.service.ts';

const data = resolve(import.meta.dirname, '../../../../shared/data');
const boulderParquet = join(data, 'places/overture-places-boulder-3545.parquet');
const boulderNdjson = join(data, 'places/overture-places-boulder-3545.ndjson.gz');

type Row = Record<string, unknown>;

test('a quoted pattern names the parts of a release in the order the release numbers them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'parts-glob-'));
  try {
    for (const n of [10, 2, 1]) writeFileSync(join(dir, `part-${n}.parquet`), '');
    writeFileSync(join(dir, 'other.parquet'), '');
    assert.deepEqual(await expandImportArguments([join(dir, 'part-*.parquet'), 'https://example.org/part-*.parquet']), [
      join(dir, 'part-1.parquet'),
      join(dir, 'part-2.parquet'),
      join(dir, 'part-10.parquet'),
      'https://example.org/part-*.parquet',
    ]);
    // A file named twice, directly or through a pattern, is refused.
    await assert.rejects(
      expandImportArguments([join(dir, 'part-1.parquet'), join(dir, 'part-*.parquet')]),
      /part-1\.parquet is named twice/,
    );
    await assert.rejects(expandImportArguments([join(dir, 'nothing-*.parquet')]), (e: unknown) => {
      assert.ok(e instanceof AppError && e.code === 'not_found', String(e));
      assert.match(e.message, /matches/);
      return true;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

for (const dialect of dialects) {
  describe(`a release split into parts is one snapshot of its dataset (${dialect.name})`, () => {
    let t: TestDatabase;
    let dir: string;
    let rows: Row[];
    let like: Awaited<ReturnType<typeof readParquet>>['metadata'];
    const enricher = loadEnricher();

    /** The rows written as `parts` files of one release in `release/`, named as Overture names them. */
    function writeRelease(release: string, parts: Row[][]): string {
      const releaseDir = join(dir, release);
      mkdirSync(releaseDir, { recursive: true });
      parts.forEach((partRows, i) =>
        writeParquetLike(join(releaseDir, `part-${String(i).padStart(5, '0')}.parquet`), like, partRows, { rowGroupSize: 500 }),
      );
      return join(releaseDir, 'part-*.parquet');
    }
    const thirds = (all: Row[]) => [all.slice(0, 1200), all.slice(1200, 2400), all.slice(2400)];
    const openIds = async () =>
      new Set(
        (
          await t.db.kysely
            .selectFrom('places')
            .select('source_id')
            .where('source', '=', 'overture')
            .where('closed_reason', 'is', null)
            .execute()
        ).map((r) => r.source_id),
      );

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'dataset-parts-'));
      // The schema only: imports classify in memory, and no reference table is read here.
      t = await dialect.open('migrated');
      ({ rows, metadata: like } = await readParquet(boulderParquet));
    });
    after(async () => {
      await t.dispose();
      rmSync(dir, { recursive: true, force: true });
    });

    test('imports every part under one run, and the next release retires exactly the places no part holds', async () => {
      const first = await runImport(t.db, enricher, await expandImportArguments([writeRelease('2026-04', thirds(rows))]), {
        dataset: 'boulder',
        conflate: false,
      });
      assert.equal(first.read_count, rows.length);
      assert.equal(first.retired_count, 0);
      const stored = await openIds();
      assert.ok(stored.size > 3000, `${stored.size} places stored`);

      // The next release: the same places in other files (the split moved), some gone from every part.
      const gone = new Set(rows.filter((_, i) => i % 40 === 3 && i > 1500).map((r) => r.id as string));
      const next = rows.filter((r) => !gone.has(r.id as string)).reverse();
      const second = await runImport(
        t.db,
        enricher,
        await expandImportArguments([writeRelease('2026-05', [next.slice(0, 900), next.slice(900, 1800), next.slice(1800)])]),
        { dataset: 'boulder', conflate: false },
      );
      const goneStored = [...gone].filter((id) => stored.has(id));
      assert.equal(second.read_count, next.length);
      assert.equal(second.imported_count + second.updated_count, 0, 'the places that stayed are unchanged');
      assert.equal(second.retired_count, goneStored.length);
      const open = await openIds();
      assert.deepEqual([...stored].filter((id) => !open.has(id)).sort(), goneStored.sort());
      const runs = await t.db.kysely.selectFrom('import_runs').select(['dataset', 'path', 'status']).orderBy('id').execute();
      assert.equal(runs.length, 2, 'one run per release, not one per part');
      assert.ok(runs.every((r) => r.status === 'done' && r.dataset === 'boulder' && r.path.endsWith('(+2 parts)')));
    });

    test('refuses parts of different formats before writing anything', async () => {
      const before = await t.db.kysely
        .selectFrom('import_runs')
        .select(({ fn }) => fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      await assert.rejects(
        runImport(t.db, enricher, [join(dir, '2026-04/part-00000.parquet'), boulderNdjson], { dataset: 'boulder', conflate: false }),
        (e: unknown) => {
          assert.ok(e instanceof AppError && e.code === 'validation_failed', String(e));
          assert.deepEqual(
            (e.extras as { errors: Array<{ field: string }> }).errors.map((x) => x.field),
            ['files'],
          );
          return true;
        },
      );
      const afterRuns = await t.db.kysely
        .selectFrom('import_runs')
        .select(({ fn }) => fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      assert.equal(Number(afterRuns.n), Number(before.n));
    });
  });
}
