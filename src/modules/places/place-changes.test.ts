import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { startImportRun, testPlaceRecord, zeroCounters } from '../../../test/helpers/places.ts';
import type { Db } from '../../infra/db/database.ts';
import { conflate } from '../conflation/conflation.service.ts';
import { finishRun } from '../importers/import-runs.repository.ts';
import { placeChangesSince, placesVersion, prunePlaceChanges } from './place-changes.repository.ts';
import type { PlaceRecord } from './place-record.ts';
import { createPlaceWriter } from './places.writer.ts';

const record = testPlaceRecord;

/** Every place row as text but the run that last saw it: what a reader of the catalog can tell apart. */
async function snapshot(db: Db): Promise<Map<number, string>> {
  const rows = await db.kysely.selectFrom('places').selectAll().execute();
  return new Map(rows.map(({ seen_run_id: _, ...row }) => [Number(row.id), JSON.stringify(row)]));
}

function changedIds(before: Map<number, string>, after: Map<number, string>): number[] {
  const ids = [...after].filter(([id, row]) => before.get(id) !== row).map(([id]) => id);
  return ids.sort((a, b) => a - b);
}

for (const dialect of dialects) {
  describe(`the change log of places (${dialect.name})`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await dialect.open('migrated');
    });
    after(async () => t.dispose());

    /** Runs `write` and checks that the log since the version before it names exactly the places it changed. */
    async function logsExactly(write: () => Promise<unknown>): Promise<number[]> {
      const version = await placesVersion(t.db);
      const before = await snapshot(t.db);
      await write();
      const changed = changedIds(before, await snapshot(t.db));
      const log = await placeChangesSince(t.db, version, 100_000);
      assert.equal(log.complete, true);
      assert.deepEqual(log.placeIds, changed);
      assert.equal(log.through, await placesVersion(t.db));
      return changed;
    }

    const writer = () => createPlaceWriter(t.db);
    const importRun = async (records: PlaceRecord[], dataset: string) => {
      const runId = await startImportRun(t.db);
      await sql`UPDATE import_runs SET dataset = ${dataset}, source = ${records[0]!.source} WHERE id = ${runId}`.execute(t.db.kysely);
      await writer().writeBatch(records, runId, zeroCounters());
      return runId;
    };

    test('an import, a re-import with changes and without, a retirement and a return all appear in the log', async () => {
      const first = Array.from({ length: 50 }, (_, i) => record('osm', `n${i}`));
      assert.equal((await logsExactly(() => importRun(first, 'munich'))).length, 50);

      // Unchanged: only the run that saw them moves, which no reader can tell.
      assert.deepEqual(await logsExactly(() => importRun(first, 'munich')), []);

      const second = first.map((r, i) => (i < 5 ? record('osm', r.source_id, { phone: '+49 89 1' }) : r));
      second.push(record('osm', 'n50'));
      assert.equal((await logsExactly(() => importRun(second, 'munich'))).length, 6);

      // A snapshot without n0…n9: they are retired when the run completes.
      const third = second.slice(10);
      const retired = await logsExactly(async () => {
        const runId = await importRun(third, 'munich');
        await finishRun(t.db, { id: runId, dataset: 'munich', source: 'osm' }, 'x', zeroCounters(), new Date().toISOString());
      });
      assert.equal(retired.length, 10);

      // Back in the next snapshot: open again.
      assert.equal((await logsExactly(() => importRun(second, 'munich'))).length, 10);
    });

    test('a conflation merge appears in the log', async () => {
      const phone = { phone: '+49 89 2222', phone_e164: '+49892222', name: 'Osteria Italiana', lat: 48.1401, lon: 11.5801 };
      await importRun([record('osm', 'merge-1', phone)], 'osm-merge');
      await conflate(t.db);
      await importRun([record('michelin', 'merge-1', phone)], 'michelin-merge');
      const merged = await logsExactly(() => conflate(t.db));
      assert.ok(merged.length >= 1, 'the merge changed rows');
      const members = await t.db.kysely.selectFrom('places').select('id').where('merged_into', 'is not', null).execute();
      assert.ok(members.length >= 1, 'the two records became one place');
    });

    test('pruning by age moves the horizon: a reader behind it is told to reload', async () => {
      const start = await placesVersion(t.db);
      const day = 24 * 60 * 60 * 1000;
      const t0 = new Date('2030-01-01T00:00:00Z');
      assert.equal(await prunePlaceChanges(t.db, t0), 0);
      await importRun([record('osm', 'later')], 'later');
      const after = await placesVersion(t.db);
      assert.equal(await prunePlaceChanges(t.db, new Date(t0.getTime() + day / 2)), 0);
      assert.ok((await prunePlaceChanges(t.db, new Date(t0.getTime() + day + 1))) > 0);
      assert.equal((await placeChangesSince(t.db, 0, 10)).complete, false);
      const since = await placeChangesSince(t.db, start, 10);
      assert.equal(since.complete, true);
      assert.equal(since.through, after);
      assert.equal(since.placeIds.length, 1);
    });

    test('a read bounded by a limit ends at a version boundary and continues from it', async () => {
      const version = await placesVersion(t.db);
      // Single-row writes: one version each.
      for (const id of ['s1', 's2', 's3']) await importRun([record('osm', id)], `single-${id}`);
      const first = await placeChangesSince(t.db, version, 2);
      assert.equal(first.more, true);
      const rest = await placeChangesSince(t.db, first.through, 100);
      assert.equal(first.placeIds.length + rest.placeIds.length, 3);
      assert.equal(rest.more, false);
    });
  });
}
