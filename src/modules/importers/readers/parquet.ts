import { open } from 'node:fs/promises';
import { type AsyncBuffer, type FileMetaData, parquetMetadataAsync, parquetReadObjects, parquetSchema, type RowGroup } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { AppError } from '../../../infra/errors.ts';
import type { PlaceInput } from '../../places/place-input.ts';
import type { OpenOptions, ReadResult, SourceReader } from '../importer.types.ts';
import { rowAssembler } from './parquet-rows.ts';

/**
 * Parquet and GeoParquet, read with hyparquet (pure JavaScript, no native code, reads any byte range it is
 * given, so the same code reads a local file and a file on a web server through range requests) and
 * hyparquet-compressors (snappy, zstd, gzip, brotli, lz4). GeoParquet WKB geometry is decoded to GeoJSON by
 * hyparquet. See the importers README for the choice against a native engine.
 *
 * Rows are read one row group at a time, only the columns the dialect needs: memory is bounded by the largest
 * row group, not by the file. A row group whose column statistics show it lies outside `--bbox` or `--country`
 * is skipped without reading its pages.
 */

/** `PAR1` at the start (and end) of every Parquet file. */
export const isParquet = (head: Buffer): boolean => head.length >= 4 && head.toString('latin1', 0, 4) === 'PAR1';

/** An AsyncBuffer that counts the bytes it hands out. */
export interface CountingBuffer extends AsyncBuffer {
  bytesRead(): number;
  close(): Promise<void>;
}

/** A local file as an AsyncBuffer: each slice is one positioned read. */
export async function fileBuffer(path: string): Promise<CountingBuffer> {
  const handle = await open(path, 'r');
  const { size } = await handle.stat();
  let read = 0;
  return {
    byteLength: size,
    async slice(start, end = size) {
      const out = Buffer.allocUnsafeSlow(Math.max(0, end - start));
      let at = 0;
      while (at < out.length) {
        const { bytesRead } = await handle.read(out, at, out.length - at, start + at);
        if (bytesRead === 0) break;
        at += bytesRead;
      }
      read += at;
      return out.buffer.slice(0, at);
    },
    bytesRead: () => read,
    close: () => handle.close(),
  };
}

/**
 * The bytes of one row group's chosen columns, read in one request and served from memory: hyparquet asks for
 * each column chunk on its own, which over HTTP would be one request per column.
 */
async function prefetched(file: AsyncBuffer, start: number, end: number): Promise<AsyncBuffer> {
  const bytes = await file.slice(start, end);
  return {
    byteLength: file.byteLength,
    slice: (s, e = file.byteLength) => (s >= start && e <= end ? bytes.slice(s - start, e - start) : file.slice(s, e)),
  };
}

/** `--bbox`, `--country` and `--min-confidence`: what an import keeps of a file (Parquet readers only). */
export interface RowSelection {
  /** minLon, minLat, maxLon, maxLat. */
  bbox?: [number, number, number, number];
  /** ISO 3166-1 alpha-2, upper case. */
  country?: string;
  minConfidence?: number;
  /** Boxes (minLon, minLat, maxLon, maxLat): a place inside any of them. */
  areas?: Array<[number, number, number, number]>;
}

export const selectionOf = (options: OpenOptions): RowSelection => ({
  ...(options.bbox ? { bbox: options.bbox } : {}),
  ...(options.country ? { country: options.country.toUpperCase() } : {}),
  ...(options.minConfidence !== undefined ? { minConfidence: options.minConfidence } : {}),
  ...(options.areas ? { areas: options.areas } : {}),
});

type Box = [number, number, number, number];
const inBox = (b: Box, lon: number, lat: number): boolean => lon >= b[0] && lon <= b[2] && lat >= b[1] && lat <= b[3];

/**
 * Whether a place passes the selection (`confidence` is the source's, when it has one): null when it does,
 * else what to do with it: left out silently (`--bbox`, `--country`, `--min-confidence`: what the user asked
 * for), or counted as skipped `outside the border` when only a country's boxes (`areas`) leave it out.
 */
export function rejection(s: RowSelection, place: PlaceInput, confidence: number | null): 'silent' | 'outside the border' | null {
  if (s.minConfidence !== undefined && (confidence === null || confidence < s.minConfidence)) return 'silent';
  if (s.country !== undefined && place.countryCode?.toUpperCase() !== s.country) return 'silent';
  if (s.bbox || s.areas) {
    const { lat, lon } = place;
    if (typeof lat !== 'number' || typeof lon !== 'number') return 'silent';
    if (s.bbox && !inBox(s.bbox, lon, lat)) return 'silent';
    if (s.areas && !s.areas.some((b) => inBox(b, lon, lat))) return 'outside the border';
  }
  return null;
}

