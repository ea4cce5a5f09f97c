import { createReadStream } from 'node:fs';
import { type FileHandle, open, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { pipeline, type Readable, Transform } from 'node:stream';
import { AppError } from '../../../infra/errors.ts';
import type { OpenOptions, ReaderFactory, ReadResult, SourceReader } from '../importer.types.ts';
import { appendWay, emptyWayRows, type WayRows } from '../osm-geometry.ts';
import {
  type BlockVisitor,
  declaresTypeThenIdOrder,
  decodeBlock,
  HAS_NODES,
  HAS_RELATIONS,
  HAS_WAYS,
  inflateBlob,
  PbfFormatError,
  type PbfReplication,
  type RawBlob,
  type RelationMember,
  rawBlobs,
  replicationOfHeader,
  scanBlobHeaders,
  type Tags,
} from './osm-pbf-blocks.ts';
import { IdSetBuilder, NodeLocations, PointSum, WaySums } from './osm-pbf-locations.ts';
import { osmObjectToPlace, placeName, poiKeys } from './osm-tags.ts';

/** Objects with one of these keys are places of business (see `isPoi`); only they get their tags decoded. */
const wantedKeys: ReadonlySet<string> = new Set(poiKeys);
const NODE = 0;
const WAY = 1;

/** OSM stores coordinates in units of 1e-7 degrees; points are rounded back to that precision. */
const roundCoordinate = (degrees: number): number => Math.round(degrees * 1e7) / 1e7;

/** Whether an object with a wanted key becomes a place, so that its point is worth computing. */
const becomesPlace = (tags: Tags | undefined): boolean => tags !== undefined && placeName(tags) !== undefined;

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

/** Byte ranges `[start, end)` of a file. */
type Spans = Array<[number, number]>;

/**
 * Where each blob of the file is and what it holds (HAS_NODES…; 0 for the header and for blobs not
 * looked into yet), so that a pass reads only the blobs it needs. 33 bytes a blob (a blob holds about
 * 8,000 objects).
 */
class BlobIndex {
  length = 0;
  private offsets = new Float64Array(1024);
  private sizes = new Float64Array(1024);
  private holds = new Uint8Array(1024);
  private minWays = new Float64Array(1024);
  private maxWays = new Float64Array(1024);

  add(offset: number, size: number, holds: number, minWay = Infinity, maxWay = -Infinity): void {
    if (this.length === this.offsets.length) {
      const grow = <T extends Float64Array | Uint8Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(a.length * 2);
        b.set(a);
        return b;
      };
      this.offsets = grow(this.offsets);
      this.sizes = grow(this.sizes);
      this.holds = grow(this.holds);
      this.minWays = grow(this.minWays);
      this.maxWays = grow(this.maxWays);
    }
    const i = this.length++;
    this.offsets[i] = offset;
    this.sizes[i] = size;
    this.holds[i] = holds;
    this.minWays[i] = minWay;
    this.maxWays[i] = maxWay;
  }

  setHolds(i: number, holds: number): void {
    this.holds[i] = holds;
  }

  /** Blob `i`'s bytes as one span. */
  span(i: number): Spans {
    return [[this.offsets[i]!, this.offsets[i]! + this.sizes[i]!]];
  }

  /** The blobs holding objects of type `kind` (HAS_NODES…), as byte ranges with adjacent blobs joined. */
  spans(kind: number, where: (minWay: number, maxWay: number) => boolean = () => true): { spans: Spans; bytes: number } {
    const spans: Spans = [];
    let bytes = 0;
    for (let i = 0; i < this.length; i++) {
      if ((this.holds[i]! & kind) === 0 || !where(this.minWays[i]!, this.maxWays[i]!)) continue;
      const start = this.offsets[i]!;
      const end = start + this.sizes[i]!;
      bytes += end - start;
      const last = spans.at(-1);
      if (last && last[1] === start) last[1] = end;
      else spans.push([start, end]);
    }
    return { spans, bytes };
  }
}

/** What the places need located: the node ids and member way ids gathered by the first passes. */
class Wanted {
  readonly nodes = new IdSetBuilder();
  readonly ways = new IdSetBuilder();

  /** Gathers the node ids of the ways that become places, and the members of the relations that do. */
  readonly visitor = {
    wayRefsWanted: (_id: number, tags: Tags | undefined) => becomesPlace(tags),
    way: (_id: number, refs: Float64Array, refCount: number) => this.addNodes(refs, refCount),
    relation: (_id: number, members: RelationMember[], tags: Tags) => {
      if (!becomesPlace(tags)) return;
      for (const m of members) {
        if (m.type === WAY) this.ways.add(m.ref);
        else if (m.type === NODE) this.nodes.add(m.ref);
      }
    },
  };

