import { type FileMetaData, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { parquetWriteFile } from 'hyparquet-writer';
import { fileBuffer } from '../../src/modules/importers/readers/parquet.ts';

type Row = Record<string, unknown>;

/** A GeoJSON point as little-endian WKB, the GeoParquet encoding hyparquet decoded it from. */
function pointWkb(g: unknown): Uint8Array | null {
  const c = (g as { type?: string; coordinates?: number[] } | null)?.coordinates;
  if (!c) return null;
  const out = new DataView(new ArrayBuffer(21));
  out.setUint8(0, 1);
  out.setUint32(1, 1, true);
  out.setFloat64(5, c[0]!, true);
  out.setFloat64(13, c[1]!, true);
  return new Uint8Array(out.buffer);
}

/** The rows and metadata of a real Parquet file, all of it in memory (test data only). */
export async function readParquet(path: string): Promise<{ metadata: FileMetaData; rows: Row[] }> {
  const file = await fileBuffer(path);
  try {
    const metadata = await parquetMetadataAsync(file);
    return { metadata, rows: await parquetReadObjects({ file, metadata, compressors }) };
  } finally {
    await file.close();
  }
}

/**
 * Writes `rows` with the schema, row-group size, codec and key-value metadata (GeoParquet's `geo`) of `like`, each top-level
 * column of `drop` left out: a copy of a real file as its publisher would have written the changed rows.
 */
export function writeParquetLike(
  path: string,
  like: FileMetaData,
  rows: Row[],
  options: { drop?: string[]; rowGroupSize?: number; pageSize?: number } = {},
): void {
  const drop = new Set(options.drop ?? []);
  // The schema is flat in the footer: a top-level element and its descendants (num_children) form one column.
  const schema: FileMetaData['schema'] = [{ ...like.schema[0]!, num_children: 0 }];
  const columns: string[] = [];
  for (let i = 1; i < like.schema.length; ) {
    let end = i + 1;
    for (let pending = like.schema[i]!.num_children ?? 0; pending > 0; pending--, end++) pending += like.schema[end]!.num_children ?? 0;
    if (!drop.has(like.schema[i]!.name)) {
      schema.push(...like.schema.slice(i, end));
      columns.push(like.schema[i]!.name);
    }
    i = end;
  }
  schema[0]!.num_children = columns.length;
  // The writer compresses with snappy only (Node 20 has no zstd): a zstd file's copy is written with snappy.
  const codec = like.row_groups[0]?.columns[0]?.meta_data?.codec === 'UNCOMPRESSED' ? 'UNCOMPRESSED' : 'SNAPPY';
  parquetWriteFile({
    filename: path,
    schema: schema as never,
    codec,
    kvMetadata: (like.key_value_metadata ?? []).filter((kv) => kv.key !== 'ARROW:schema'),
    rowGroupSize: options.rowGroupSize ?? Number(like.row_groups.at(-1)?.num_rows ?? 100_000),
    ...(options.pageSize ? { pageSize: options.pageSize } : {}),
    // A GEOMETRY column takes GeoJSON (the writer encodes it); a bare byte array takes the WKB itself.
    columnData: columns.map((name) => {
      const geometry = schema.find((e) => e.name === name)?.logical_type?.type === 'GEOMETRY';
      const binary = !geometry && (name === 'geometry' || name === 'geom');
      return { name, data: rows.map((r) => (binary ? pointWkb(r[name]) : r[name])) as never };
    }),
  });
}
