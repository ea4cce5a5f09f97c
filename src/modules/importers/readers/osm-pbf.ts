import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { pipeline, Transform, type Readable } from 'node:stream';
import { AppError } from '../../../infra/errors.ts';
import type { OpenOptions, ReadResult, ReaderFactory, SourceReader } from '../importer.types.ts';
import { decodeBlock, PbfBlobs, type BlockVisitor, type RelationMember } from './osm-pbf-blocks.ts';
import { osmObjectToPlace, poiKeys } from './osm-tags.ts';

/** Objects with one of these keys are places of business (see `isPoi`); only they get their tags decoded. */
const wantedKeys: ReadonlySet<string> = new Set(poiKeys);
const NODE = 0;
const WAY = 1;

/** OSM stores coordinates in units of 1e-7 degrees; points are rounded back to that precision. */
const roundCoordinate = (degrees: number): number => Math.round(degrees * 1e7) / 1e7;

/**
 * Rows keyed by OSM id in typed arrays, looked up by binary search. PBF files are sorted by type then
 * id (osmium, Geofabrik and planet files declare `Sort.Type_then_ID`); an unsorted file is sorted once
 * on the first lookup after an out-of-order insert.
 */
class IdTable {
  private ids = new Float64Array(1 << 16);
  readonly columns: Float64Array[];
  length = 0;
  private sorted = true;

  constructor(columnCount: number) {
    this.columns = Array.from({ length: columnCount }, () => new Float64Array(1 << 16));
  }

  /** Adds a row; `a`, `b`, `c` fill the first columns (a fixed arity: rest parameters cost an array per call). */
  add(id: number, a: number, b: number, c = 0): void {
    if (this.length === this.ids.length) {
      const grow = (a: Float64Array) => {
        const b = new Float64Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.ids = grow(this.ids);
      for (let c = 0; c < this.columns.length; c++) this.columns[c] = grow(this.columns[c]!);
    }
    if (this.length > 0 && id <= this.ids[this.length - 1]!) this.sorted = false;
    this.ids[this.length] = id;
    const columns = this.columns;
    columns[0]![this.length] = a;
    columns[1]![this.length] = b;
    if (columns.length > 2) columns[2]![this.length] = c;
    this.length++;
  }

  /** Row index of `id`, or -1. */
  find(id: number): number {
    if (!this.sorted) this.sort();
    const ids = this.ids;
    let lo = 0;
    let hi = this.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = ids[mid]!;
      if (v < id) lo = mid + 1;
      else if (v > id) hi = mid - 1;
      else return mid;
    }
    return -1;
  }

  private sort(): void {
    const order = Array.from({ length: this.length }, (_, i) => i).sort((a, b) => this.ids[a]! - this.ids[b]!);
    const permute = (a: Float64Array) => {
      const b = new Float64Array(a.length);
      order.forEach((from, to) => (b[to] = a[from]!));
      return b;
    };
    this.ids = permute(this.ids);
    for (let c = 0; c < this.columns.length; c++) this.columns[c] = permute(this.columns[c]!);
    this.sorted = true;
  }
}

/** The file's bytes, counted as they pass (a transform, so flow control stays with the consumer). */
export function countedFileStream(path: string, onRead: (bytes: number) => void): Readable {
  return pipeline(
    createReadStream(path, { highWaterMark: 1 << 20 }),
    new Transform({
      transform(chunk: Buffer, _encoding, done) {
        onRead(chunk.length);
        done(null, chunk);
      },
    }),
    () => {},
  );
}

/** Running sum of vertices, so a way's or relation's point is the average of its located nodes. */
class PointSum {
  lat = 0;
  lon = 0;
  count = 0;

  addNode(nodes: IdTable, id: number): void {
    const i = nodes.find(id);
    if (i < 0) return;
    this.lat += nodes.columns[0]![i]!;
    this.lon += nodes.columns[1]![i]!;
    this.count++;
  }

  point(): { lat: number | null; lon: number | null } {
    if (this.count === 0) return { lat: null, lon: null };
    // toFixed rounds the exact binary value, as Python's round() does in the tool that wrote the NDJSON export.
    return { lat: Number((this.lat / this.count).toFixed(7)), lon: Number((this.lon / this.count).toFixed(7)) };
  }
}