  addNodes(refs: Float64Array, refCount: number): void {
    for (let i = 0; i < refCount; i++) this.nodes.add(refs[i]!);
  }
}

/**
 * Reads an `.osm.pbf` file in passes, so that memory depends on the places' geometry and not on the
 * size of the file (docs/importing-osm.md, "Memory"). First the ids of what the places need: the nodes of
 * the ways that become places, the member ways and nodes of the relations that become places, and the
 * nodes of those member ways. Then the places, in file order: nodes (the wanted nodes' points are kept),
 * ways (the member ways' vertex sums are kept), relations.
 *
 * A file that declares itself sorted by type then id (`Sort.Type_then_ID`, as Geofabrik's and the
 * planet's do) holds its nodes, then its ways, then its relations: the relations are read first, then the
 * ways, each blob once, and the node blobs only for the places. Any other file is read whole first, then
 * the blobs holding the member ways again.
 *
 * Places come out of the last pass only, so a file that turns out broken fails before the first place.
 */
export class OsmPbfReader implements SourceReader {
  readonly format = 'osm-pbf';
  readonly publisher = 'osm';
  /** Bytes the passes have read, and the bytes they will read in all (an estimate until it is known). */
  private passed = 0;
  private planned: number;
  private reported = 0;
  /** What the places needed located, once the first passes are done (see the memory formula in the docs). */
  gathered: { nodes: number; memberWays: number; blobs: number; sorted: boolean } | undefined;

  constructor(
    private readonly path: string,
    readonly totalBytes: number,
    readonly source: string,
  ) {
    this.planned = 2 * totalBytes;
  }

  /**
   * The ways read since the last call that are places or members of relations that are, with their
   * nodes' points: the catalog keeps them so that a change file can place what it touches (migration 0023).
   */
  takeWays(): WayRows | undefined {
    if (this.wayRows.count === 0) return undefined;
    const taken = this.wayRows;
    this.wayRows = emptyWayRows();
    return taken;
  }

  private wayRows = emptyWayRows();

  private keepWay(id: number, tags: Tags | undefined, refs: Float64Array, refCount: number, nodes: NodeLocations): void {
    appendWay(this.wayRows, id, tags ? JSON.stringify(tags) : null, refs, refCount, (ref) => {
      const p = nodes.pointOf(ref);
      return p && { lat: p[0] / 1e7, lon: p[1] / 1e7 };
    });
  }

  /** The passes' progress, scaled to the file's size (which is where it ends). */
  bytesRead(): number {
    const now = this.planned === 0 ? this.totalBytes : Math.floor((this.totalBytes * this.passed) / this.planned);
    this.reported = Math.max(this.reported, Math.min(now, this.totalBytes));
    return this.reported;
  }

  async *records(): AsyncIterable<ReadResult> {
    const file = await open(this.path, 'r');
    try {
      const sorted = await this.sortedLayout(file);
      const { index, ways, nodes } = sorted ? await this.gatherSorted(file, sorted) : await this.gatherAnyOrder(file);
      this.gathered = { nodes: nodes.size, memberWays: ways.size, blobs: index.length, sorted: sorted !== undefined };
      yield* this.places(file, index, ways, nodes, sorted !== undefined);
    } catch (error) {
      // File-system errors (EACCES, EISDIR…) say what is wrong already; anything else is the data's fault.
      if (error instanceof Error && 'syscall' in error) throw error;
      const why = error instanceof Error ? error.message : String(error);
      throw new AppError('validation_failed', `${basename(this.path)} is not a readable .osm.pbf file (${why})`, {
        errors: [{ field: 'file', message: `broken, truncated or mislabelled OSM PBF data: ${why}` }],
      });
    } finally {
      await file.close();
    }
  }

  /** Each data blob of `spans`, inflated, with the bytes it took counted as read. */
  private async *blocks(file: FileHandle, spans: Spans): AsyncGenerator<{ raw: RawBlob; block: Buffer }> {
    for await (const raw of rawBlobs(file, spans)) {
      const block = raw.type === 'OSMData' ? inflateBlob(raw.blob) : undefined;
      this.passed += raw.length;
      if (block) yield { raw, block };
    }
  }