/** Column paths (`bbox.xmin`) whose row-group statistics say where a row group's places are. */
export interface StatisticsColumns {
  minLon?: string;
  maxLon?: string;
  minLat?: string;
  maxLat?: string;
  country?: string;
}

const statNumber = (v: unknown): number | null => (typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : null);
const statText = (v: unknown): string | null =>
  typeof v === 'string' ? v : v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : null;

/** False when the row group's statistics prove that no row of it can be selected. */
export function rowGroupMaySelect(group: RowGroup, columns: StatisticsColumns, s: RowSelection): boolean {
  const stats = (path: string | undefined) => {
    if (!path) return undefined;
    const chunk = group.columns.find((c) => c.meta_data?.path_in_schema.join('.') === path);
    const st = chunk?.meta_data?.statistics;
    return st ? { min: st.min_value ?? st.min, max: st.max_value ?? st.max } : undefined;
  };
  if (s.bbox || s.areas) {
    // The row group's box, each side unbounded where the statistics do not say.
    const group: Box = [
      statNumber(stats(columns.minLon)?.min) ?? -Infinity,
      statNumber(stats(columns.minLat)?.min) ?? -Infinity,
      statNumber(stats(columns.maxLon)?.max) ?? Infinity,
      statNumber(stats(columns.maxLat)?.max) ?? Infinity,
    ];
    const meets = (b: Box) => group[0] <= b[2] && b[0] <= group[2] && group[1] <= b[3] && b[1] <= group[3];
    if (s.bbox && !meets(s.bbox)) return false;
    if (s.areas && !s.areas.some(meets)) return false;
  }
  if (s.country) {
    const st = stats(columns.country);
    const low = statText(st?.min);
    const high = statText(st?.max);
    if (low !== null && high !== null && (s.country < low || s.country > high)) return false;
  }
  return true;
}

/** One Parquet layout (Overture, Foursquare, any table): the columns it reads and how a row becomes a place. */
export interface ParquetDialect {
  source: string;
  /** Top-level columns to read (missing ones are left out). */
  columns: string[];
  /** Nested columns inside those not to read, as path prefixes (`names.rules`): decoding them costs more than the rest. */
  skip?: string[];
  statistics: StatisticsColumns;
  toPlace(row: Record<string, unknown>): ReadResult;
  /** The row's confidence for `--min-confidence`; null when the source has none. */
  confidence?(row: Record<string, unknown>): number | null;
}

/**
 * The metadata without the leaf columns under `skip` (dotted `path_in_schema` prefixes) and the groups left
 * empty: hyparquet then neither reads nor assembles them.
 */
export function withoutColumns(metadata: FileMetaData, skip: string[]): FileMetaData {
  if (skip.length === 0) return metadata;
  const skipped = (path: string) => skip.some((p) => path === p || path.startsWith(`${p}.`));
  const schema: FileMetaData['schema'] = [];
  // Copies the element at `i` and its kept descendants; answers the index after its subtree and whether it was kept.
  const copy = (i: number, path: string): { next: number; kept: boolean } => {
    const element = metadata.schema[i]!;
    const children = element.num_children ?? 0;
    const here = path === '' ? element.name : `${path}.${element.name}`;
    if (children === 0) {
      if (skipped(here)) return { next: i + 1, kept: false };
      schema.push(element);
      return { next: i + 1, kept: true };
    }
    const at = schema.push({ ...element }) - 1;
    let next = i + 1;
    let kept = 0;
    for (let c = 0; c < children; c++) {
      const r = copy(next, here);
      next = r.next;
      if (r.kept) kept++;
    }
    if (kept === 0) {
      schema.length = at;
      return { next, kept: false };
    }
    schema[at] = { ...schema[at]!, num_children: kept };
    return { next, kept: true };
  };
  const root = metadata.schema[0]!;
  schema.push({ ...root });
  let next = 1;
  let kept = 0;
  for (let c = 0; c < (root.num_children ?? 0); c++) {
    const r = copy(next, '');
    next = r.next;
    if (r.kept) kept++;
  }
  schema[0] = { ...schema[0]!, num_children: kept };
  const row_groups = metadata.row_groups.map((g) => ({
    ...g,
    columns: g.columns.filter((c) => !c.meta_data || !skipped(c.meta_data.path_in_schema.join('.'))),
  }));
  return { ...metadata, schema, row_groups };
}

