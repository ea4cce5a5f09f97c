import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { copyTestSqlite, dialects, type openTestSqlite, type TestDatabase } from '../../../test/helpers/databases.ts';
import { startImportRun, zeroCounters } from '../../../test/helpers/places.ts';
import { searchDocument } from '../../infra/text.ts';
import { contentHash, type PlaceRecord, placeRecordAt, placeRowsOf, publicPlaceId } from './place-record.ts';
import { createPlaceWriter } from './places.writer.ts';

function record(sourceId: string, overrides: Partial<PlaceRecord> = {}): PlaceRecord {
  const base: Omit<PlaceRecord, 'content_hash'> = {
    public_id: publicPlaceId('test', sourceId),
    source: 'test',
    source_id: sourceId,
    name: `Place ${sourceId}`,
    names: null,
    category: 'restaurant',
    categories: ['restaurant', 'cafe'],
    source_categories: null,
    phone: null,
    phone_e164: null,
    website: null,
    website_domain: null,
    email: null,
    street: null,
    housenumber: null,
    postcode: null,
    address: null,
    region: null,
    city: 'München',
    city_id: 2867714,
    city_source: 'address',
    city_distance_m: null,
    country_code: 'DE',
    lat: 48.137,
    lon: 11.575,
    rating: 4.5,
    review_count: 10,
    opening_hours: null,
    attributes: null,
    closed: 0,
    ...overrides,
  };
  return { ...base, content_hash: contentHash(base) };
}

test('a place keeps every field through its flat row', () => {
  const places = [
    record('row-1', { names: JSON.stringify({ de: 'Zum Löwen' }), phone: '+49 89 1', lat: null }),
    record('row-2', { categories: [] }),
  ];
  const rows = placeRowsOf(places);
  assert.equal(rows.count, 2);
  assert.deepEqual([placeRecordAt(rows, 0), placeRecordAt(rows, 1)], places);
});