/**
 * Locations for ways and relations need every node seen before them: node locations take 24 bytes per
 * node (id, lat, lon as doubles), ways 32 bytes per way (id, vertex sums, count), up to twice that while
 * the arrays grow by doubling. A country extract of 50 million nodes needs 1.2–2.4 GB; the extracts in
 * `shared/data` need under 20 MB.
 */
export class OsmPbfReader implements SourceReader {
  readonly format = 'osm-pbf';
  private consumed = 0;
  private nodes = new IdTable(2);
  private ways = new IdTable(3);

  constructor(
    private readonly path: string,
    readonly totalBytes: number,
    readonly source: string,
  ) {}

  bytesRead(): number {
    return this.consumed;
  }

  async *records(): AsyncIterable<ReadResult> {
    const file = countedFileStream(this.path, (n) => (this.consumed += n));
    const blobs = new PbfBlobs();
    const found: ReadResult[] = [];
    const visitor = this.visitor(found);
    try {
      for await (const chunk of file) {
        for (const block of blobs.push(chunk as Buffer)) {
          decodeBlock(block, wantedKeys, 'name', visitor);
          yield* found;
          found.length = 0;
        }
      }
      blobs.end();
    } catch (error) {
      // File-system errors (EACCES, EISDIR…) say what is wrong already; anything else is the data's fault.
      if (error instanceof Error && 'syscall' in error) throw error;
      throw new AppError('validation_failed', `${basename(this.path)} is not a readable .osm.pbf file (${error instanceof Error ? error.message : String(error)})`, {
        errors: [{ field: 'file', message: `broken or truncated OSM PBF data after ${this.consumed} bytes` }],
      });
    }
  }

  /** Keeps every node's and way's point for later ways and relations, and turns POIs into places in `out`. */
  private visitor(out: ReadResult[]): BlockVisitor {
    return {
      node: (id, lat, lon, tags) => {
        const rlat = roundCoordinate(lat);
        const rlon = roundCoordinate(lon);
        this.nodes.add(id, rlat, rlon);
        if (tags) out.push(osmObjectToPlace(`n${id}`, tags, rlat, rlon));
      },
      way: (id, refs, refCount, tags) => {
        const sum = new PointSum();
        for (let i = 0; i < refCount; i++) sum.addNode(this.nodes, refs[i]!);
        this.ways.add(id, sum.lat, sum.lon, sum.count);
        if (!tags) return;
        const p = sum.point();
        out.push(osmObjectToPlace(`w${id}`, tags, p.lat, p.lon));
      },
      relation: (id, members, tags) => {
        const p = this.relationPoint(members).point();
        // `type=multipolygon` describes how the relation is built, not the place (the NDJSON export drops it too).
        const { type: _structure, ...placeTags } = tags;
        out.push(osmObjectToPlace(`r${id}`, placeTags, p.lat, p.lon));
      },
    };
  }

  /**
   * Vertex average of the outer ways (the outer ring of a multipolygon); without outer ways, of all
   * member ways; without located ways, of the member nodes. Member relations are not followed.
   */
  private relationPoint(members: RelationMember[]): PointSum {
    const memberWays = members.filter((m) => m.type === WAY);
    const outer = memberWays.filter((m) => m.role === 'outer');
    const sum = new PointSum();
    for (const m of outer.length > 0 ? outer : memberWays) {
      const i = this.ways.find(m.ref);
      if (i < 0) continue;
      sum.lat += this.ways.columns[0]![i]!;
      sum.lon += this.ways.columns[1]![i]!;
      sum.count += this.ways.columns[2]![i]!;
    }
    if (sum.count === 0) {
      for (const m of members) if (m.type === NODE) sum.addNode(this.nodes, m.ref);
    }
    return sum;
  }
}

/** The PBF format starts with a BlobHeader whose type is `OSMHeader`. */
function looksLikePbf(head: Buffer): boolean {
  if (head.length < 20) return false;
  const headerLength = head.readUInt32BE(0);
  return headerLength > 0 && headerLength < 64 * 1024 && head.subarray(4, 4 + headerLength).includes('OSMHeader');
}

export const osmPbfReaderFactory: ReaderFactory = {
  format: 'osm-pbf',
  description: 'OpenStreetMap .osm.pbf: nodes, ways and relations tagged amenity/shop/craft/office/tourism/leisure/healthcare',
  detect: (_path, head) => looksLikePbf(head),
  async open(path: string, options: OpenOptions) {
    const { size } = await stat(path);
    return new OsmPbfReader(path, size, options.source ?? 'osm');
  },
};
