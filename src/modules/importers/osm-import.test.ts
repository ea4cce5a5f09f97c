import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { startCliImport } from '../../../test/helpers/cli.ts';
import { copyTestSqlite, type TestSqlite } from '../../../test/helpers/databases.ts';
import { mergedNdjson, mergedPbf, osmDir, osmExtracts, osmiumCount, poiFilter } from '../../../test/helpers/osm.ts';
import { loadEnricher, prepareDatabase } from '../../bootstrap.ts';
import { runImport } from './import.service.ts';

const extracts = osmExtracts;

/**
 * The counting rule: objects (nodes, ways, relations) carrying one of the seven POI keys and a `name`
 * tag, as osmium counts them, each imported once; minus objects without a location (none in these files,
 * whose ways and relations come with their nodes). Unnamed POIs are skipped with reason `no name`.
 */
let mergedNamedCount: number | undefined;
const mergedNamed = () => (mergedNamedCount ??= osmiumCount(mergedPbf, poiFilter, 'nwr/name').total);

const countPlaces = (h: SQLite.Database) => (h.prepare("SELECT count(*) AS n FROM places WHERE source = 'osm'").get() as { n: number }).n;

describe('importing the OpenStreetMap extracts', () => {
  let t: TestSqlite;
  before(async () => {
    t = await copyTestSqlite('prepared');
  });
  after(async () => t?.dispose());

  for (const file of extracts) {
    test(`${file} imports one place per named POI that osmium counts`, async () => {
      const path = join(osmDir, file);
      const named = osmiumCount(path, poiFilter, 'nwr/name').total;
      const all = osmiumCount(path, poiFilter).total;
      const before = countPlaces(t.db.sqlite!);
      const s = await runImport(t.db, loadEnricher(), path);
      assert.equal(s.format, 'osm-pbf');
      assert.equal(s.imported_count, named);
      assert.equal(s.read_count, all);
      assert.deepEqual(s.skipped_reasons, all > named ? { 'no name': all - named } : {});
      assert.equal(countPlaces(t.db.sqlite!) - before, named);
    });
  }

  test('assigns the nearest city to places whose address has no city', async () => {
    const h = t.db.sqlite!;
    const rows = h.prepare("SELECT city_source, count(*) AS n FROM places WHERE source = 'osm' GROUP BY city_source").all() as Array<{
      city_source: string | null;
      n: number;
    }>;
    const by = Object.fromEntries(rows.map((r) => [String(r.city_source), r.n]));
    // Without addr:city (city_source not address*), nearly every place lies within reach of a city.
    const withoutAddressCity = (by.nearest ?? 0) + (by.null ?? 0);
    assert.ok(withoutAddressCity > 10_000, JSON.stringify(by));
    assert.ok((by.nearest ?? 0) >= 0.99 * withoutAddressCity, JSON.stringify(by));
    // Restaurant Einstein, St.-Jakobs-Platz, Munich: no addr:city in OSM.
    const einstein = h
      .prepare(
        "SELECT name, city, city_source, city_distance_m, country_code FROM places WHERE source = 'osm' AND source_id = 'n261737139'",
      )
      .get() as { name: string; city: string; city_source: string; city_distance_m: number; country_code: string } | undefined;
    assert.ok(einstein);
    assert.equal(einstein.name, 'Einstein');
    assert.equal(einstein.city_source, 'nearest');
    assert.match(einstein.city, /^(Munich|München)$/);
    assert.equal(einstein.country_code, 'DE');
    assert.ok(einstein.city_distance_m < 5000);
    const noAddressCity = h
      .prepare("SELECT count(*) AS n FROM places WHERE source = 'osm' AND city_source = 'nearest' AND (city IS NULL OR city_id IS NULL)")
      .get() as { n: number };
    assert.equal(noAddressCity.n, 0);
  });
});