for (const dialect of dialects) {
  describe(`place writer on ${dialect.name}`, () => {
    let t: TestDatabase;
    let runId: number;
    before(async () => {
      t = await dialect.open('migrated');
      runId = await startImportRun(t.db);
    });
    after(async () => t.dispose());

    test('inserts new places, leaves unchanged ones alone and updates changed ones', async () => {
      const writer = createPlaceWriter(t.db);
      const first = await writer.writeBatch([record('a'), record('b')], runId, zeroCounters());
      assert.deepEqual(first, { imported: 2, updated: 0, unchanged: 0 });

      const again = await writer.writeBatch([record('a'), record('b', { rating: 3.9 })], runId, zeroCounters());
      assert.deepEqual(again, { imported: 0, updated: 1, unchanged: 1 });

      const rows = await t.db.kysely.selectFrom('places').select(['source_id', 'rating', 'public_id']).orderBy('source_id').execute();
      assert.deepEqual(
        rows.map((r) => [r.source_id, r.rating]),
        [
          ['a', 4.5],
          ['b', 3.9],
        ],
      );
      assert.equal(rows[0]?.public_id, publicPlaceId('test', 'a'));
    });

    test('stores the run counters in the same transaction as the batch', async () => {
      const writer = createPlaceWriter(t.db);
      const counters = { ...zeroCounters(), read_count: 7, skipped_count: 2, skipped_reasons: { 'no name': 2 } };
      await writer.writeBatch([record('d')], runId, counters);
      const run = await t.db.kysely.selectFrom('import_runs').selectAll().where('id', '=', runId).executeTakeFirstOrThrow();
      assert.equal(run.read_count, 7);
      assert.equal(run.imported_count, 1);
      assert.deepEqual(JSON.parse(run.skipped_reasons), { 'no name': 2 });
      const n = await t.db.kysely.selectFrom('places').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow();
      assert.equal(Number(n.n), 3);
    });

    test('marks every place the run read as seen by it; a place its source says is closed gets closed_at, kept while it stays closed', async () => {
      const writer = createPlaceWriter(t.db);
      const other = await startImportRun(t.db);
      const state = async (sourceId: string) =>
        t.db.kysely
          .selectFrom('places')
          .select(['seen_run_id', 'import_run_id', 'closed_at', 'closed_reason', 'updated_at', 'first_seen_at'])
          .where('source_id', '=', sourceId)
          .executeTakeFirstOrThrow();
      await writer.writeBatch([record('s1'), record('s2', { closed: 1 })], runId, zeroCounters());
      const closedFirst = await state('s2');
      assert.equal(closedFirst.closed_reason, 'closed');
      assert.ok(closedFirst.closed_at !== null);
      assert.equal((await state('s1')).closed_at, null);

      // The next run: s1 unchanged (seen, not rewritten), s2 still closed with a new rating (its closed_at stays).
      const s1Before = await state('s1');
      assert.deepEqual(await writer.writeBatch([record('s1'), record('s2', { closed: 1, rating: 1 })], other, zeroCounters()), {
        imported: 0,
        updated: 1,
        unchanged: 1,
      });
      const s1 = await state('s1');
      assert.deepEqual([Number(s1.seen_run_id), Number(s1.import_run_id), s1.updated_at], [other, runId, s1Before.updated_at]);
      const s2 = await state('s2');
      assert.deepEqual([Number(s2.seen_run_id), s2.closed_reason, s2.closed_at], [other, 'closed', closedFirst.closed_at]);

      // Open again: no longer closed.
      await writer.writeBatch([record('s2', { rating: 1 })], other, zeroCounters());
      assert.deepEqual([(await state('s2')).closed_reason, (await state('s2')).closed_at], [null, null]);
    });

    test('stores every value as it was given: escapes, nulls, exact doubles, large integers, every script', async () => {
      const writer = createPlaceWriter(t.db);
      const tricky = [
        record('tricky-1', {
          name: 'Tab\there, new\nline, return\r, back\\slash, \\N, \\.',
          names: JSON.stringify({ ja: '東京タワー', ar: 'مطعم', emoji: '🍣' }),
          street: '\\.',
          address: 'a\\tb',
          phone: '',
          email: null,
          lat: 0.1 + 0.2,
          lon: -179.99999999999997,
          rating: 4.000000000000001,
          review_count: 2147483647,
          city_id: 9007199254740991,
          city_distance_m: 0,
          categories: ['bar\tpub', 'x"y'],
        }),
        record('tricky-2', {
          name: '\\',
          lat: null,
          lon: null,
          rating: null,
          review_count: null,
          city_id: null,
          city: null,
          country_code: null,
          categories: [],
        }),
      ];
      await writer.writeBatch(tricky, runId, zeroCounters());
      const stored = await t.db.kysely
        .selectFrom('places')
        .selectAll()
        .where('source_id', 'in', ['tricky-1', 'tricky-2'])
        .orderBy('source_id')
        .execute();
      const asRecord = (row: (typeof stored)[number]) => {
        const r: Record<string, unknown> = {};
        for (const key of Object.keys(tricky[0]!))
          r[key] = key === 'categories' ? JSON.parse(row.categories) : (row as Record<string, unknown>)[key];
        return r;
      };
      assert.deepEqual(stored.map(asRecord), tricky);
      assert.deepEqual(
        await writer.writeBatch(tricky, runId, zeroCounters()),
        { imported: 0, updated: 0, unchanged: 2 },
        'read back, the same content hash',
      );
    });

    test('the same place twice in a batch is stored once, with its last values, where it first came', async () => {
      const writer = createPlaceWriter(t.db);
      await writer.writeBatch(
        [record('twice-1', { name: 'First' }), record('twice-2'), record('twice-1', { name: 'Second' })],
        runId,
        zeroCounters(),
      );
      const rows = await t.db.kysely
        .selectFrom('places')
        .select(['source_id', 'name'])
        .where('source_id', 'like', 'twice-%')
        .orderBy('id')
        .execute();
      assert.deepEqual(rows, [
        { source_id: 'twice-1', name: 'Second' },
        { source_id: 'twice-2', name: 'Place twice-2' },
      ]);
    });

    test('a retired place read again is open again, or closed again with the date it kept; it counts as updated', async () => {
      const writer = createPlaceWriter(t.db);
      await writer.writeBatch([record('back-1'), record('back-2', { closed: 1 })], runId, zeroCounters());
      const closedAt = (
        await t.db.kysely.selectFrom('places').select('closed_at').where('source_id', '=', 'back-2').executeTakeFirstOrThrow()
      ).closed_at;
      await t.db.kysely
        .updateTable('places')
        .set({ closed_reason: 'retired', closed_at: sql<string>`coalesce(closed_at, '2020-01-01T00:00:00.000Z')` })
        .where('source_id', 'in', ['back-1', 'back-2'])
        .execute();
      const other = await startImportRun(t.db);
      assert.deepEqual(await writer.writeBatch([record('back-1'), record('back-2', { closed: 1 })], other, zeroCounters()), {
        imported: 0,
        updated: 2,
        unchanged: 0,
      });
      const rows = await t.db.kysely
        .selectFrom('places')
        .select(['source_id', 'closed_reason', 'closed_at', 'seen_run_id', 'import_run_id'])
        .where('source_id', 'like', 'back-%')
        .orderBy('source_id')
        .execute();
      assert.deepEqual(
        rows.map((r) => [r.source_id, r.closed_reason, r.closed_at, Number(r.seen_run_id), Number(r.import_run_id)]),
        [
          ['back-1', null, null, other, runId],
          ['back-2', 'closed', closedAt, other, runId],
        ],
      );
    });

    test('a batch that fails leaves no place and no counters behind, and the writer goes on', async () => {
      const writer = createPlaceWriter(t.db);
      const run = await startImportRun(t.db);
      const bad = record('broken-2');
      (bad as { name: string | null }).name = null;
      await assert.rejects(writer.writeBatch([record('broken-1'), bad], run, { ...zeroCounters(), read_count: 2 }));
      const count = async () =>
        Number(
          (
            await t.db.kysely
              .selectFrom('places')
              .select(sql<number>`count(*)`.as('n'))
              .where('source_id', 'like', 'broken-%')
              .executeTakeFirstOrThrow()
          ).n,
        );
      assert.equal(await count(), 0);
      const counters = await t.db.kysely
        .selectFrom('import_runs')
        .select(['read_count', 'imported_count'])
        .where('id', '=', run)
        .executeTakeFirstOrThrow();
      assert.deepEqual([counters.read_count, counters.imported_count], [0, 0]);
      // Another key's violation (a public id taken by another place) is an error, not an update.
      const clash = record('broken-3', { source: 'test-2', public_id: publicPlaceId('test', 'a') });
      await assert.rejects(writer.writeBatch([clash], run, zeroCounters()), /public_id|unique/i);
      assert.deepEqual(await writer.writeBatch([record('broken-1')], run, zeroCounters()), { imported: 1, updated: 0, unchanged: 0 });
      assert.equal(await count(), 1);
    });
  });
}

