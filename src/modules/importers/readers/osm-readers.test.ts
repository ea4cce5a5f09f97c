import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { describe, test } from 'node:test';
import { mergedNdjson, mergedPbf, osmDir, osmiumCount, poiFilter } from '../../../../test/helpers/osm.ts';
import { runTool } from '../../../../test/helpers/tools.ts';
import { AppError } from '../../../infra/errors.ts';
import type { PlaceInput } from '../../places/place-input.ts';
import { readHead } from '../import.service.ts';
import type { ReadResult } from '../importer.types.ts';
import { lineBatches, osmNdjsonLineToPlace, osmNdjsonReaderFactory } from './osm-ndjson.ts';
import { osmPbfReaderFactory } from './osm-pbf.ts';
import { osmObjectToPlace } from './osm-tags.ts';

const extracts = readdirSync(osmDir)
  .filter((f) => f.endsWith('.osm.pbf'))
  .sort();

async function readAll(path: string): Promise<ReadResult[]> {
  const factory = path.endsWith('.pbf') ? osmPbfReaderFactory : osmNdjsonReaderFactory;
  const reader = await factory.open(path, {});
  const out: ReadResult[] = [];
  for await (const r of reader.records()) out.push(r);
  return out;
}

const placesById = (results: ReadResult[]) => new Map(results.flatMap((r) => (r.ok ? [[r.place.sourceId, r.place] as const] : [])));

