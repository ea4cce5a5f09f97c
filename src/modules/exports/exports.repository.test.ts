import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { createLeadRecorder, type ExportRow, finishExport, insertExport } from './exports.repository.ts';

for (const dialect of dialects) {
  describe(`lead recorder on ${dialect.name}`, () => {
    let t: TestDatabase;
    let accountId: number;
    let placeIds: number[];

    before(async () => {
      t = await dialect.open('migrated');
      const now = '2026-11-21T06:00:00.000Z';
      const account = await t.db.kysely
        .insertInto('accounts')
        .values({ email: 'a@example.com', email_norm: 'a@example.com', password_hash: 'x', created_at: now, password_changed_at: now })
        .returning('id')
        .executeTakeFirstOrThrow();
      accountId = Number(account.id);
      const places = await t.db.kysely
        .insertInto('places')
        .values(
          ['n1', 'n2', 'n3'].map((id) => ({
            public_id: `plc_${id}`,
            source: 'osm',
            source_id: id,
            name: id,
            categories: '[]',
            content_hash: id,
            first_seen_at: now,
            updated_at: now,
          })),
        )
        .returning('id')
        .execute();
      placeIds = places.map((p) => Number(p.id));
    });
    after(async () => {
      await t.dispose();
    });

    const newExport = (searchId: string): Promise<ExportRow> =>
      insertExport(t.db, {
        public_id: `exp_${searchId}`,
        account_id: accountId,
        search_id: searchId,
        format: 'csv',
        fields: '[]',
        created_at: '2026-11-21T06:00:00.000Z',
      });

    test('records each batch as leads and adds it to the export row count in the same step', async () => {
      const exp = await newExport('srch_one');
      const recorder = createLeadRecorder(t.db);
      await recorder.recordBatch(exp, placeIds.slice(0, 2), '2026-11-21T06:01:00.000Z');
      await recorder.recordBatch(exp, placeIds.slice(2), '2026-11-21T06:02:00.000Z');
      await finishExport(t.db, exp.id, 'done', '2026-11-21T06:03:00.000Z');
      const log = await t.db.kysely.selectFrom('exports').selectAll().where('id', '=', exp.id).executeTakeFirstOrThrow();
      assert.equal(Number(log.row_count), 3);
      assert.equal(log.status, 'done');
      const leads = await t.db.kysely.selectFrom('leads').selectAll().where('account_id', '=', accountId).orderBy('place_id').execute();
      assert.deepEqual(
        leads.map((l) => [Number(l.place_id), l.search_id, l.first_exported_at]),
        [
          [placeIds[0], 'srch_one', '2026-11-21T06:01:00.000Z'],
          [placeIds[1], 'srch_one', '2026-11-21T06:01:00.000Z'],
          [placeIds[2], 'srch_one', '2026-11-21T06:02:00.000Z'],
        ],
      );
    });

    test('a place exported again stays one lead: first export kept, last export and search moved forward', async () => {
      const exp = await newExport('srch_two');
      await createLeadRecorder(t.db).recordBatch(exp, [placeIds[0]!, placeIds[0]!], '2026-11-21T07:00:00.000Z');
      const leads = await t.db.kysely.selectFrom('leads').selectAll().where('place_id', '=', placeIds[0]!).execute();
      assert.equal(leads.length, 1);
      assert.equal(leads[0]?.first_exported_at, '2026-11-21T06:01:00.000Z');
      assert.equal(leads[0]?.last_exported_at, '2026-11-21T07:00:00.000Z');
      assert.equal(leads[0]?.search_id, 'srch_two');
      assert.equal(Number(leads[0]?.export_id), exp.id);
    });
  });
}
