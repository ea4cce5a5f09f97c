import { createHash } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { PlaceFacts } from './engine.repository.ts';
import { columnsOf, type FactColumn, type FactColumns } from './fact-columns.ts';

/**
 * The index snapshot: the facts the in-memory index is built from (`placeFactsAfter`'s rows), at one places
 * version, in a file. A server starts from it instead of reading the whole catalog from the database, then
 * brings the index up to date from the change log like any running node. It holds facts, not bitmaps, so the
 * index is built by the same code whichever the source, and a fact added to `PlaceFacts` is carried without
 * a change here (its column's kind is read from the values).
 *
 * Layout: 8 bytes of magic, the header's length (uint32 LE), the header (JSON, validated by `HeaderSchema`),
 * then the body: one section per column, each at an 8-byte aligned offset. A number column is stored in the
 * narrowest of u8, i32 and f64 that holds every value, with a null mask when it has nulls; a text column as
 * i32 codes (-1: null) into a dictionary (a JSON array of strings). The body's SHA-256 is in the header.
 */
const MAGIC = Buffer.from('LASNAP01', 'latin1');
/** Bumped when the layout changes: a file of another format is rebuilt, never read. */
export const SNAPSHOT_FORMAT = 1;
/** Bounds checked before anything is allocated from a header's numbers. */
const MAX_HEADER_BYTES = 1 << 20;
const MAX_PLACES = 200_000_000;

const Section = Type.Object({ offset: Type.Integer({ minimum: 0 }), bytes: Type.Integer({ minimum: 0 }) });
const ColumnSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100 }),
  kind: Type.Union([Type.Literal('u8'), Type.Literal('i32'), Type.Literal('f64'), Type.Literal('text')]),
  values: Section,
  /** Number columns with nulls: one byte a place, 1 where null. */
  nulls: Type.Optional(Section),
  /** Text columns: the dictionary, a JSON array of strings. */
  dictionary: Type.Optional(Section),
});
const HeaderSchema = Type.Object({
  format: Type.Literal(SNAPSHOT_FORMAT),
  /** The places version the facts were read at. */
  version: Type.Integer({ minimum: 0 }),
  /** What produced the facts (`factsShape`): a snapshot of another query is stale. */
  shape: Type.String({ maxLength: 200 }),
  places: Type.Integer({ minimum: 0, maximum: MAX_PLACES }),
  columns: Type.Array(ColumnSchema, { maxItems: 200 }),
  bodyBytes: Type.Integer({ minimum: 0 }),
  sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
  writtenAt: Type.String(),
});
type Header = Static<typeof HeaderSchema>;
type Column = Static<typeof ColumnSchema>;

/** The snapshot as read: the version it holds the catalog at and every place's facts, by column. */
export interface SnapshotContents {
  version: number;
  facts: FactColumns;
  writtenAt: string;
}

export type SnapshotRead =
  | { ok: true; snapshot: SnapshotContents }
  | { ok: false; reason: 'missing' | 'corrupt' | 'stale'; detail: string };

/** What the snapshot must have been made by: the facts query's digest and its columns (`factsShape`). */
export interface FactsShape {
  digest: string;
  columns: readonly string[];
}

const align8 = (n: number) => (n + 7) & ~7;