describe('OpenStreetMap .osm.pbf reader', () => {
  for (const file of extracts) {
    test(`${file}: yields one place per POI that osmium counts with a name, and skips the unnamed ones`, async () => {
      const results = await readAll(join(osmDir, file));
      const named = osmiumCount(join(osmDir, file), poiFilter, 'nwr/name');
      const all = osmiumCount(join(osmDir, file), poiFilter);
      const ok = results.filter((r) => r.ok).map((r) => (r as { place: PlaceInput }).place.sourceId[0]);
      const skipped = results.filter((r) => !r.ok).map((r) => (r as { reason: string }).reason);
      assert.deepEqual(
        {
          nodes: ok.filter((t) => t === 'n').length,
          ways: ok.filter((t) => t === 'w').length,
          relations: ok.filter((t) => t === 'r').length,
        },
        { nodes: named.nodes, ways: named.ways, relations: named.relations },
      );
      // Every object in these files has a location (their ways and relations come with their nodes).
      assert.equal(skipped.filter((r) => r === 'no location').length, 0);
      assert.equal(results.length, all.nodes + all.ways + all.relations);
      assert.ok(skipped.every((r) => r === 'no name'));
    });
  }

  test('maps tags to contact, address, names, categories and attributes (Ratskeller, Munich)', async () => {
    const place = placesById(await readAll(join(osmDir, 'munich-center-2020.osm.pbf')));
    const ratskeller = [...place.values()].find((p) => p.name === 'Ratskeller');
    assert.ok(ratskeller, 'Ratskeller is in the Munich extract');
    // `phone` wins over `contact:phone` when an object has both.
    assert.equal(ratskeller.phone, '+49 89 219 98 90');
    assert.equal(ratskeller.osmTags?.['contact:phone'], '+49 (0) 89 21 99 89 0');
    assert.equal(ratskeller.email, 'info@ratskeller.com');
    assert.equal(ratskeller.countryCode, 'DE');
    assert.equal(ratskeller.attributes?.wheelchair, 'yes');
    assert.match(ratskeller.website ?? '', /ratskeller/i);
    assert.equal(ratskeller.street, 'Marienplatz');
    assert.equal(ratskeller.housenumber, '8');
    assert.equal(ratskeller.postcode, '80331');
    assert.equal(ratskeller.city, 'München');
    assert.ok(ratskeller.sourceCategories.includes('amenity=restaurant'));
    assert.ok(ratskeller.openingHours);
    assert.equal(ratskeller.attributes?.['diet:vegetarian'], 'yes');
    assert.equal(ratskeller.attributes?.brewery, undefined, 'only the listed attribute tags are copied');
    assert.equal(ratskeller.names?.zh, '新市政廳地窖餐廳');
  });

  test('keeps every name:* variant and the alternative names (M/S Wäiski, Helsinki)', async () => {
    const places = [...placesById(await readAll(join(osmDir, 'helsinki-center-2019.osm.pbf'))).values()];
    const boat = places.find((p) => p.name === 'M/S Wäiski');
    assert.ok(boat);
    for (const [key, value] of Object.entries(boat.osmTags ?? {})) {
      if (/^name:[a-z]{2,3}$/.test(key)) assert.equal(boat.names?.[key.slice(5)], value);
    }
    assert.ok(Object.keys(boat.names ?? {}).length >= 2);
    const withAlt = places.find((p) => p.osmTags?.alt_name?.includes(';'));
    if (withAlt)
      assert.deepEqual(
        withAlt.names?.alt,
        withAlt.osmTags!.alt_name!.split(';').map((s) => s.trim()),
      );
  });

  test('places a way at the average of its vertices, to OSM precision', async () => {
    const results = await readAll(join(osmDir, 'andorra-2026.osm.pbf'));
    const pitch = placesById(results).get('w6178964');
    assert.ok(pitch);
    assert.equal(pitch.lat, 42.5304269);
    assert.equal(pitch.lon, 1.5714065);
  });

  test('moves bytesRead forward while reading and ends at the file size', async () => {
    const reader = await osmPbfReaderFactory.open(join(osmDir, 'malta-2018.osm.pbf'), {});
    const seen = new Set<number>();
    for await (const _ of reader.records()) seen.add(reader.bytesRead());
    assert.ok(seen.size > 2, `bytesRead took ${seen.size} values`);
    assert.equal(reader.bytesRead(), reader.totalBytes);
  });

  test('rejects a truncated file with a validation error that names the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'osm-trunc-'));
    try {
      const path = join(dir, 'cut.osm.pbf');
      writeFileSync(path, readFileSync(mergedPbf).subarray(0, 300_000));
      await assert.rejects(
        readAll(path),
        (e: unknown) => e instanceof AppError && e.code === 'validation_failed' && /cut\.osm\.pbf/.test(e.message),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('reads a file written with plain (not dense) nodes and uncompressed blocks to the same places', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'osm-plain-'));
    try {
      const source = join(osmDir, 'monaco-2026.osm.pbf');
      const plain = join(dir, 'plain.osm.pbf');
      runTool('osmium', ['cat', '-O', '-o', plain, '-f', 'pbf,pbf_dense_nodes=false,pbf_compression=none', source]);
      const expected = await readAll(source);
      assert.ok(expected.filter((r) => r.ok).length > 500);
      assert.deepEqual(await readAll(plain), expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('is detected from the first bytes, and the NDJSON export is not taken for PBF', async () => {
    assert.equal(osmPbfReaderFactory.detect('x.bin', await readHead(mergedPbf)), true);
    assert.equal(osmPbfReaderFactory.detect(mergedNdjson, await readHead(mergedNdjson)), false);
  });
});

describe('OpenStreetMap NDJSON reader', () => {
  test('gives the same places as the PBF reader for the same objects; only some way/relation points differ', async () => {
    const fromPbf = placesById(await readAll(mergedPbf));
    const ndjson = await readAll(mergedNdjson);
    const fromNdjson = placesById(ndjson);
    assert.equal(ndjson.length, 34295);
    assert.equal(fromNdjson.size, 19297);
    let movedWays = 0;
    let movedRelations = 0;
    for (const [id, place] of fromNdjson) {
      const other = fromPbf.get(id);
      assert.ok(other, `${id} is in the PBF file too`);
      assert.deepEqual({ ...place, lat: 0, lon: 0 }, { ...other, lat: 0, lon: 0 }, id);
      if (place.lat === other.lat && place.lon === other.lon) continue;
      // The export took nodes from each extract, the merged PBF keeps one version of a shared node, and
      // the export's relation points were computed differently: close, not identical.
      assert.notEqual(id[0], 'n', `node ${id} has the same point in both`);
      if (id[0] === 'w') movedWays++;
      else movedRelations++;
      const metres = Math.hypot(
        (place.lat! - other.lat!) * 111_320,
        (place.lon! - other.lon!) * 111_320 * Math.cos((place.lat! * Math.PI) / 180),
      );
      assert.ok(metres < 100, `${id} is ${Math.round(metres)} m away`);
    }
    assert.ok(movedWays < 0.02 * 3992, `${movedWays} way points differ`);
    assert.ok(movedRelations <= 108, `${movedRelations} relation points differ`);
  });

  test('is detected from its first line, and the PBF file is not taken for it', async () => {
    assert.equal(osmNdjsonReaderFactory.detect(mergedNdjson, await readHead(mergedNdjson)), true);
    assert.equal(osmNdjsonReaderFactory.detect(mergedPbf, await readHead(mergedPbf)), false);
    assert.equal(osmNdjsonReaderFactory.detect('x.ndjson', Buffer.from('{"id":"abc","name":"A shop"}\n')), false);
  });

  test('reports bad lines with a reason instead of failing the import', () => {
    assert.deepEqual(osmNdjsonLineToPlace('{"id": "n1", "tags": '), { ok: false, reason: 'invalid JSON' });
    assert.deepEqual(osmNdjsonLineToPlace('[1,2]'), { ok: false, reason: 'no OSM id' });
    assert.deepEqual(osmNdjsonLineToPlace('{"id": "n1", "tags": {"shop": 3}}'), { ok: false, reason: 'no tags' });
    assert.deepEqual(osmNdjsonLineToPlace('{"id": "n1", "lat": 1, "lon": 2, "tags": {"shop": "bakery"}}'), {
      ok: false,
      reason: 'no name',
    });
    assert.deepEqual(osmNdjsonLineToPlace('{"id": "w7", "tags": {"shop": "bakery", "name": "Bäckerei"}}'), {
      ok: false,
      reason: 'no location',
    });
    const ok = osmNdjsonLineToPlace(
      '{"id": "n1", "lat": 47.1, "lon": 9.5, "tags": {"shop": "bakery", "name": "Bäckerei", "contact:phone": "+423 1; +423 2", ' +
        '"name:ja_kana": "ベッカライ", "name:zh-Hant": "麵包店", "name:etymology:wikidata": "Q1", "name:signed": "no", "alt_name": "A; B"}}',
    );
    assert.ok(ok.ok);
    assert.equal(ok.place.phone, '+423 1');
    assert.deepEqual(ok.place.sourceCategories, ['shop=bakery']);
    // Language variants are names; `name:etymology:wikidata` and `name:signed` are facts about the name.
    assert.deepEqual(ok.place.names, { ja_kana: 'ベッカライ', 'zh-Hant': '麵包店', alt: ['A', 'B'] });
  });
});

describe('NDJSON line splitting', () => {
  test('cuts lines where readline does: \\n, \\r\\n, a lone \\r, a last line without an end, characters split across chunks', async () => {
    const text = 'a\nb\r\nc\rd\n\n\r\ne\r\rf\r\nM\u00fcnchen \u65b0\u5e02\u653f\u5ef3 \ud83c\udf55\r\nlast';
    for (const size of [1, 2, 3, 5, 64]) {
      for (const tail of ['', '\n', '\r', '\r\n']) {
        const bytes = Buffer.from(text + tail);
        const chunks = Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));
        const expected: string[] = [];
        for await (const line of createInterface({ input: Readable.from(chunks), crlfDelay: Infinity })) expected.push(line);
        const got: string[] = [];
        for await (const lines of lineBatches(Readable.from(chunks))) got.push(...lines);
        assert.deepEqual(got, expected, `chunks of ${size} bytes, ending ${JSON.stringify(tail)}`);
      }
    }
  });
});

describe('OpenStreetMap places their tags say are closed', () => {
  const closed = (tags: Record<string, string>) => {
    const r = osmObjectToPlace('n1', { name: 'Somewhere', ...tags }, 48.1, 11.5);
    assert.ok(r.ok);
    return r.place.closed;
  };

  test('disused=yes, vacant business keys and lifecycle prefixes without a live key are closed', () => {
    assert.equal(closed({ amenity: 'restaurant', disused: 'yes' }), true);
    assert.equal(closed({ shop: 'vacant' }), true);
    assert.equal(closed({ 'disused:shop': 'bakery' }), true);
    assert.equal(closed({ 'was:amenity': 'cafe' }), true);
    assert.equal(closed({ 'abandoned:tourism': 'hotel' }), true);
  });

  test('a live business key beside a former use, or a former name, is open', () => {
    assert.equal(closed({ amenity: 'restaurant' }), false);
    assert.equal(closed({ amenity: 'restaurant', 'disused:amenity': 'cafe' }), false);
    assert.equal(closed({ leisure: 'fitness_centre', 'disused:shop': 'yes' }), false);
    assert.equal(closed({ amenity: 'pub', 'was:name': 'Helmi' }), false);
    assert.equal(closed({ shop: 'vacant', amenity: 'cafe' }), false);
    assert.equal(closed({ amenity: 'cafe', disused: 'no' }), false);
  });

  test('the real extracts hold closed places, found the same way by both readers', async () => {
    const lines = (await import('node:zlib')).gunzipSync(readFileSync(mergedNdjson)).toString('utf8').split('\n').filter(Boolean);
    const closedIds = lines
      .map(osmNdjsonLineToPlace)
      .filter((r) => r.ok && r.place.closed)
      .map((r) => (r as { place: PlaceInput }).place.sourceId);
    assert.ok(closedIds.length >= 20, `${closedIds.length} closed`);
    const reader = await osmPbfReaderFactory.open(mergedPbf, {});
    const fromPbf: string[] = [];
    for await (const r of reader.records()) if (r.ok && r.place.closed) fromPbf.push(r.place.sourceId);
    assert.deepEqual(fromPbf.sort(), closedIds.sort());
  });
});
