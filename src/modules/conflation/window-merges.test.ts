import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fsqPortugueseRows, fsqSampleLines, portoOsmLines } from '../../../test/helpers/conflation-sample.ts';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { loadEnricher } from '../../bootstrap.ts';
import type { Db } from '../../infra/db/database.ts';
import { runImport } from '../importers/import.service.ts';
import { conflate } from './conflation.service.ts';

/**
 * The merges of a window of records are decided together and made together (README, "Cost"): a record
 * must see what the merges decided before it in its window did, as if each had been written before it read.
 * Real data: the named OpenStreetMap POIs of central Porto, the Portuguese rows of the Foursquare OS Places
 * sample, and the same POIs again as a third source (`twin`). Conflating the second and third sources in one
 * run (their records due together) must give what conflating them one import after the other gives.
 */

const osmLines = portoOsmLines();
const fsqLines = fsqSampleLines();
const fsqPortugal = fsqPortugueseRows(fsqLines);
const resDaRua = osmLines.find((l) => l.includes('"Rés da Rua"'))!;
const fsqResDaRua = [fsqLines[0]!, fsqLines.find((l) => l.includes('Rés da Rua'))!];
/**
 * The POIs within about 500 m of Rés da Rua: the place its records join and hundreds of neighbours they must not.
 * The tests of one business, which check how the records of a window see each other's merges, import these
 * rather than all of central Porto; the test of whole runs imports it all.
 */
const aroundResDaRua = (() => {
  const at = JSON.parse(resDaRua) as { lat: number; lon: number };
  return osmLines.filter((l) => {
    const { lat, lon } = JSON.parse(l) as { lat: number; lon: number };
    return Math.abs(lat - at.lat) < 0.005 && Math.abs(lon - at.lon) < 0.0065;
  });
})();

/** Each place of several sources by public id: its sources, fields, field sources and state. */
async function placesOfSeveralSources(db: Db) {
  const rows = await db.kysely
    .selectFrom('places')
    .select([
      'public_id',
      'sources',
      'field_sources',
      'name',
      'names',
      'category',
      'categories',
      'phone',
      'website',
      'address',
      'lat',
      'lon',
    ])
    .select(['content_hash', 'closed_reason'])
    .where('sources', 'is not', null)
    .orderBy('public_id')
    .execute();
  return rows;
}

/** Each record by `source:source_id`: the public id of its place (null: on its own), its state and public id. */
async function recordsByIdentity(db: Db) {
  const rows = await db.kysely
    .selectFrom('places as r')
    .leftJoin('places as p', 'p.id', 'r.merged_into')
    .select(['r.source', 'r.source_id', 'r.public_id', 'r.closed_reason', 'p.public_id as place'])
    .where('r.sources', 'is', null)
    .orderBy('r.source')
    .orderBy('r.source_id')
    .execute();
  return rows;
}

for (const dialect of dialects) {
  describe(`merges of one window decided together (${dialect.name})`, () => {
    let dir: string;
    const opened: TestDatabase[] = [];
    const enricher = loadEnricher();
    const file = (name: string, lines: string[]) => {
      const path = join(dir, name);
      writeFileSync(path, `${lines.join('\n')}\n`);
      return path;
    };
    const fresh = async () => {
      const t = await dialect.open('migrated');
      opened.push(t);
      return t.db;
    };

    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'window-merges-'));
    });
    after(async () => {
      for (const t of opened) await t.dispose();
      rmSync(dir, { recursive: true, force: true });
    });

    test('a record joins the place an earlier record of its window made, instead of making it again', async () => {
      const db = await fresh();
      await runImport(db, enricher, file('around-res-da-rua.ndjson', aroundResDaRua));
      await runImport(db, enricher, file('fsq.csv', fsqResDaRua), { conflate: false });
      await runImport(db, enricher, file('twin.ndjson', [resDaRua]), { source: 'twin', dataset: 'twin', conflate: false });
      const summary = await conflate(db);
      assert.equal(summary.merged, 2);
      const rows = await db.kysely
        .selectFrom('places')
        .select(['id', 'public_id', 'source', 'sources', 'merged_into', 'closed_reason'])
        .where('name', '=', 'Rés da Rua')
        .orderBy('id')
        .execute();
      const places = rows.filter((r) => r.sources !== null);
      assert.equal(places.length, 1, JSON.stringify(rows));
      const place = places[0]!;
      assert.equal(place.id, rows[0]!.id, 'the OpenStreetMap record’s row is the place');
      assert.deepEqual(
        (JSON.parse(place.sources!) as Array<{ source: string }>).map((s) => s.source),
        ['osm', 'foursquare', 'twin'],
      );
      assert.deepEqual(
        rows
          .filter((r) => r.sources === null)
          .map((r) => [r.source, r.merged_into, r.closed_reason])
          .sort(),
        [
          ['foursquare', place.id, 'merged'],
          ['osm', place.id, 'merged'],
          ['twin', place.id, 'merged'],
        ],
      );
    });

    test('of two records of one source that match one business in a window, one joins its place and the other stays apart', async () => {
      const db = await fresh();
      await runImport(db, enricher, file('around-res-da-rua.ndjson', aroundResDaRua));
      const twice = [resDaRua, resDaRua.replace('"id": "n4463481294"', '"id": "n4463481295"')];
      assert.notEqual(twice[0], twice[1]);
      const summary = await runImport(db, enricher, file('twins.ndjson', twice), { source: 'twin', dataset: 'twin' });
      assert.equal(summary.merged_count, 1);
      const records = await db.kysely
        .selectFrom('places')
        .select(['source_id', 'merged_into', 'closed_reason'])
        .where('source', '=', 'twin')
        .orderBy('source_id')
        .execute();
      assert.equal(records.length, 2);
      assert.equal(records.filter((r) => r.merged_into !== null).length, 1, JSON.stringify(records));
      assert.equal(records.find((r) => r.merged_into === null)!.closed_reason, null, 'the other is an open place of its own');
    });

    test('two sources conflated in one run give the places that conflating them one import after the other gives', async () => {
      const together = await fresh();
      await runImport(together, enricher, file('porto.ndjson', osmLines));
      await runImport(together, enricher, file('fsq-pt.csv', fsqPortugal), { conflate: false });
      await runImport(together, enricher, file('porto-twin.ndjson', osmLines), { source: 'twin', dataset: 'twin', conflate: false });
      const summary = await conflate(together);

      const inTurn = await fresh();
      await runImport(inTurn, enricher, file('porto.ndjson', osmLines));
      const fsq = await runImport(inTurn, enricher, file('fsq-pt.csv', fsqPortugal));
      const twin = await runImport(inTurn, enricher, file('porto-twin.ndjson', osmLines), { source: 'twin', dataset: 'twin' });

      assert.ok(twin.merged_count > 100, `most twins merge (${twin.merged_count})`);
      assert.equal(summary.merged, fsq.merged_count + twin.merged_count);
      assert.deepEqual(await placesOfSeveralSources(together), await placesOfSeveralSources(inTurn));
      assert.deepEqual(await recordsByIdentity(together), await recordsByIdentity(inTurn));
    });
  });
}
