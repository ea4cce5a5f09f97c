import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { readParquet, writeParquetLike } from '../../../../test/helpers/parquet.ts';
import { fileBuffer, topLevelColumns } from './parquet.ts';
import { rowAssembler } from './parquet-rows.ts';

const data = resolve(import.meta.dirname, '../../../../../shared/data');
const boulder = join(data, 'places/overture-places-boulder-3545.parquet');
const fsq = join(data, 'places/fsq-os-places-sample-10k-2024-11-19.parquet');
const dir = mkdtempSync(join(tmpdir(), 'leadatlas-parquet-rows-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Every row of every column of `path`, by the assembler and by hyparquet, group by group. */
async function bothWays(path: string): Promise<{ assembled: unknown[]; expected: unknown[]; groups: number }> {
  const file = await fileBuffer(path);
  try {
    const metadata = await parquetMetadataAsync(file);
    const columns = topLevelColumns(metadata);
    const assembler = rowAssembler(metadata, columns, { compressors, utf8: false });
    assert.ok(assembler, 'the schema is one the assembler builds');
    const assembled: unknown[] = [];
    for (const group of metadata.row_groups) assembled.push(...(await assembler.rows(file, group)));
    const expected = await parquetReadObjects({ file, metadata, columns, compressors, utf8: false });
    return { assembled, expected, groups: metadata.row_groups.length };
  } finally {
    await file.close();
  }
}

describe('assembling Parquet rows from their columns levels', () => {
  test('builds every row of the Overture sample as hyparquet does, every column', async () => {
    const { assembled, expected } = await bothWays(boulder);
    assert.equal(assembled.length, 3545);
    assert.deepEqual(assembled, expected);
  });

  test('builds every row of the Foursquare sample as hyparquet does, every column', async () => {
    const { assembled, expected } = await bothWays(fsq);
    assert.equal(assembled.length, 10_000);
    assert.deepEqual(assembled, expected);
  });

  test('gives absent structs, lists and maps as null, empty lists as [] and maps as objects, across pages and row groups', async () => {
    const { metadata, rows } = await readParquet(boulder);
    const edited = rows.map((r, i) => {
      const names = r.names as Record<string, unknown>;
      switch (i % 7) {
        case 0:
          return { ...r, names: { ...names, common: { en: `Place ${i}`, fr: `Lieu ${i}` } }, websites: [] };
        case 1:
          return { ...r, names: { ...names, common: {} }, addresses: null, taxonomy: null };
        case 2:
          return { ...r, addresses: [], sources: [], phones: null, brand: null };
        case 3:
          return { ...r, addresses: [{ freeform: null, locality: null, postcode: null, region: null, country: null }], bbox: null };
        case 4:
          return { ...r, taxonomy: { primary: 'cafe', hierarchy: [], alternates: null }, categories: null };
        default:
          return r;
      }
    });
    const path = join(dir, 'edge-cases.parquet');
    // Small pages and row groups: a column chunk spans several pages, and a file several row groups.
    writeParquetLike(path, metadata, edited, { rowGroupSize: 1000, pageSize: 4096 });
    const { assembled, expected, groups } = await bothWays(path);
    assert.equal(groups, 4);
    assert.equal(assembled.length, rows.length);
    assert.deepEqual(assembled, expected);
    const first = assembled[0] as { names: { common: unknown }; websites: unknown };
    assert.deepEqual(first.names.common, { en: 'Place 0', fr: 'Lieu 0' });
    assert.deepEqual(first.websites, []);
    assert.equal((assembled[1] as { addresses: unknown }).addresses, null);
  });

  test('leaves a schema with a shape it does not build to hyparquet', async () => {
    const { metadata } = await readParquet(boulder);
    // A repeated group without a LIST annotation (an old writer's list): hyparquet's reading, not this one.
    assert.equal(metadata.schema.filter((e) => e.name === 'taxonomy').length, 1);
    const schema = metadata.schema.map((e) => (e.name === 'taxonomy' ? { ...e, repetition_type: 'REPEATED' as const } : e));
    assert.equal(rowAssembler({ ...metadata, schema }, ['id', 'taxonomy'], { compressors }), null);
    assert.ok(rowAssembler({ ...metadata, schema }, ['id', 'names'], { compressors }));
  });
});