  /** Decodes every blob of `spans`; with `only`, fails on a blob that holds other types than `only`. */
  private async decodeAll(file: FileHandle, spans: Spans, visitor: BlockVisitor, only?: number): Promise<void> {
    for await (const { block } of this.blocks(file, spans)) checkHolds(decodeBlock(block, wantedKeys, 'name', visitor), only);
  }

  /**
   * For a file whose header declares it sorted by type then id: the blob index from the blob headers, and
   * where the ways and the relations start (a binary search that inflates a dozen blobs or so).
   */
  private async sortedLayout(file: FileHandle): Promise<BlobIndex | undefined> {
    // The header blob is first and small; a file too short for it is reported by the other path's full read.
    const blobs = rawBlobs(file, [[0, Math.min(this.totalBytes, 64 * 1024 + 4)]]);
    const first = await blobs.next().catch(() => undefined);
    await blobs.return(undefined);
    const head = first?.done === false ? first.value : undefined;
    if (head?.type !== 'OSMHeader' || !declaresTypeThenIdOrder(inflateBlob(head.blob))) return undefined;
    const index = new BlobIndex();
    scanBlobHeaders(file.fd, this.totalBytes, (type, offset, length) => index.add(offset, length, type === 'OSMData' ? HAS_NODES : 0));
    const data = index.length - 1;
    const holds = async (i: number) => {
      let found = 0;
      for await (const { block } of rawBlocks(file, index.span(i))) found |= decodeBlock(block, wantedKeys, 'name', {});
      return found;
    };
    // The first data blob (index 1 and on) holding something other than nodes, then relations.
    const firstHolding = async (from: number, kinds: number) => {
      let lo = from;
      let hi = data + 1;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((await holds(mid)) & kinds) hi = mid;
        else lo = mid + 1;
      }
      return lo;
    };
    const firstWay = await firstHolding(1, HAS_WAYS | HAS_RELATIONS);
    const firstRelation = await firstHolding(firstWay, HAS_RELATIONS);
    for (let i = firstWay; i <= data; i++) index.setHolds(i, i < firstRelation ? HAS_WAYS : HAS_RELATIONS);
    return index;
  }

  /** Sorted file: the relations' blobs, then the ways' (the member ways' nodes with the others'). */
  private async gatherSorted(file: FileHandle, index: BlobIndex): Promise<{ index: BlobIndex; ways: WaySums; nodes: NodeLocations }> {
    const wanted = new Wanted();
    const relationBlobs = index.spans(HAS_RELATIONS);
    const wayBlobs = index.spans(HAS_WAYS);
    this.planned = relationBlobs.bytes + wayBlobs.bytes + this.placeBytes(index);
    await this.decodeAll(file, relationBlobs.spans, { relation: wanted.visitor.relation }, HAS_RELATIONS);
    const ways = new WaySums(wanted.ways.finish());
    await this.decodeAll(
      file,
      wayBlobs.spans,
      {
        wayRefsWanted: (id, tags) => ways.wants(id) || becomesPlace(tags),
        way: (_id, refs, refCount) => wanted.addNodes(refs, refCount),
      },
      HAS_WAYS,
    );
    ways.rewind();
    return { index, ways, nodes: new NodeLocations(wanted.nodes.finish()) };
  }

  /** Any order: every blob (and the index from it), then the blobs whose way ids span a member way. */
  private async gatherAnyOrder(file: FileHandle): Promise<{ index: BlobIndex; ways: WaySums; nodes: NodeLocations }> {
    const wanted = new Wanted();
    const index = new BlobIndex();
    let minWay = Infinity;
    let maxWay = -Infinity;
    const gather: BlockVisitor = {
      ...wanted.visitor,
      way: (id, refs, refCount) => {
        if (id < minWay) minWay = id;
        if (id > maxWay) maxWay = id;
        wanted.addNodes(refs, refCount);
      },
    };
    for await (const { raw, block } of this.blocks(file, [[0, this.totalBytes]])) {
      minWay = Infinity;
      maxWay = -Infinity;
      index.add(raw.offset, raw.length, decodeBlock(block, wantedKeys, 'name', gather), minWay, maxWay);
    }
    const ways = new WaySums(wanted.ways.finish());
    const memberWayBlobs = index.spans(HAS_WAYS, (min, max) => ways.anyWithin(min, max));
    this.planned = this.passed + memberWayBlobs.bytes + this.placeBytes(index);
    if (ways.size > 0) {
      await this.decodeAll(file, memberWayBlobs.spans, {
        wayRefsWanted: (id) => ways.wants(id),
        way: (_id, refs, refCount) => wanted.addNodes(refs, refCount),
      });
      ways.rewind();
    }
    return { index, ways, nodes: new NodeLocations(wanted.nodes.finish()) };
  }

  /** Bytes the last pass reads. */
  private placeBytes(index: BlobIndex): number {
    return index.spans(HAS_NODES).bytes + index.spans(HAS_WAYS).bytes + index.spans(HAS_RELATIONS).bytes;
  }

  /** The last pass: nodes, then ways, then relations become places. */
  private async *places(
    file: FileHandle,
    index: BlobIndex,
    ways: WaySums,
    nodes: NodeLocations,
    sorted: boolean,
  ): AsyncGenerator<ReadResult> {
    const out: ReadResult[] = [];
    let member = -1;
    const passes: Array<[number, BlockVisitor]> = [
      [
        HAS_NODES,
        {
          node: (id, lat, lon, tags) => {
            nodes.offer(id, lat, lon);
            if (tags) out.push(osmObjectToPlace(`n${id}`, tags, roundCoordinate(lat), roundCoordinate(lon)));
          },
        },
      ],
      [
        HAS_WAYS,
        {
          wayRefsWanted: (id, tags) => {
            member = ways.indexOfNext(id);
            return member >= 0 || becomesPlace(tags);
          },
          way: (id, refs, refCount, tags) => {
            if (refCount === 0 && !tags) return;
            const sum = new PointSum();
            for (let i = 0; i < refCount; i++) nodes.addTo(sum, refs[i]!);
            if (refCount > 0 && member >= 0) ways.keep(member, sum);
            const place = tags !== undefined && becomesPlace(tags);
            if (refCount > 0 && (place || member >= 0)) this.keepWay(id, place ? tags : undefined, refs, refCount, nodes);
            if (!tags) return;
            const p = sum.point();
            out.push(osmObjectToPlace(`w${id}`, tags, p.lat, p.lon));
          },
        },
      ],
      [
        HAS_RELATIONS,
        {
          relation: (id, members, tags) => {
            const p = relationPoint(members, ways, nodes).point();
            // `type=multipolygon` describes how the relation is built, not the place (the NDJSON export drops it too).
            const { type: _structure, ...placeTags } = tags;
            out.push(osmObjectToPlace(`r${id}`, placeTags, p.lat, p.lon));
          },
        },
      ],
    ];
    for (const [kind, visitor] of passes) {
      for await (const { block } of this.blocks(file, index.spans(kind).spans)) {
        checkHolds(decodeBlock(block, wantedKeys, 'name', visitor), sorted ? kind : undefined);
        yield* out;
        out.length = 0;
      }
    }
  }
}