// One database for the merged file's three stories, in order: the import killed and run again to its end (which
// imports every named POI, as a first import would), the same file again, then its NDJSON export.
describe('the merged OpenStreetMap file: an import killed with SIGKILL, then re-imports', () => {
  let t: TestSqlite;
  // Migrated and with the reference data already (the CLI's own preparation then finds nothing to do), so
  // that the child's time goes to the import that is killed.
  before(async () => {
    t = await copyTestSqlite('prepared');
  });
  after(async () => t?.dispose());

  test('leaves a consistent database, and running it again completes the import', async () => {
    const { child, exited, stderr } = startCliImport(mergedPbf, t.url);
    let committed = 0;
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline && child.exitCode === null) {
      await new Promise((r) => setTimeout(r, 25));
      try {
        committed = countPlaces(t.db.sqlite!);
      } catch {
        continue; // tables not created yet
      }
      if (committed >= 1000) break;
    }
    child.kill('SIGKILL');
    const [code, signal] = await exited;
    assert.equal(signal, 'SIGKILL', `the import ended on its own (code ${code}): ${stderr()}`);

    const h = t.db.sqlite!;
    assert.equal((h.pragma('integrity_check') as Array<{ integrity_check: string }>)[0]!.integrity_check, 'ok');
    const cut = h.prepare('SELECT id, status, imported_count FROM import_runs WHERE path = ? ORDER BY id DESC LIMIT 1').get(mergedPbf) as {
      id: number;
      status: string;
      imported_count: number;
    };
    assert.equal(cut.status, 'running');
    const atKill = countPlaces(h);
    assert.ok(atKill > 0 && atKill < mergedNamed(), `${atKill} places at the kill`);
    // Counters are committed with each batch, so they match the rows exactly.
    assert.equal(cut.imported_count, atKill);
    // Every committed place is in the full-text index, and the index holds nothing else.
    const fts = h
      .prepare(
        'SELECT (SELECT count(*) FROM places_fts) AS n, (SELECT count(*) FROM places WHERE id NOT IN (SELECT rowid FROM places_fts)) AS missing',
      )
      .get();
    assert.deepEqual(fts, { n: atKill, missing: 0 });

    await prepareDatabase(t.db);
    const again = await runImport(t.db, loadEnricher(), mergedPbf);
    assert.equal(again.imported_count, mergedNamed() - atKill);
    assert.equal(again.unchanged_count, atKill);
    assert.equal(countPlaces(h), mergedNamed());
    const previous = h.prepare('SELECT status, error FROM import_runs WHERE id = ?').get(cut.id) as { status: string; error: string };
    assert.deepEqual(previous, { status: 'failed', error: 'interrupted' });
  });

  test('a second import of the same file changes nothing', async () => {
    const second = await runImport(t.db, loadEnricher(), mergedPbf);
    assert.deepEqual(
      { imported: second.imported_count, updated: second.updated_count, unchanged: second.unchanged_count },
      { imported: 0, updated: 0, unchanged: mergedNamed() },
    );
    assert.equal(countPlaces(t.db.sqlite!), mergedNamed());
  });

  test('the NDJSON export of the same POIs adds no row and only moves some way and relation points', async () => {
    const s = await runImport(t.db, loadEnricher(), mergedNdjson);
    assert.equal(s.format, 'osm-ndjson');
    assert.equal(s.imported_count, 0);
    assert.equal(s.updated_count + s.unchanged_count, 19_297);
    // The export computed some way/relation points from other node versions or another method (see the
    // reader tests): those rows are updated, everything else is identical.
    assert.ok(s.updated_count <= 200, `${s.updated_count} updated`);
    const nodesUpdated = await t.db.kysely
      .selectFrom('places')
      .select(sql<number>`count(*)`.as('n'))
      .where('import_run_id', '=', s.runId)
      .where('source_id', 'like', 'n%')
      .executeTakeFirstOrThrow();
    assert.equal(Number(nodesUpdated.n), 0);
    assert.equal(countPlaces(t.db.sqlite!), mergedNamed());
  });
});
