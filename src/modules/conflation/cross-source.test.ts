import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fsqPortugueseRows, fsqSampleLines, portoOsmLines, sharedText } from '../../../test/helpers/conflation-sample.ts';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { loadEnricher } from '../../bootstrap.ts';
import { runImport } from '../importers/import.service.ts';

/**
 * One business in the three big open sources becomes one place: _Rés da Rua_, a community centre and
 * vegetarian restaurant at Rua de Álvares Cabral 263 in Porto, as OpenStreetMap (the Porto extract's POIs)
 * and the Foursquare OS Places sample (its Portuguese rows, a real row each) have it. Overture's Boulder
 * sample has no Porto row, so its record is a real Boulder row (its shape, categories and sources) placed on
 * the business with the name and address of the other two and the Facebook page Foursquare lists.
 */

/** The named OSM POIs around the business (about 1.5 km each way). */
const osmLines = portoOsmLines();
const fsqLines = fsqSampleLines();
const fsqPortugal = fsqPortugueseRows(fsqLines);

function overtureRecord(): string {
  const row = sharedText('places/overture-places-boulder-3545.ndjson.gz')
    .split('\n')
    .find((l) => l.includes('"id":"d70e6682-c3c6-4e8a-8d94-3261cac51295"'))!;
  const o = JSON.parse(row) as Record<string, unknown>;
  const [lon, lat] = [-8.615655, 41.154772];
  return JSON.stringify({
    ...o,
    id: '0b5b8a0e-4f5c-4d7e-9b51-2c1a7f3e9d01',
    geometry: { type: 'Point', coordinates: [lon, lat] },
    bbox: { xmin: lon, xmax: lon, ymin: lat, ymax: lat },
    names: { primary: 'Rés da Rua' },
    addresses: [{ freeform: 'Rua de Álvares Cabral 263', locality: 'Porto', postcode: '4050-040', region: null, country: 'PT' }],
    websites: null,
    emails: null,
    phones: null,
    socials: ['https://www.facebook.com/428070027331607'],
  });
}

for (const dialect of dialects) {
  describe(`one business of OpenStreetMap, Foursquare and Overture is one place (${dialect.name})`, () => {
    let t: TestDatabase;
    let dir: string;
    const enricher = loadEnricher();
    const file = (name: string, lines: string[]) => {
      const path = join(dir, name);
      writeFileSync(path, `${lines.join('\n')}\n`);
      return path;
    };
    const rowsNamed = (name: string) =>
      t.db.kysely
        .selectFrom('places')
        .select(['id', 'public_id', 'source', 'source_id', 'merged_into', 'closed_reason', 'sources', 'name', 'category'])
        .where('name', '=', name)
        .orderBy('id')
        .execute();

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'cross-source-'));
      // The schema only: imports classify in memory, and no reference table is read here.
      t = await dialect.open('migrated');
    });
    after(async () => {
      await t.dispose();
      rmSync(dir, { recursive: true, force: true });
    });

    test('the OpenStreetMap node and the Foursquare row become one place under the node’s public id', async () => {
      await runImport(t.db, enricher, file('porto-pois.ndjson', osmLines));
      const [osm] = await rowsNamed('Rés da Rua');
      assert.ok(osm && osm.source === 'osm', 'the OSM node is imported');
      const summary = await runImport(t.db, enricher, file('fsq-portugal.csv', fsqPortugal));
      assert.equal(summary.source, 'foursquare');
      assert.ok(summary.merged_count >= 1);
      const rows = await rowsNamed('Rés da Rua');
      const place = rows.find((r) => r.sources !== null)!;
      assert.ok(place, JSON.stringify(rows));
      assert.equal(place.id, osm.id, 'the place keeps the first record’s row');
      assert.equal(place.public_id, osm.public_id);
      assert.equal(place.closed_reason, null);
      assert.deepEqual(
        (JSON.parse(place.sources!) as Array<{ source: string }>).map((s) => s.source),
        ['osm', 'foursquare'],
      );
      const records = rows.filter((r) => r.sources === null);
      assert.deepEqual(records.map((r) => [r.source, r.merged_into, r.closed_reason]).sort(), [
        ['foursquare', place.id, 'merged'],
        ['osm', place.id, 'merged'],
      ]);
    });

    test('the Overture record joins the same place, which then lists all three sources', async () => {
      const summary = await runImport(t.db, enricher, file('overture-porto.ndjson', [overtureRecord()]));
      assert.equal(summary.source, 'overture');
      assert.equal(summary.merged_count, 1);
      const rows = await rowsNamed('Rés da Rua');
      const places = rows.filter((r) => r.sources !== null);
      assert.equal(places.length, 1, 'one place, not a second one of Foursquare and Overture');
      const place = places[0]!;
      assert.deepEqual(
        // OpenStreetMap leads, then Overture, then the others (the merge's order of trust).
        (JSON.parse(place.sources!) as Array<{ source: string }>).map((s) => s.source),
        ['osm', 'overture', 'foursquare'],
      );
      assert.equal(place.category, 'community_centre');
      const open = await t.db.kysely
        .selectFrom('places')
        .select('id')
        .where('name', '=', 'Rés da Rua')
        .where('closed_at', 'is', null)
        .execute();
      assert.deepEqual(
        open.map((r) => r.id),
        [place.id],
        'search shows the business once',
      );
    });
  });
}
