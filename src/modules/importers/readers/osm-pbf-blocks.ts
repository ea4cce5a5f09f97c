import { inflateSync } from 'node:zlib';

/**
 * A decoder for the parts of the OSM PBF format (https://wiki.openstreetmap.org/wiki/PBF_Format) the
 * importer needs. A generic protobuf decoder builds an object per node with its tags (121,000 nodes in
 * the merged test file, nearly all of them untagged way vertices) and decodes every string of every
 * block; this one hands each node's id and point to the caller as numbers, decodes a string the first
 * time a tag uses it, and builds a tag object only for objects with one of the wanted keys.
 */

/** One OSM object's tags, built only when it has one of the wanted keys. */
export type Tags = Record<string, string>;

/** What an object with a wanted key but without the required key gets instead of its tags. */
export const WITHOUT_REQUIRED_KEY: Readonly<Tags> = Object.freeze({});

export interface BlockVisitor {
  /** Every node, in file order; `tags` only when the node has a wanted key. Coordinates in degrees. */
  node(id: number, lat: number, lon: number, tags: Tags | undefined): void;
  /** Every way: node ids in `refs[0..refCount)` (the array is reused: read it before returning). */
  way(id: number, refs: Float64Array, refCount: number, tags: Tags | undefined): void;
  /** Relations with a wanted key only (nothing else needs them). Member types: 0 node, 1 way, 2 relation. */
  relation(id: number, members: RelationMember[], tags: Tags): void;
}

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

/** The uncompressed bytes of a Blob (raw or zlib; other compressions are rejected). */
function blobData(buf: Buffer, start: number, end: number): Buffer {
  const p = new Proto(buf, start, end);
  while (p.pos < end) {
    const tag = p.varint();
    const field = tag >>> 3;
    if ((field === 1 || field === 3) && (tag & 7) === 2) {
      const e = p.delimited();
      const bytes = buf.subarray(p.pos, e);
      return field === 1 ? bytes : inflateSync(bytes);
    }
    if (field >= 4 && field <= 7) fail('compression other than zlib is not supported');
    p.skip(tag & 7);
  }
  return fail('blob without data');
}

/**
 * Splits a PBF byte stream into its blocks: [4-byte length][BlobHeader][Blob], repeated. Feed it the
 * file's chunks in order; it returns the uncompressed OSMData blocks each chunk completes.
 */
export class PbfBlobs {
  private buffer: Buffer = Buffer.alloc(0);
  private header: { type: string; dataSize: number } | undefined;

  push(chunk: Buffer): Buffer[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const out: Buffer[] = [];
    let at = 0;
    for (;;) {
      if (!this.header) {
        if (this.buffer.length - at < 4) break;
        const headerLength = this.buffer.readUInt32BE(at);
        if (headerLength > 64 * 1024) fail('blob header longer than 64 KiB');
        if (this.buffer.length - at - 4 < headerLength) break;
        this.header = readBlobHeader(this.buffer, at + 4, at + 4 + headerLength);
        if (this.header.type !== 'OSMHeader' && this.header.type !== 'OSMData') fail(`unknown blob type ${this.header.type}`);
        at += 4 + headerLength;
      }
      const { type, dataSize } = this.header;
      if (this.buffer.length - at < dataSize) break;
      // OSMHeader says which features the file needs; the readers here handle what osmium and Geofabrik write.
      if (type === 'OSMData') out.push(blobData(this.buffer, at, at + dataSize));
      at += dataSize;
      this.header = undefined;
    }
    this.buffer = this.buffer.subarray(at);
    return out;
  }

  /** Throws when the stream ended inside a block. */
  end(): void {
    if (this.header || this.buffer.length > 0) fail('the file ends inside a block');
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
 * Decodes one uncompressed PrimitiveBlock, calling the visitor for each object. `wantedKeys` decides which
 * objects get their tags built (and which relations are reported at all); those without `requiredKey` get
 * WITHOUT_REQUIRED_KEY instead (half the POIs of an OSM file have no name and are skipped by the reader).
 */
export function decodeBlock(buf: Buffer, wantedKeys: ReadonlySet<string>, requiredKey: string, visit: BlockVisitor): void {
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

  // String table: offsets now, text on first use.
  const starts: number[] = [];
  const ends: number[] = [];
  for (p.pos = tableStart, p.end = tableEnd; p.pos < tableEnd; ) {
    const tag = p.varint();
    if (tag === 0x0a) {
      const e = p.delimited();
      starts.push(p.pos);
      ends.push(e);
      p.pos = e;
    } else p.skip(tag & 7);
  }
  const strings = new Array<string | undefined>(starts.length);
  const str = (i: number): string => {
    if (i >= starts.length) fail('string index outside the string table');
    return (strings[i] ??= buf.toString('utf8', starts[i]!, ends[i]!));
  };
  /** Per string id: 2 for the required key, 1 for a wanted key, 0 for others, undefined before its first use as a key. */
  const kinds = new Array<0 | 1 | 2 | undefined>(starts.length);
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
      const sub = new Proto(buf, p.pos, e);
      if (field === 2) denseNodes(sub);
      else if (field === 1) node(sub);
      else if (field === 3) way(sub);
      else relation(sub);
      p.pos = e;
    }
  }

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

  function denseNodes(q: Proto): void {
    let ids = -1, idsEnd = -1, lats = -1, latsEnd = -1, lons = -1, lonsEnd = -1, kv = -1, kvEnd = -1;
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
      visit.node(nodeId, latBase + lat / perDegree, lonBase + lon / perDegree, count > 0 ? tagsOf(count) : undefined);
    }
  }

  function node(q: Proto): void {
    let nodeId = 0, lat = 0, lon = 0, keyCount = 0, valCount = 0;
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
    visit.node(nodeId, latBase + lat / perDegree, lonBase + lon / perDegree, keyCount > 0 ? tagsOf(keyCount) : undefined);
  }

  function way(q: Proto): void {
    let wayId = 0, keyCount = 0, valCount = 0, refCount = 0;
    while (q.pos < q.end) {
      const tag = q.varint();
      if (tag === 0x08) wayId = q.varint();
      else if (tag === 0x12) keyCount = packedIds(q, 'keys');
      else if (tag === 0x1a) valCount = packedIds(q, 'vals');
      else if (tag === 0x42) {
        const e = q.delimited();
        let ref = 0;
        while (q.pos < e) (refs = grown(refs, refCount + 1))[refCount++] = ref += q.svarint();
      } else q.skip(tag & 7);
    }
    if (keyCount !== valCount) fail('way with unequal key and value counts');
    visit.way(wayId, refs, refCount, keyCount > 0 ? tagsOf(keyCount) : undefined);
  }

  function relation(q: Proto): void {
    let relationId = 0, keyCount = 0, valCount = 0;
    let roles = -1, rolesEnd = -1, memids = -1, memidsEnd = -1, types = -1, typesEnd = -1;
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
    visit.relation(relationId, members, tags);
  }
}
