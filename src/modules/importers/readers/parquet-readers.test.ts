import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { readParquet, writeParquetLike } from '../../../../test/helpers/parquet.ts';
import type { PlaceInput } from '../../places/place-input.ts';
import { detectFormat } from '../import.service.ts';
import type { OpenOptions, ReaderFactory } from '../importer.types.ts';
import { foursquareCsv } from './foursquare.ts';
import { overtureNdjson } from './overture.ts';
import { parquetPlaces } from './parquet-places.ts';

const data = resolve(import.meta.dirname, '../../../../../shared/data');
const boulderParquet = join(data, 'places/overture-places-boulder-3545.parquet');
const boulderNdjson = join(data, 'places/overture-places-boulder-3545.ndjson.gz');
const fsqParquet = join(data, 'places/fsq-os-places-sample-10k-2024-11-19.parquet');
const fsqCsv = join(data, 'places/fsq-os-places-sample-10k-2024-11-19.csv.gz');

type Line = {
  id: string;
  geometry: { coordinates: [number, number] };
  confidence: number;
  phones?: string[] | null;
  websites?: string[] | null;
  emails?: string[] | null;
  socials?: string[] | null;
  taxonomy?: { primary?: string } | null;
};
const lines = gunzipSync(readFileSync(boulderNdjson))
  .toString('utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l) as Line);

/** A list as the record gives it, without empty entries and repeats. */
const given = (list: string[] | null | undefined): string[] => [...new Set((list ?? []).map((s) => s.trim()).filter((s) => s !== ''))];

async function read(
  factory: ReaderFactory,
  path: string,
  options: OpenOptions = {},
): Promise<{ places: PlaceInput[]; bytesRead: number; totalBytes: number }> {
  const reader = await factory.open(path, options);
  const places: PlaceInput[] = [];
  for await (const r of reader.records()) {
    assert.ok(r.ok, r.ok ? '' : r.reason);
    places.push(r.place);
  }
  return { places, bytesRead: reader.bytesRead(), totalBytes: reader.totalBytes };
}

describe('reading Overture GeoParquet', () => {
  let places: PlaceInput[];
  before(async () => {
    places = (await read(parquetPlaces, boulderParquet)).places;
  });

  test('is detected by its magic bytes, whatever the file is called', async () => {
    assert.equal((await detectFormat(boulderParquet)).format, 'parquet');
    assert.equal((await detectFormat(fsqParquet)).format, 'parquet');
    assert.equal((await detectFormat(fsqCsv)).format, 'foursquare-csv');
  });

  test('gives every place with its GERS id, its WKB point and every contact the record has', () => {
    assert.equal(places.length, lines.length);
    places.forEach((p, i) => {
      const line = lines[i]!;
      assert.equal(p.sourceId, line.id);
      assert.deepEqual([p.lon, p.lat], line.geometry.coordinates);
      for (const k of ['phones', 'websites', 'emails', 'socials'] as const)
        assert.deepEqual(p.contacts?.[k] ?? [], given(line[k]), `${line.id} ${k}`);
      assert.equal(p.phone ?? null, given(line.phones)[0] ?? null);
      assert.equal(p.attributes?.confidence, line.confidence);
    });
    assert.ok(places.filter((p) => (p.contacts?.socials?.length ?? 0) > 0).length > 2000, 'most Boulder records carry a social profile');
  });

  test('takes the category from the current taxonomy as a path from the top, and keeps the sources as provenance', () => {
    const pizza = places.find((p) => p.sourceId === '5d181e52-949d-4557-ba62-93ba3bd8fba1')!;
    assert.deepEqual(pizza.sourceCategories, [
      'food_and_drink > restaurant > european_restaurant > mediterranean_restaurant > italian_restaurant > pizza_restaurant',
    ]);
    assert.deepEqual(pizza.attributes?.sources, [
      { dataset: 'Foursquare', record_id: '30910f3e27834c4b16e74404', license: 'Apache-2.0', update_time: '2025-03-21T00:00:00.000' },
      { dataset: 'Overture', license: 'CDLA-Permissive-2.0', update_time: '2026-04-07T10:00:15Z' },
    ]);
    assert.equal(pizza.attributes?.basic_category, 'restaurant');
    const withTaxonomy = lines.filter((l) => l.taxonomy?.primary).length;
    assert.equal(
      places.filter((p) => p.sourceCategories.length > 0).length,
      withTaxonomy + places.filter((p, i) => !lines[i]!.taxonomy?.primary && p.sourceCategories.length > 0).length,
    );
  });

  test('gives the same places as the NDJSON of the same rows', async () => {
    assert.deepEqual((await read(overtureNdjson, boulderNdjson)).places, places);
  });

  test('falls back to basic_category, then to the older categories, when a release lacks the newer columns', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'overture-schemas-'));
    try {
      const { metadata, rows } = await readParquet(boulderParquet);
      writeParquetLike(join(dir, 'old.parquet'), metadata, rows, { drop: ['taxonomy', 'basic_category'] });
      writeParquetLike(join(dir, 'basic.parquet'), metadata, rows, { drop: ['taxonomy', 'categories'] });
      const old = (await read(parquetPlaces, join(dir, 'old.parquet'))).places;
      const basic = (await read(parquetPlaces, join(dir, 'basic.parquet'))).places;
      rows.forEach((row, i) => {
        const c = row.categories as { primary: string | null; alternate: string[] | null } | null;
        assert.deepEqual(old[i]!.sourceCategories, [...new Set([c?.primary, ...(c?.alternate ?? [])].filter((s): s is string => !!s))]);
        assert.deepEqual(basic[i]!.sourceCategories, row.basic_category ? [row.basic_category] : []);
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('--bbox, --country and --min-confidence keep exactly the places inside them', async () => {
    const bbox: [number, number, number, number] = [-105.29, 40.0, -105.27, 40.02];
    const inside = lines.filter(
      ({
        geometry: {
          coordinates: [lon, lat],
        },
      }) => lon >= bbox[0] && lon <= bbox[2] && lat >= bbox[1] && lat <= bbox[3],
    );
    assert.ok(inside.length > 100 && inside.length < lines.length);
    assert.deepEqual(
      (await read(parquetPlaces, boulderParquet, { bbox })).places.map((p) => p.sourceId),
      inside.map((l) => l.id),
    );
    const confident = lines.filter((l) => l.confidence >= 0.9);
    assert.deepEqual(
      (await read(parquetPlaces, boulderParquet, { minConfidence: 0.9 })).places.map((p) => p.sourceId),
      confident.map((l) => l.id),
    );
    assert.equal((await read(parquetPlaces, boulderParquet, { country: 'us' })).places.length, lines.length);
  });

  test('skips the row groups whose statistics lie outside the selection without reading their pages', async () => {
    const all = await read(parquetPlaces, boulderParquet);
    const elsewhere = await read(parquetPlaces, boulderParquet, { bbox: [2.2, 48.8, 2.4, 48.9] });
    const otherCountry = await read(parquetPlaces, boulderParquet, { country: 'DE' });
    assert.equal(elsewhere.places.length, 0);
    assert.equal(otherCountry.places.length, 0);
    // Only the footer is read: the file is mostly its row groups.
    const footer = Number((await readParquet(boulderParquet)).metadata.metadata_length);
    for (const r of [elsewhere, otherCountry])
      assert.ok(r.bytesRead < all.bytesRead / 4 && r.bytesRead >= footer, `${r.bytesRead} of ${all.bytesRead}`);
  });
});

describe('reading Foursquare OS Places', () => {
  let fromParquet: PlaceInput[];
  before(async () => {
    fromParquet = (await read(parquetPlaces, fsqParquet)).places;
  });

  test('gives every place with its fsq_place_id, categories as labels and closed ones closed', () => {
    assert.equal(fromParquet.length, 10_000);
    assert.equal(new Set(fromParquet.map((p) => p.sourceId)).size, 10_000);
    assert.equal(fromParquet.filter((p) => p.sourceCategories.length > 0).length, 8904);
    assert.equal(fromParquet.filter((p) => p.closed).length, 573);
    const first = fromParquet[0]!;
    assert.equal(first.sourceId, '4aee4d4688a04abe82d1ace4');
    assert.deepEqual(first.sourceCategories, ['Retail > Fashion Retail > Clothing Store']);
    assert.equal(first.attributes?.date_refreshed, '2024-06-14');
    assert.deepEqual(first.contacts, { phones: ['972 32 45 54'], websites: ['http://www.canadahouse.es'] });
  });

  test('keeps tel, website, email and the social ids as contacts, socials as network:handle', () => {
    const counts = { phones: 0, websites: 0, emails: 0, facebook: 0, instagram: 0, x: 0 };
    for (const p of fromParquet) {
      for (const k of ['phones', 'websites', 'emails'] as const) if (p.contacts?.[k]?.length) counts[k]++;
      for (const s of p.contacts?.socials ?? []) counts[s.slice(0, s.indexOf(':')) as 'facebook' | 'instagram' | 'x']++;
    }
    assert.deepEqual(counts, { phones: 4541, websites: 2996, emails: 1124, facebook: 669, instagram: 100, x: 479 });
    assert.ok(fromParquet.some((p) => p.contacts?.socials?.some((s) => /^facebook:\d+$/.test(s))));
  });

  test('reads the CSV form into the same places, labels with commas of their own kept whole', async () => {
    const fromCsv = (await read(foursquareCsv, fsqCsv)).places;
    // The CSV lists the rows in another order.
    const byId = (places: PlaceInput[]) => [...places].sort((a, b) => (a.sourceId < b.sourceId ? -1 : 1));
    assert.deepEqual(byId(fromCsv), byId(fromParquet));
    assert.ok(fromCsv.some((p) => p.sourceCategories.includes('Dining and Drinking > Cafe, Coffee, and Tea House > Café')));
  });

  test('reads the release columns the sample lacks: geom as the point, placemaker_url kept', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fsq-release-'));
    try {
      const { metadata, rows } = await readParquet(fsqParquet);
      const sample = rows.slice(0, 50);
      // The release's layout: a WKB `geom` beside the coordinates, which some rows lack.
      const withGeom = {
        ...metadata,
        schema: [
          ...metadata.schema,
          { name: 'geom', type: 'BYTE_ARRAY' as const, repetition_type: 'OPTIONAL' as const },
          { name: 'placemaker_url', type: 'BYTE_ARRAY' as const, converted_type: 'UTF8' as const, repetition_type: 'OPTIONAL' as const },
        ],
      };
      withGeom.schema[0] = { ...withGeom.schema[0]!, num_children: (withGeom.schema[0]!.num_children ?? 0) + 2 };
      const edited = sample.map((r, i) => ({
        ...r,
        ...(i % 2 === 0 ? { latitude: null, longitude: null } : {}),
        geom: { type: 'Point', coordinates: [r.longitude, r.latitude] },
        placemaker_url: `https://foursquare.com/placemakers/review-place/${String(r.fsq_place_id)}`,
      }));
      writeParquetLike(join(dir, 'release.parquet'), withGeom, edited);
      const places = (await read(parquetPlaces, join(dir, 'release.parquet'))).places;
      places.forEach((p, i) => {
        assert.deepEqual([p.lon, p.lat], [sample[i]!.longitude, sample[i]!.latitude]);
        assert.equal(p.attributes?.placemaker_url, `https://foursquare.com/placemakers/review-place/${String(sample[i]!.fsq_place_id)}`);
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

test('a file that says PAR1 but has no readable footer is refused with a clear error', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bad-parquet-'));
  try {
    const path = join(dir, 'broken.parquet');
    writeFileSync(path, Buffer.concat([Buffer.from('PAR1'), Buffer.alloc(100, 7)]));
    await assert.rejects(
      parquetPlaces.open(path, {}),
      (e: Error & { code?: string }) => e.code === 'validation_failed' && /Parquet/.test(e.message),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