/** The inflated data blobs of `spans`, without counting them as read (probes). */
async function* rawBlocks(file: FileHandle, spans: Spans): AsyncGenerator<{ block: Buffer }> {
  for await (const raw of rawBlobs(file, spans)) if (raw.type === 'OSMData') yield { block: inflateBlob(raw.blob) };
}

/** A sorted file's blob holds only the type its place in the file says; anything else means it is not sorted. */
function checkHolds(holds: number, only: number | undefined): void {
  if (only !== undefined && (holds & ~only) !== 0) {
    throw new PbfFormatError(
      'the header says the file is sorted by type then id (Sort.Type_then_ID) but it is not; sort it with `osmium sort`',
    );
  }
}

/**
 * Vertex average of the outer ways (the outer ring of a multipolygon); without outer ways, of all
 * member ways; without located ways, of the member nodes. Member relations are not followed.
 */
function relationPoint(members: RelationMember[], ways: WaySums, nodes: NodeLocations): PointSum {
  const memberWays = members.filter((m) => m.type === WAY);
  const outer = memberWays.filter((m) => m.role === 'outer');
  const sum = new PointSum();
  for (const m of outer.length > 0 ? outer : memberWays) ways.addTo(sum, m.ref);
  if (sum.count === 0) {
    for (const m of members) if (m.type === NODE) nodes.addTo(sum, m.ref);
  }
  return sum;
}

/** The replication fields of a `.osm.pbf` file's header (`PbfReplication`); empty when it has none. */
export async function pbfReplication(path: string): Promise<PbfReplication> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const blobs = rawBlobs(file, [[0, Math.min(size, 64 * 1024 + 4)]]);
    const first = await blobs.next();
    await blobs.return(undefined);
    if (first.done || first.value.type !== 'OSMHeader') return {};
    return replicationOfHeader(inflateBlob(first.value.blob));
  } finally {
    await file.close();
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