/** Encodes every place's facts (columns, or rows of the same columns) at `version` into the snapshot's bytes. */
export function encodeSnapshot(version: number, shape: FactsShape, facts: FactColumns | readonly PlaceFacts[]): Buffer {
  const columns = Array.isArray(facts) ? columnsOf(facts as readonly PlaceFacts[], shape.columns) : (facts as FactColumns);
  const parts: Buffer[] = [];
  let body = 0;
  const put = (bytes: Uint8Array): { offset: number; bytes: number } => {
    const offset = body;
    parts.push(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    const padded = align8(bytes.byteLength);
    if (padded > bytes.byteLength) parts.push(Buffer.alloc(padded - bytes.byteLength));
    body += padded;
    return { offset, bytes: bytes.byteLength };
  };
  const asBytes = (a: Uint8Array | Int32Array | Float64Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const sections: Column[] = shape.columns.map((name) => {
    const column = columns.columns.get(name);
    if (!column) throw new Error(`snapshot: no column ${name}`);
    if (column.kind === 'text')
      return {
        name,
        kind: 'text',
        values: put(asBytes(column.codes)),
        dictionary: put(Buffer.from(JSON.stringify(column.dictionary), 'utf8')),
      };
    const section: Column = { name, kind: column.kind, values: put(asBytes(column.values)) };
    if (column.nulls) section.nulls = put(column.nulls);
    return section;
  });
  const bodyBuffer = Buffer.concat(parts, body);
  const header: Header = {
    format: SNAPSHOT_FORMAT,
    version,
    shape: shape.digest,
    places: columns.size,
    columns: sections,
    bodyBytes: body,
    sha256: createHash('sha256').update(bodyBuffer).digest('hex'),
    writtenAt: new Date().toISOString(),
  };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32LE(json.length);
  const start = align8(MAGIC.length + 4 + json.length);
  return Buffer.concat([MAGIC, length, json, Buffer.alloc(start - (MAGIC.length + 4 + json.length)), bodyBuffer]);
}

class Corrupt extends Error {}

/**
 * Decodes a snapshot's bytes: every bound checked before it is used (header length and schema, sections
 * within the body, lengths against the places, codes within their dictionary, the body's hash), so a cut or
 * altered file is refused as `corrupt` and never half-read. `stale`: made by another format or query.
 */
export function decodeSnapshot(file: Buffer, shape: FactsShape): SnapshotRead {
  try {
    return decode(file, shape);
  } catch (error) {
    if (error instanceof Corrupt) return { ok: false, reason: 'corrupt', detail: error.message };
    throw error;
  }
}

function decode(file: Buffer, shape: FactsShape): SnapshotRead {
  const check = (ok: boolean, what: string) => {
    if (!ok) throw new Corrupt(what);
  };
  check(file.length >= MAGIC.length + 4 && file.subarray(0, MAGIC.length).equals(MAGIC), 'not a snapshot file (magic)');
  const headerBytes = file.readUInt32LE(MAGIC.length);
  check(headerBytes <= MAX_HEADER_BYTES && MAGIC.length + 4 + headerBytes <= file.length, 'header length out of bounds');
  let parsed: unknown;
  try {
    parsed = JSON.parse(file.toString('utf8', MAGIC.length + 4, MAGIC.length + 4 + headerBytes));
  } catch {
    throw new Corrupt('header is not JSON');
  }
  if (typeof parsed === 'object' && parsed !== null && (parsed as { format?: unknown }).format !== SNAPSHOT_FORMAT)
    return { ok: false, reason: 'stale', detail: `format ${String((parsed as { format?: unknown }).format)}, not ${SNAPSHOT_FORMAT}` };
  check(Value.Check(HeaderSchema, parsed), 'header does not match its schema');
  const header = parsed as Header;
  const start = align8(MAGIC.length + 4 + headerBytes);
  check(file.length === start + header.bodyBytes, `file is ${file.length} bytes, its header says ${start + header.bodyBytes}`);
  const body = file.subarray(start);
  check(createHash('sha256').update(body).digest('hex') === header.sha256, 'body does not match its SHA-256');
  if (header.shape !== shape.digest) return { ok: false, reason: 'stale', detail: 'made by another facts query' };
  const names = header.columns.map((c) => c.name);
  if (names.join(',') !== shape.columns.join(','))
    return { ok: false, reason: 'stale', detail: `columns ${names.join(',')}, not ${shape.columns.join(',')}` };
  const n = header.places;
  const section = (s: { offset: number; bytes: number }, what: string): Buffer => {
    check(s.offset % 8 === 0 && s.offset + s.bytes <= body.length, `${what}: section out of bounds`);
    return body.subarray(s.offset, s.offset + s.bytes);
  };
  const columns = new Map<string, FactColumn>();
  for (const column of header.columns) {
    const raw = section(column.values, column.name);
    const width = column.kind === 'u8' ? 1 : column.kind === 'f64' ? 8 : 4;
    check(raw.length === n * width, `${column.name}: ${raw.length} bytes for ${n} places`);
    // The body starts 8-byte aligned in a fresh buffer (readFile), so typed views need no copy.
    const bytes = (raw.byteOffset & 7) === 0 ? raw : new Uint8Array(raw);
    if (column.kind === 'text') {
      check(column.dictionary !== undefined, `${column.name}: no dictionary`);
      let dictionary: unknown;
      try {
        dictionary = JSON.parse(section(column.dictionary!, column.name).toString('utf8'));
      } catch {
        throw new Corrupt(`${column.name}: dictionary is not JSON`);
      }
      check(Array.isArray(dictionary) && dictionary.every((s) => typeof s === 'string'), `${column.name}: dictionary is not strings`);
      const words = dictionary as string[];
      const codes = new Int32Array(bytes.buffer, bytes.byteOffset, n);
      for (let i = 0; i < n; i++) check(codes[i]! >= -1 && codes[i]! < words.length, `${column.name}: code out of its dictionary`);
      columns.set(column.name, { kind: 'text', codes, dictionary: words });
      continue;
    }
    const nulls = column.nulls ? section(column.nulls, column.name) : null;
    check(nulls === null || nulls.length === n, `${column.name}: null mask of ${nulls?.length} bytes for ${n} places`);
    const mask = nulls === null ? null : new Uint8Array(nulls.buffer, nulls.byteOffset, n);
    if (column.kind === 'u8')
      columns.set(column.name, { kind: 'u8', values: new Uint8Array(bytes.buffer, bytes.byteOffset, n), nulls: mask });
    else if (column.kind === 'i32')
      columns.set(column.name, { kind: 'i32', values: new Int32Array(bytes.buffer, bytes.byteOffset, n), nulls: mask });
    else columns.set(column.name, { kind: 'f64', values: new Float64Array(bytes.buffer, bytes.byteOffset, n), nulls: mask });
  }
  return {
    ok: true,
    snapshot: { version: header.version, facts: { size: n, names, columns }, writtenAt: header.writtenAt },
  };
}

/** Where the snapshot lives, and its bound: a larger file is refused before it is read. */
export class IndexSnapshotFile {
  constructor(
    readonly path: string,
    private readonly maxBytes: number = 16 * 1024 ** 3,
  ) {}

  /** Reads and checks the snapshot; `missing`, `corrupt` or `stale` say why there is none to start from. */
  async read(shape: FactsShape): Promise<SnapshotRead> {
    let size: number;
    try {
      size = (await stat(this.path)).size;
    } catch {
      return { ok: false, reason: 'missing', detail: this.path };
    }
    if (size > this.maxBytes) return { ok: false, reason: 'corrupt', detail: `${size} bytes, over the bound of ${this.maxBytes}` };
    return decodeSnapshot(await readFile(this.path), shape);
  }

  /**
   * Writes the snapshot whole or not at all: into a temporary file beside it (named by the process, as several
   * server processes may write at once), flushed to disk, then renamed over the old one, so a reader sees
   * either file entire and a crash leaves at most a temporary file.
   */
  async write(version: number, shape: FactsShape, facts: FactColumns): Promise<number> {
    const bytes = encodeSnapshot(version, shape, facts);
    await mkdir(dirname(this.path), { recursive: true });
    const temporary = `${this.path}.${process.pid}.tmp`;
    try {
      const handle = await open(temporary, 'w', 0o600);
      try {
        await handle.writeFile(bytes);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, this.path);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
    return bytes.length;
  }
}
