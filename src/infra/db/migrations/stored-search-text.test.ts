import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Kysely, Migrator } from 'kysely';
import { openTestSqlite } from '../../../../test/helpers/databases.ts';
import { runTool } from '../../../../test/helpers/tools.ts';
import { foldText, searchDocument } from '../../text.ts';
import { migrations } from './index.ts';

/** Migration 0027 on a SQLite catalog that already holds places: the stored text it fills, and a file other tools can write. */
describe('migration 0027 on an existing SQLite catalog', () => {
  let t: ReturnType<typeof openTestSqlite>;
  let migrator: Migrator;
  const places = [
    { source_id: 'a', name: 'Café Ñandú', names: JSON.stringify({ en: 'Cafe Nandu', ja: 'カフェ' }), city: 'Köln', city_source: 'address' },
    { source_id: 'b', name: 'Zum Löwen', names: null, city: 'Sankt Märgen', city_source: 'address_unmatched' },
    { source_id: 'c', name: 'Straßenbahn Depot', names: null, city: null, city_source: null },
  ];

  before(async () => {
    t = openTestSqlite();
    migrator = new Migrator({ db: t.db.kysely, provider: { getMigrations: async () => migrations } });
    assert.equal((await migrator.migrateTo('0025_conflation')).error, undefined);
    const k = t.db.kysely as unknown as Kysely<any>;
    for (const p of places) {
      await k
        .insertInto('places')
        .values({
          ...p,
          public_id: `plc_${p.source_id}`,
          source: 'osm',
          categories: '[]',
          content_hash: p.source_id,
          first_seen_at: 'x',
          updated_at: 'x',
        })
        .execute();
    }
    assert.equal((await migrator.migrateToLatest()).error, undefined);
  });
  after(async () => t.dispose());

  test('fills every place’s search document and the folded city of the unmatched ones; the full-text rows stay as they were', () => {
    const h = t.db.sqlite!;
    const rows = h.prepare('SELECT name, names, city_fold, search_document FROM places ORDER BY source_id').all() as Array<{
      name: string;
      names: string | null;
      city_fold: string | null;
      search_document: string;
    }>;
    assert.deepEqual(
      rows.map((r) => [r.search_document, r.city_fold]),
      places.map((p) => [searchDocument(p.name, p.names), p.city_source === 'address_unmatched' ? foldText(p.city!) : null]),
    );
    assert.deepEqual(
      h.prepare('SELECT names FROM places_fts ORDER BY rowid').pluck().all(),
      rows.map((r) => r.search_document),
    );
  });

  test('goes back down to the functions of 0016 and up again', async () => {
    assert.equal((await migrator.migrateTo('0025_conflation')).error, undefined);
    const columns = t.db
      .sqlite!.prepare("SELECT name FROM pragma_table_info('places') WHERE name IN ('search_document', 'city_fold')")
      .pluck()
      .all();
    assert.deepEqual(columns, []);
    assert.equal((await migrator.migrateToLatest()).error, undefined);
    assert.equal(t.db.sqlite!.prepare('SELECT count(*) FROM places WHERE search_document IS NOT NULL').pluck().get(), places.length);
  });

  test("Debian's sqlite3 shell checks the migrated file and renames a place, and the full-text index follows", () => {
    const shell = (script: string) => runTool('sqlite3', ['-bail', t.path], { input: script }).toString().trim();
    assert.equal(shell('PRAGMA integrity_check;'), 'ok');
    shell("UPDATE places SET name = 'Zur Krone', search_document = '$ zur krone $' WHERE source_id = 'b'; VACUUM;");
    assert.equal(shell('SELECT count(*) FROM places_fts WHERE places_fts MATCH \'"zur krone"\';'), '1');
    assert.equal(shell('SELECT count(*) FROM places_fts WHERE places_fts MATCH \'"lowen"\';'), '0');
    assert.equal(shell("SELECT count(*) FROM places WHERE city_source = 'address_unmatched' AND city_fold = 'sankt margen';"), '1');
  });
});