describe('place writer on sqlite: search indexes filled once per batch', () => {
  let t: ReturnType<typeof openTestSqlite>;
  let runId: number;
  before(async () => {
    t = await copyTestSqlite('migrated');
    runId = await startImportRun(t.db);
  });
  after(async () => t.dispose());

  const h = () => t.db.sqlite!;
  const fts = () => h().prepare('SELECT rowid, names FROM places_fts ORDER BY rowid').all();
  // Places with coordinates, read through the latitude-band index (migration 0013), which SQLite keeps itself.
  const geo = () =>
    h()
      .prepare(
        'SELECT id, lat, lon FROM places INDEXED BY places_geo_band_idx WHERE cast((lat + 90) * 10 as integer) BETWEEN 0 AND 1800 ORDER BY id',
      )
      .all();
  const version = () => h().prepare('SELECT version FROM places_version WHERE id = 1').pluck().get() as number;

  test('gives places_fts and places_version what the per-row triggers give', async () => {
    const writer = createPlaceWriter(t.db);
    const startVersion = version();
    await writer.writeBatch(
      [
        record('fts-1', { names: JSON.stringify({ de: 'Zum Löwen', alt: ['Löwenbräu', 'Lion'] }) }),
        record('fts-2', { lat: null, lon: null, categories: ['bar', 'pub', 'bar'], category: 'bar' }),
        record('fts-3', { name: 'Café Ñandú', names: JSON.stringify({ ja: 'カフェ' }) }),
        // The same place twice in one batch: inserted, then updated.
        record('fts-1', { names: JSON.stringify({ de: 'Zum Löwen' }), lat: 48.2 }),
      ],
      runId,
      zeroCounters(),
    );
    await writer.writeBatch([record('fts-3', { name: 'Café Ñandú 2', lat: 48.3 }), record('fts-4')], runId, zeroCounters());
    assert.equal(version() - startVersion, 6, 'one step per inserted or updated row');
    const byWriter = { fts: fts(), geo: geo() };
    const stored = h().prepare('SELECT name, names, search_document FROM places').all() as Array<{
      name: string;
      names: string | null;
      search_document: string;
    }>;
    for (const r of stored) assert.equal(r.search_document, searchDocument(r.name, r.names), r.name);
    assert.equal(byWriter.fts.length, 4);
    assert.equal(byWriter.geo.length, 3, 'a place without coordinates has no point');

    // Rewrite every index row through the per-row triggers, which every writer but the import writer's transaction runs.
    h().exec('UPDATE places SET search_document = search_document, lat = lat');
    assert.deepEqual(fts(), byWriter.fts);
    assert.deepEqual(geo(), byWriter.geo);
    assert.equal(version() - startVersion, 6 + 4, 'outside the writer the per-row triggers run');
    assert.equal(
      h().prepare("SELECT count(*) FROM sqlite_master WHERE sql LIKE '%places_deferred_indexing%'").pluck().get(),
      0,
      'no trigger asks for the old marker',
    );
  });

  test('batches added to one transaction are seen by other connections only once it commits, indexed and with the triggers back', async () => {
    const writer = createPlaceWriter(t.db);
    const triggers = () =>
      h().prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'places' ORDER BY name").all();
    const before = triggers();
    assert.ok(before.length >= 5, `${before.length} triggers on places`);
    const other = new SQLite(t.path, { readonly: true });
    try {
      const seen = () =>
        other
          .prepare(
            "SELECT (SELECT count(*) FROM places WHERE source_id LIKE 'tx-%') AS places, (SELECT count(*) FROM places_fts WHERE names LIKE '$ tx %') AS fts",
          )
          .get();
      const counters = zeroCounters();
      const first = await writer.add(placeRowsOf([record('tx-1', { name: 'Tx 1' }), record('tx-2', { name: 'Tx 2' })]), runId, counters);
      counters.imported_count += first.imported;
      await writer.add([record('tx-3', { name: 'Tx 3' }), record('tx-1', { name: 'Tx 1b' })], runId, counters);
      assert.equal(writer.pending, 4);
      assert.deepEqual(seen(), { places: 0, fts: 0 });
      assert.equal(
        other.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'places'").pluck().get(),
        before.length,
      );
      await writer.commit();
      assert.equal(writer.pending, 0);
      assert.deepEqual(seen(), { places: 3, fts: 3 });
      // tx-1, indexed with its first batch, is indexed again with what the second one changed.
      assert.deepEqual(other.prepare("SELECT names FROM places_fts WHERE names LIKE '$ tx %' ORDER BY rowid").pluck().all(), [
        '$ tx 1b $',
        '$ tx 2 $',
        '$ tx 3 $',
      ]);
      assert.deepEqual(triggers(), before);
      const hashSize = h().prepare("SELECT v FROM places_fts_config WHERE k = 'hashsize'").pluck().get();
      assert.ok(
        hashSize === undefined || hashSize === 1024 * 1024,
        `places_fts hashsize ${hashSize} after the import (FTS5's default: 1 MB)`,
      );
      const run = h().prepare('SELECT imported_count, updated_count FROM import_runs WHERE id = ?').get(runId);
      assert.deepEqual(run, { imported_count: 3, updated_count: 1 });
    } finally {
      other.close();
    }
  });

  test('index() fills the search indexes for the batches added so far; the commit indexes the rest and what changed since', async () => {
    const writer = createPlaceWriter(t.db);
    const names = () => h().prepare("SELECT names FROM places_fts WHERE names LIKE '$ ix %' ORDER BY rowid").pluck().all();
    const points = () => (geo() as Array<{ id: number }>).filter((p) => ixIds().includes(p.id)).length;
    const ixIds = () => h().prepare("SELECT id FROM places WHERE source_id LIKE 'ix-%'").pluck().all();
    await writer.add([record('ix-1', { name: 'Ix 1' }), record('ix-2', { name: 'Ix 2' })], runId, zeroCounters());
    assert.deepEqual(names(), [], 'nothing indexed before index() or the commit');
    await writer.index();
    assert.deepEqual(names(), ['$ ix 1 $', '$ ix 2 $'], 'indexed inside the open transaction');
    assert.equal(points(), 2);
    await writer.index(); // nothing new: no second copy
    await writer.add([record('ix-3', { name: 'Ix 3' }), record('ix-1', { name: 'Ix 1b', lat: null, lon: null })], runId, zeroCounters());
    await writer.commit();
    assert.deepEqual(names(), ['$ ix 1b $', '$ ix 2 $', '$ ix 3 $']);
    assert.equal(points(), 2, 'ix-1 lost its point, ix-3 has one');
    h().exec("UPDATE places SET search_document = search_document, lat = lat WHERE source_id LIKE 'ix-%'");
    assert.deepEqual(names(), ['$ ix 1b $', '$ ix 2 $', '$ ix 3 $'], 'the same as the per-row triggers give');
    assert.equal(points(), 2);
  });

  test('a source new to the catalog inserts without looking first, and still upserts a place it meets again', async () => {
    const fresh = (id: string, overrides: Partial<PlaceRecord> = {}) =>
      record(id, { source: 'fresh-src', public_id: publicPlaceId('fresh-src', id), name: `Fresh ${id}`, ...overrides });
    const writer = createPlaceWriter(t.db);
    const counters = zeroCounters();
    const first = await writer.add([fresh('a'), fresh('b'), fresh('a', { name: 'Fresh a2' })], runId, counters);
    assert.deepEqual(first, { imported: 2, updated: 1, unchanged: 0 });
    await writer.commit();
    const second = await writer.writeBatch([fresh('b'), fresh('c'), fresh('a', { name: 'Fresh a3' })], runId, counters);
    assert.deepEqual(second, { imported: 1, updated: 1, unchanged: 1 });
    const rows = h().prepare("SELECT source_id, name FROM places WHERE source = 'fresh-src' ORDER BY source_id").all();
    assert.deepEqual(rows, [
      { source_id: 'a', name: 'Fresh a3' },
      { source_id: 'b', name: 'Fresh b' },
      { source_id: 'c', name: 'Fresh c' },
    ]);
    assert.deepEqual(h().prepare("SELECT names FROM places_fts WHERE names LIKE '$ fresh %' ORDER BY rowid").pluck().all(), [
      '$ fresh a3 $',
      '$ fresh b $',
      '$ fresh c $',
    ]);
    // Another key's violation (a public id taken by another place) is an error, not an update.
    const clash = record('clash', { source: 'fresh-src-2', public_id: publicPlaceId('fresh-src', 'a') });
    await assert.rejects(createPlaceWriter(t.db).writeBatch([clash], runId, zeroCounters()), /UNIQUE constraint failed: places.public_id/);
    assert.equal(h().prepare("SELECT count(*) FROM places WHERE source = 'fresh-src-2'").pluck().get(), 0);
  });

  test('a batch that fails leaves no place or index row behind, and the triggers in place', async () => {
    const writer = createPlaceWriter(t.db);
    const triggerCount = () =>
      h().prepare("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'places'").pluck().get();
    const triggersBefore = triggerCount();
    const counts = () => [fts().length, geo().length, version()];
    const beforeCounts = counts();
    const bad = record('fail-2');
    (bad as { name: string | null }).name = null;
    await assert.rejects(writer.writeBatch([record('fail-1'), bad], runId, zeroCounters()));
    assert.deepEqual(counts(), beforeCounts);
    assert.equal(h().prepare("SELECT count(*) FROM places WHERE source_id LIKE 'fail-%'").pluck().get(), 0);
    assert.equal(triggerCount(), triggersBefore, 'the triggers are back');
    assert.equal(t.db.sqlite!.inTransaction, false);
  });
});
