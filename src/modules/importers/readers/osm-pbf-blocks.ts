import { readSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { inflateSync } from 'node:zlib';

/**
 * A decoder for the parts of the OSM PBF format (https://wiki.openstreetmap.org/wiki/PBF_Format) the
 * importer needs. A generic protobuf decoder builds an object per node with its tags (121,000 nodes in
 * the merged test file, nearly all of them untagged way vertices) and decodes every string of every
 * block; this one hands each node's id and point to the caller as numbers, decodes a string the first
 * time a tag uses it, and builds a tag object only for objects with one of the wanted keys. The reader
 * goes over a file in several passes (see osm-pbf.ts): blobs are read by position, so that a pass reads
 * only the blobs it needs, and a pass decodes only the object types (and way node lists) it asks for.
 */

/** One OSM object's tags, built only when it has one of the wanted keys. */
export type Tags = Record<string, string>;

/** What an object with a wanted key but without the required key gets instead of its tags. */
export const WITHOUT_REQUIRED_KEY: Readonly<Tags> = Object.freeze({});

/**
 * What a pass over a block wants. A type whose method is absent is skipped without being decoded (its
 * group is still seen, so `decodeBlock` reports that the block holds that type).
 */
export interface BlockVisitor {
  /** Every node, in file order; `tags` only when the node has a wanted key. Coordinates in degrees. */
  node?(id: number, lat: number, lon: number, tags: Tags | undefined): void;
  /** Every way: node ids in `refs[0..refCount)` (the array is reused: read it before returning). */
  way?(id: number, refs: Float64Array, refCount: number, tags: Tags | undefined): void;
  /** Whether a way's node ids are needed; without this method, always. When false `way` gets refCount 0. */
  wayRefsWanted?(id: number, tags: Tags | undefined): boolean;
  /** Relations with a wanted key only (nothing else needs them). Member types: 0 node, 1 way, 2 relation. */
  relation?(id: number, members: RelationMember[], tags: Tags): void;
}

/** Bits of `decodeBlock`'s result: the object types a block holds. */
export const HAS_NODES = 1;
export const HAS_WAYS = 2;
export const HAS_RELATIONS = 4;

export interface RelationMember {
  type: 0 | 1 | 2;
  ref: number;
  role: string;
}

/** Thrown for bytes that do not decode as OSM PBF; the reader reports it as the file's fault. */
export class PbfFormatError extends Error {}

const fail = (message: string): never => {
  throw new PbfFormatError(message);
};

/** Protobuf wire-format reading over one buffer. Varints are read as doubles (OSM ids exceed 32 bits). */
class Proto {
  constructor(
    readonly buf: Buffer,
    public pos: number,
    public end: number,
  ) {}

  varint(): number {
    const buf = this.buf;
    let b = buf[this.pos++]!;
    if (b < 0x80) return b;
    let value = b & 0x7f;
    b = buf[this.pos++]!;
    value |= (b & 0x7f) << 7;
    if (b < 0x80) return value;
    b = buf[this.pos++]!;
    value |= (b & 0x7f) << 14;
    if (b < 0x80) return value;
    b = buf[this.pos++]!;
    value = (value | ((b & 0x7f) << 21)) >>> 0;
    if (b < 0x80) return value;
    // Bits 28 and up: multiplied in, as they overflow 32-bit integers.
    let scale = 0x10000000;
    for (let i = 0; i < 6; i++) {
      if (this.pos >= this.end) fail('varint runs past its message');
      b = buf[this.pos++]!;
      value += (b & 0x7f) * scale;
      if (b < 0x80) return value;
      scale *= 128;
    }
    return fail('varint longer than 10 bytes');
  }

  /** A signed int64 (two's complement in ten bytes when negative). */
  int64(): number {
    const n = this.varint();
    return n >= 2 ** 63 ? n - 2 ** 64 : n;
  }

  /** Zig-zag decoded (sint32/sint64). */
  svarint(): number {
    const n = this.varint();
    return n % 2 === 1 ? (n + 1) / -2 : n / 2;
  }

  /** A length-delimited field's end offset; the cursor is left at its start. */
  delimited(): number {
    const length = this.varint();
    const end = this.pos + length;
    if (end > this.end) fail('field runs past its message');
    return end;
  }

  skip(wireType: number): void {
    if (wireType === 0) this.varint();
    else if (wireType === 1) this.pos += 8;
    else if (wireType === 2) this.pos = this.delimited();
    else if (wireType === 5) this.pos += 4;
    else fail(`unsupported wire type ${wireType}`);
    if (this.pos > this.end) fail('field runs past its message');
  }
}

/** Fields of a BlobHeader or Blob, as offsets into the buffer. */
function readBlobHeader(buf: Buffer, start: number, end: number): { type: string; dataSize: number } {
  const p = new Proto(buf, start, end);
  let type = '';
  let dataSize = -1;
  while (p.pos < end) {
    const tag = p.varint();
    if (tag === 0x0a) {
      const e = p.delimited();
      type = buf.toString('utf8', p.pos, e);
      p.pos = e;
    } else if (tag === 0x18) dataSize = p.varint();
    else p.skip(tag & 7);
  }
  if (dataSize < 0) fail('blob header without a data size');
  return { type, dataSize };
}

/** A Blob message's data: raw, or zlib-compressed with its uncompressed size (other compressions are rejected). */
function blobPayload(blob: Buffer): { bytes: Buffer; zlib: boolean; rawSize: number } {
  const p = new Proto(blob, 0, blob.length);
  let rawSize = 0;
  while (p.pos < p.end) {
    const tag = p.varint();
    const field = tag >>> 3;
    if ((field === 1 || field === 3) && (tag & 7) === 2) {
      const e = p.delimited();
      return { bytes: blob.subarray(p.pos, e), zlib: field === 3, rawSize };
    }
    if (field === 2 && (tag & 7) === 0) rawSize = p.varint();
    else if (field >= 4 && field <= 7) fail('compression other than zlib is not supported');
    else p.skip(tag & 7);
  }
  return fail('blob without data');
}

/** zlib's output in one piece when the blob says how large it is (16 KiB pieces joined at the end otherwise). */
const inflateOptions = (rawSize: number) => (rawSize > 0 && rawSize <= 32 << 20 ? { chunkSize: Math.max(rawSize, 64) } : {});

/** The uncompressed bytes of a Blob message. */
export function inflateBlob(blob: Buffer): Buffer {
  const { bytes, zlib, rawSize } = blobPayload(blob);
  return zlib ? inflateSync(bytes, inflateOptions(rawSize)) : bytes;
}

/** Whether an OSMHeader block declares the file sorted by type, then id (`Sort.Type_then_ID`, as osmium and Geofabrik write). */
export function declaresTypeThenIdOrder(header: Buffer): boolean {
  const p = new Proto(header, 0, header.length);
  while (p.pos < p.end) {
    const tag = p.varint();
    if (tag === 0x2a) {
      const e = p.delimited();
      if (header.toString('utf8', p.pos, e) === 'Sort.Type_then_ID') return true;
      p.pos = e;
    } else p.skip(tag & 7);
  }
  return false;
}

/** Where a file stands in its replication feed, as Geofabrik and osmium write it in the header (OSMHeader fields 32–34). */
export interface PbfReplication {
  /** `osmosis_replication_sequence_number`: the last change file the extract includes. */
  sequence?: number;
  /** `osmosis_replication_base_url`: the feed (Geofabrik's `…-updates`). */
  baseUrl?: string;
  /** `osmosis_replication_timestamp`, in seconds since the epoch. */
  timestamp?: number;
}

/** The replication fields of an OSMHeader block. */
export function replicationOfHeader(header: Buffer): PbfReplication {
  const p = new Proto(header, 0, header.length);
  const out: PbfReplication = {};
  while (p.pos < p.end) {
    const tag = p.varint();
    const field = tag >>> 3;
    if (field === 32 && (tag & 7) === 0) out.timestamp = p.int64();
    else if (field === 33 && (tag & 7) === 0) out.sequence = p.int64();
    else if (field === 34 && (tag & 7) === 2) {
      const e = p.delimited();
      out.baseUrl = header.toString('utf8', p.pos, e);
      p.pos = e;
    } else p.skip(tag & 7);
  }
  return out;
}

/** One blob of a PBF file, its data still compressed. */
export interface RawBlob {
  type: 'OSMHeader' | 'OSMData';
  /** File offset of the blob's 4-byte length prefix. */
  offset: number;
  /** Bytes from the prefix to the end of the blob's data. */
  length: number;
  /** The Blob message (see `inflateBlob`): a view into a read buffer that is not reused. */
  blob: Buffer;
}

/**
 * Every blob's type, offset and length, from the blob headers alone: one small read per blob, the data
 * skipped (a 4 GB country file has ~60,000 blobs).
 */
export function scanBlobHeaders(fd: number, size: number, onBlob: (type: RawBlob['type'], offset: number, length: number) => void): void {
  let buffer = Buffer.allocUnsafe(256);
  for (let offset = 0; offset < size; ) {
    if (size - offset < 4) fail('the file ends inside a block');
    readSync(fd, buffer, 0, Math.min(buffer.length, size - offset), offset);
    const headerLength = buffer.readUInt32BE(0);
    if (headerLength > 64 * 1024) fail('blob header longer than 64 KiB');
    if (offset + 4 + headerLength > size) fail('the file ends inside a block');
    if (4 + headerLength > buffer.length) {
      buffer = Buffer.allocUnsafe(4 + headerLength);
      readSync(fd, buffer, 0, buffer.length, offset);
    }
    const { type, dataSize } = readBlobHeader(buffer, 4, 4 + headerLength);
    if (type !== 'OSMHeader' && type !== 'OSMData') fail(`unknown blob type ${type}`);
    const length = 4 + headerLength + dataSize;
    if (offset + length > size) fail('the file ends inside a block');
    onBlob(type as RawBlob['type'], offset, length);
    offset += length;
  }
}

/** Bytes read at a time: large enough for a few blobs (most are under 1 MiB compressed, none over 32 MiB). */
const READ_SIZE = 8 << 20;

/** `length` bytes of the file from `position`, or fewer at the end of the file. */
async function readAt(file: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await file.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled < length ? buffer.subarray(0, filled) : buffer;
}

/**
 * The blobs in the byte ranges `spans` of a PBF file (each `[start, end)` starts and ends on a blob
 * boundary; `[0, file size)` for the whole file), in order. A blob is [4-byte length][BlobHeader][Blob].
 * The next read is under way while the current one's blobs are handed out, so reading overlaps decoding.
 */
export async function* rawBlobs(file: FileHandle, spans: ReadonlyArray<readonly [number, number]>): AsyncGenerator<RawBlob> {
  for (const [start, end] of spans) {
    let nextAt = start;
    let next: Promise<Buffer> | undefined;
    const readNext = () => {
      const length = Math.min(READ_SIZE, end - nextAt);
      next = length > 0 ? readAt(file, nextAt, length) : undefined;
      nextAt += length;
    };
    readNext();
    /** File bytes from `at` on. */
    let data: Buffer = Buffer.alloc(0);
    let at = start;
    let pos = 0;
    for (;;) {
      const left = data.length - pos;
      if (left >= 4) {
        const headerLength = data.readUInt32BE(pos);
        if (headerLength > 64 * 1024) fail('blob header longer than 64 KiB');
        if (left >= 4 + headerLength) {
          const { type, dataSize } = readBlobHeader(data, pos + 4, pos + 4 + headerLength);
          if (type !== 'OSMHeader' && type !== 'OSMData') fail(`unknown blob type ${type}`);
          const dataStart = pos + 4 + headerLength;
          if (data.length - dataStart >= dataSize) {
            yield {
              type: type as RawBlob['type'],
              offset: at + pos,
              length: 4 + headerLength + dataSize,
              blob: data.subarray(dataStart, dataStart + dataSize),
            };
            pos = dataStart + dataSize;
            continue;
          }
        }
      }
      if (!next) {
        if (pos < data.length) fail('the file ends inside a block');
        break;
      }
      const chunk = await next;
      if (chunk.length === 0) fail('the file ends inside a block');
      readNext();
      data = pos < data.length ? Buffer.concat([data.subarray(pos), chunk]) : chunk;
      at += pos;
      pos = 0;
    }
  }
}

/** Growable numeric scratch arrays, reused across blocks. */
let refs = new Float64Array(2048);
let keyIds = new Int32Array(64);
let valIds = new Int32Array(64);

const grown = <T extends Float64Array | Int32Array>(a: T, need: number): T => {
  if (need <= a.length) return a;
  const b = new (a.constructor as new (n: number) => T)(Math.max(need, a.length * 2));
  b.set(a);
  return b;
};

/**
 * Decodes one uncompressed PrimitiveBlock, calling the visitor for each object of the types it asks for,
 * and returns the types the block holds (HAS_NODES | HAS_WAYS | HAS_RELATIONS). `wantedKeys` decides
 * which objects get their tags built (and which relations are reported at all); those without
 * `requiredKey` get WITHOUT_REQUIRED_KEY instead (half the POIs of an OSM file have no name and are
 * skipped by the reader).
 */
export function decodeBlock(buf: Buffer, wantedKeys: ReadonlySet<string>, requiredKey: string, visit: BlockVisitor): number {
  const p = new Proto(buf, 0, buf.length);
  let tableStart = -1;
  let tableEnd = -1;
  const groups: number[] = [];
  let granularity = 100;
  let latOffset = 0;
  let lonOffset = 0;
  while (p.pos < p.end) {
    const tag = p.varint();
    const field = tag >>> 3;
    if (field === 1 && (tag & 7) === 2) {
      tableEnd = p.delimited();
      tableStart = p.pos;
      p.pos = tableEnd;
    } else if (field === 2 && (tag & 7) === 2) {
      const e = p.delimited();
      groups.push(p.pos, e);
      p.pos = e;
    } else if (field === 17 && (tag & 7) === 0) granularity = p.varint();
    else if (field === 19 && (tag & 7) === 0) latOffset = p.int64();
    else if (field === 20 && (tag & 7) === 0) lonOffset = p.int64();
    else p.skip(tag & 7);
  }
  if (tableStart < 0) fail('block without a string table');

  // String table: offsets on the first look-up (a pass that skips the block's tagged objects never needs
  // it), text on each string's first use.
  let starts: number[] | undefined;
  const ends: number[] = [];
  const table = (): number[] => {
    if (starts) return starts;
    starts = [];
    const t = new Proto(buf, tableStart, tableEnd);
    while (t.pos < tableEnd) {
      const tag = t.varint();
      if (tag === 0x0a) {
        const e = t.delimited();
        starts.push(t.pos);
        ends.push(e);
        t.pos = e;
      } else t.skip(tag & 7);
    }
    return starts;
  };
  const strings: Array<string | undefined> = [];
  const str = (i: number): string => {
    const at = table();
    if (i >= at.length) fail('string index outside the string table');
    return (strings[i] ??= buf.toString('utf8', at[i]!, ends[i]!));
  };
  /** Per string id: 2 for the required key, 1 for a wanted key, 0 for others, undefined before its first use as a key. */
  const kinds: Array<0 | 1 | 2 | undefined> = [];
  const kindOf = (k: number): number => {
    const kind = kinds[k];
    if (kind !== undefined) return kind;
    const key = str(k);
    return (kinds[k] = key === requiredKey ? 2 : wantedKeys.has(key) ? 1 : 0);
  };
  const tagsOf = (count: number): Tags | undefined => {
    let wanted = false;
    let required = false;
    for (let t = 0; t < count; t++) {
      const kind = kindOf(keyIds[t]!);
      if (kind === 1) wanted = true;
      else if (kind === 2) required = true;
    }
    if (!wanted) return undefined;
    if (!required) return WITHOUT_REQUIRED_KEY;
    const tags: Tags = {};
    for (let t = 0; t < count; t++) tags[str(keyIds[t]!)] = str(valIds[t]!);
    return tags;
  };

  // As osm-pbf-parser-node computed them (offset in nanodegrees, granularity 100 → 1e7 units per degree).
  const perDegree = granularity === 100 || granularity === 0 ? 1e7 : 1e9 / granularity;
  const latBase = latOffset * 1e-9;
  const lonBase = lonOffset * 1e-9;

  let holds = 0;
  for (let g = 0; g < groups.length; g += 2) {
    const groupEnd = groups[g + 1]!;
    p.end = groupEnd;
    for (p.pos = groups[g]!; p.pos < groupEnd; ) {
      const tag = p.varint();
      const field = tag >>> 3;
      if ((tag & 7) !== 2 || field < 1 || field > 4) {
        p.skip(tag & 7);
        continue;
      }
      const e = p.delimited();
      if (field <= 2) {
        holds |= HAS_NODES;
        if (visit.node && field === 2) denseNodes(new Proto(buf, p.pos, e), visit.node);
        else if (visit.node) node(new Proto(buf, p.pos, e), visit.node);
      } else if (field === 3) {
        holds |= HAS_WAYS;
        if (visit.way) way(new Proto(buf, p.pos, e), visit.way);
      } else {
        holds |= HAS_RELATIONS;
        if (visit.relation) relation(new Proto(buf, p.pos, e), visit.relation);
      }
      p.pos = e;
    }
  }
  return holds;

  /** Reads a packed uint32 field into keyIds or valIds. */
  function packedIds(q: Proto, into: 'keys' | 'vals'): number {
    const e = q.delimited();
    let n = 0;
    while (q.pos < e) {
      if (into === 'keys') (keyIds = grown(keyIds, n + 1))[n++] = q.varint();
      else (valIds = grown(valIds, n + 1))[n++] = q.varint();
    }
    return n;
  }

  function denseNodes(q: Proto, onNode: NonNullable<BlockVisitor['node']>): void {
    let ids = -1,
      idsEnd = -1,
      lats = -1,
      latsEnd = -1,
      lons = -1,
      lonsEnd = -1,
      kv = -1,
      kvEnd = -1;
    while (q.pos < q.end) {
      const tag = q.varint();
      const field = tag >>> 3;
      if ((tag & 7) !== 2 || (field !== 1 && field !== 8 && field !== 9 && field !== 10)) {
        q.skip(tag & 7);
        continue;
      }
      const e = q.delimited();
      if (field === 1) [ids, idsEnd] = [q.pos, e];
      else if (field === 8) [lats, latsEnd] = [q.pos, e];
      else if (field === 9) [lons, lonsEnd] = [q.pos, e];
      else [kv, kvEnd] = [q.pos, e];
      q.pos = e;
    }
    if (ids < 0) return;
    const id = new Proto(buf, ids, idsEnd);
    const la = new Proto(buf, lats, latsEnd);
    const lo = new Proto(buf, lons, lonsEnd);
    const tags = kv >= 0 ? new Proto(buf, kv, kvEnd) : undefined;
    let nodeId = 0;
    let lat = 0;
    let lon = 0;
    while (id.pos < idsEnd) {
      if (la.pos >= latsEnd || lo.pos >= lonsEnd) fail('dense nodes with fewer coordinates than ids');
      nodeId += id.svarint();
      lat += la.svarint();
      lon += lo.svarint();
      let count = 0;
      if (tags && tags.pos < kvEnd) {
        for (let k = tags.varint(); k !== 0; k = tags.varint()) {
          if (tags.pos >= kvEnd) fail('dense node tags run past their field');
          (keyIds = grown(keyIds, count + 1))[count] = k;
          (valIds = grown(valIds, count + 1))[count++] = tags.varint();
        }
      }
      onNode(nodeId, latBase + lat / perDegree, lonBase + lon / perDegree, count > 0 ? tagsOf(count) : undefined);
    }
  }

  function node(q: Proto, onNode: NonNullable<BlockVisitor['node']>): void {
    let nodeId = 0,
      lat = 0,
      lon = 0,
      keyCount = 0,
      valCount = 0;
    while (q.pos < q.end) {
      const tag = q.varint();
      if (tag === 0x08) nodeId = q.svarint();
      else if (tag === 0x12) keyCount = packedIds(q, 'keys');
      else if (tag === 0x1a) valCount = packedIds(q, 'vals');
      else if (tag === 0x40) lat = q.svarint();
      else if (tag === 0x48) lon = q.svarint();
      else q.skip(tag & 7);
    }
    if (keyCount !== valCount) fail('node with unequal key and value counts');
    onNode(nodeId, latBase + lat / perDegree, lonBase + lon / perDegree, keyCount > 0 ? tagsOf(keyCount) : undefined);
  }

  function way(q: Proto, onWay: NonNullable<BlockVisitor['way']>): void {
    let wayId = 0,
      keyCount = 0,
      valCount = 0,
      refsStart = -1,
      refsEnd = -1;
    while (q.pos < q.end) {
      const tag = q.varint();
      if (tag === 0x08) wayId = q.varint();
      else if (tag === 0x12) keyCount = packedIds(q, 'keys');
      else if (tag === 0x1a) valCount = packedIds(q, 'vals');
      else if (tag === 0x42) {
        refsEnd = q.delimited();
        refsStart = q.pos;
        q.pos = refsEnd;
      } else q.skip(tag & 7);
    }
    if (keyCount !== valCount) fail('way with unequal key and value counts');
    const tags = keyCount > 0 ? tagsOf(keyCount) : undefined;
    // Most passes need the node ids of a few ways only: the others' delta-coded ids are left undecoded.
    let refCount = 0;
    if (refsStart >= 0 && (!visit.wayRefsWanted || visit.wayRefsWanted(wayId, tags))) {
      const r = new Proto(buf, refsStart, refsEnd);
      let ref = 0;
      while (r.pos < refsEnd) (refs = grown(refs, refCount + 1))[refCount++] = ref += r.svarint();
    }
    onWay(wayId, refs, refCount, tags);
  }

  function relation(q: Proto, onRelation: NonNullable<BlockVisitor['relation']>): void {
    let relationId = 0,
      keyCount = 0,
      valCount = 0;
    let roles = -1,
      rolesEnd = -1,
      memids = -1,
      memidsEnd = -1,
      types = -1,
      typesEnd = -1;
    while (q.pos < q.end) {
      const tag = q.varint();
      if (tag === 0x08) relationId = q.varint();
      else if (tag === 0x12) keyCount = packedIds(q, 'keys');
      else if (tag === 0x1a) valCount = packedIds(q, 'vals');
      else if (tag === 0x42 || tag === 0x4a || tag === 0x52) {
        const e = q.delimited();
        if (tag === 0x42) [roles, rolesEnd] = [q.pos, e];
        else if (tag === 0x4a) [memids, memidsEnd] = [q.pos, e];
        else [types, typesEnd] = [q.pos, e];
        q.pos = e;
      } else q.skip(tag & 7);
    }
    if (keyCount !== valCount) fail('relation with unequal key and value counts');
    const tags = keyCount > 0 ? tagsOf(keyCount) : undefined;
    if (!tags) return;
    const members: RelationMember[] = [];
    if (memids >= 0) {
      const r = new Proto(buf, roles, rolesEnd);
      const m = new Proto(buf, memids, memidsEnd);
      const t = new Proto(buf, types, typesEnd);
      let ref = 0;
      while (m.pos < memidsEnd) {
        if (r.pos >= rolesEnd || t.pos >= typesEnd) fail('relation with fewer roles or types than members');
        ref += m.svarint();
        const type = t.varint();
        if (type > 2) fail(`unknown relation member type ${type}`);
        members.push({ type: type as 0 | 1 | 2, ref, role: str(r.varint()) });
      }
    }
    onRelation(relationId, members, tags);
  }
}