/** Top-level column names of a Parquet file. */
export const topLevelColumns = (metadata: FileMetaData): string[] => parquetSchema(metadata).children.map((c) => c.element.name);

/** Every leaf column path (`bbox.xmin`, `addresses.list.element.country`). */
const leafPaths = (metadata: FileMetaData): string[] =>
  (metadata.row_groups[0]?.columns ?? []).map((c) => c.meta_data?.path_in_schema.join('.') ?? '');

/** The first path among `candidates` that the file has, for row-group statistics. */
export function statisticsColumn(metadata: FileMetaData, candidates: string[]): string | undefined {
  const paths = new Set(leafPaths(metadata));
  return candidates.find((c) => paths.has(c));
}

/** Rows of a row group are read at most this many at a time when the row group has no nested columns. */
const ROWS_PER_READ = 100_000;

/**
 * Opens a Parquet file (already opened as a `CountingBuffer`) as a SourceReader of `dialect`'s places,
 * keeping only the rows of `selection`.
 */
export async function openParquetReader(
  file: CountingBuffer,
  format: string,
  options: OpenOptions,
  chooseDialect: (metadata: FileMetaData) => ParquetDialect,
): Promise<SourceReader> {
  let metadata: FileMetaData;
  try {
    // The footer is read from the end; most files' footers fit in the first 64 KiB read, larger ones take a second.
    metadata = await parquetMetadataAsync(file, { initialFetchSize: 1 << 16 });
  } catch (error) {
    await file.close();
    throw new AppError('validation_failed', `not a readable Parquet file: ${(error as Error).message}`, {
      errors: [{ field: 'file', message: 'the Parquet footer cannot be read' }],
    });
  }
  const dialect = chooseDialect(metadata);
  metadata = withoutColumns(metadata, dialect.skip ?? []);
  const selection = selectionOf(options);
  const present = new Set(topLevelColumns(metadata));
  const columns = dialect.columns.filter((c) => present.has(c));
  // utf8 off: text columns are annotated as such, and a bare byte array is WKB or another binary value.
  const assembler = rowAssembler(metadata, columns, { compressors, utf8: false });
  const outside: ReadResult = { ok: false, reason: 'outside the border' };
  /** The row's result as the selection leaves it: itself, skipped as outside the border, or nothing. */
  function* selected(result: ReadResult, row: Record<string, unknown>): Generator<ReadResult> {
    const rejected = result.ok ? rejection(selection, result.place, dialect.confidence?.(row) ?? null) : null;
    if (rejected === null) yield result;
    else if (rejected === 'outside the border') yield outside;
  }
  return {
    source: options.source ?? dialect.source,
    publisher: dialect.source,
    format,
    totalBytes: file.byteLength,
    totalRecords: Number(metadata.num_rows),
    // The footer is read first and the row groups after it: the count can pass the size by the footer's bytes.
    bytesRead: () => Math.min(file.bytesRead(), file.byteLength),
    async *records(): AsyncGenerator<ReadResult> {
      try {
        let groupStart = 0;
        for (const group of metadata.row_groups) {
          const rows = Number(group.num_rows);
          const start = groupStart;
          groupStart += rows;
          if (!rowGroupMaySelect(group, dialect.statistics, selection)) continue;
          const chunks = group.columns.filter((c) => c.meta_data && columns.includes(c.meta_data.path_in_schema[0]!));
          const offsets = chunks.map((c) => Number(c.meta_data!.dictionary_page_offset || c.meta_data!.data_page_offset));
          const ends = chunks.map((c, i) => offsets[i]! + Number(c.meta_data!.total_compressed_size));
          const groupFile = chunks.length > 0 ? await prefetched(file, Math.min(...offsets), Math.max(...ends)) : file;
          if (assembler) {
            for (const row of await assembler.rows(groupFile, group)) yield* selected(dialect.toPlace(row), row);
            continue;
          }
          // Nested columns are decoded whole for any row range of a row group: reading it in parts would decode them again.
          const step = chunks.some((c) => c.meta_data!.path_in_schema.length > 1) ? rows : ROWS_PER_READ;
          for (let from = start; from < start + rows; from += step) {
            const objects = await parquetReadObjects({
              file: groupFile,
              metadata,
              columns,
              compressors,
              utf8: false,
              rowStart: from,
              rowEnd: Math.min(from + step, start + rows),
            });
            for (const row of objects) yield* selected(dialect.toPlace(row), row);
          }
        }
      } finally {
        await file.close();
      }
    },
  };
}
