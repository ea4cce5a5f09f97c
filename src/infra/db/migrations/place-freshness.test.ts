import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Migrator, sql } from 'kysely';
import { dialects, type TestDatabase } from '../../../../test/helpers/databases.ts';
import { migrations } from './index.ts';

/** Migration 0022 on a catalog that already holds runs and places: what the backfill makes of them. */
for (const dialect of dialects) {
  describe(`migration 0022 on an existing catalog (${dialect.name})`, () => {
    let t: TestDatabase;
    let migrator: Migrator;

    before(async () => {
      t = await dialect.open();
      const schema =
        t.db.dialect === 'postgres'
          ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(t.db.kysely)).rows[0]?.schema
          : undefined;
      migrator = new Migrator({
        db: t.db.kysely,
        provider: { getMigrations: async () => migrations },
        ...(schema ? { migrationTableSchema: schema } : {}),
      });
      const before = await migrator.migrateTo('0017_triggers_without_marker');
      assert.equal(before.error, undefined);
    });
    after(async () => t.dispose());

    test('names each run after its file, marks each place seen by the run that wrote it, and leaves every place open', async () => {
      const k = t.db.kysely as unknown as import('kysely').Kysely<any>;
      const run = async (path: string) =>
        Number(
          (
            await k
              .insertInto('import_runs')
              .values({ source: 'osm', format: 'osm-pbf', path, file_sha256: 'x', status: 'done', started_at: '2026-01-01T00:00:00.000Z' })
              .returning('id')
              .executeTakeFirstOrThrow()
          ).id,
        );
      const porto = await run('/data/porto-2020.osm.pbf');
      const yelp = await run('/srv/files/yelp-open.ndjson.gz');
      const place = (sourceId: string, runId: number | null) => ({
        public_id: `plc_${sourceId}`,
        source: 'osm',
        source_id: sourceId,
        name: sourceId,
        categories: '[]',
        content_hash: sourceId,
        import_run_id: runId,
        first_seen_at: '2026-01-01T00:00:00.000Z',
        updated_at: '2026-01-02T00:00:00.000Z',
      });
      await k
        .insertInto('places')
        .values([place('n1', porto), place('n2', yelp), place('n3', null)])
        .execute();

      const result = await migrator.migrateToLatest();
      assert.equal(result.error, undefined);

      const runs = await k.selectFrom('import_runs').select(['id', 'dataset', 'retired_count']).orderBy('id').execute();
      assert.deepEqual(
        runs.map((r) => [Number(r.id), r.dataset, Number(r.retired_count)]),
        [
          [porto, 'porto-2020', 0],
          [yelp, 'yelp-open', 0],
        ],
      );
      const places = await k
        .selectFrom('places')
        .select(['source_id', 'seen_run_id', 'closed', 'closed_at', 'closed_reason', 'first_seen_at', 'updated_at'])
        .orderBy('source_id')
        .execute();
      assert.deepEqual(
        places.map((p) => [
          p.source_id,
          p.seen_run_id === null ? null : Number(p.seen_run_id),
          Number(p.closed),
          p.closed_at,
          p.closed_reason,
        ]),
        [
          ['n1', porto, 0, null, null],
          ['n2', yelp, 0, null, null],
          ['n3', null, 0, null, null],
        ],
      );
      assert.deepEqual(
        places.map((p) => p.first_seen_at),
        Array(3).fill('2026-01-01T00:00:00.000Z'),
      );
    });

    test('goes down and up again', async () => {
      const down = await migrator.migrateTo('0017_triggers_without_marker');
      assert.equal(down.error, undefined);
      const up = await migrator.migrateToLatest();
      assert.equal(up.error, undefined);
      const k = t.db.kysely as unknown as import('kysely').Kysely<any>;
      const runs = await k.selectFrom('import_runs').select('dataset').orderBy('id').execute();
      assert.deepEqual(
        runs.map((r) => r.dataset),
        ['porto-2020', 'yelp-open'],
      );
    });
  });
}
