/**
 * The few OSM objects an `.osm.pbf` import needs to locate, kept by id in typed arrays (see
 * docs/importing-osm.md, "Memory"): sorted, unique ids searched by binary search or by a cursor that moves
 * forward as the file's objects come in id order.
 */

/** Ids gathered before the first merge; later batches grow with the set (an eighth of it). */
const MIN_BATCH = 1 << 20;

/** `a` and `b` (each sorted and unique) merged into one sorted, unique array of exactly their union's size. */
function mergeUnique(a: Float64Array, b: Float64Array): Float64Array {
  let size = 0;
  for (let i = 0, j = 0; i < a.length || j < b.length; size++) {
    if (j === b.length || (i < a.length && a[i]! < b[j]!)) i++;
    else if (i === a.length || b[j]! < a[i]!) j++;
    else i++, j++;
  }
  const out = new Float64Array(size);
  for (let i = 0, j = 0, k = 0; k < size; k++) {
    if (j === b.length || (i < a.length && a[i]! < b[j]!)) out[k] = a[i++]!;
    else if (i === a.length || b[j]! < a[i]!) out[k] = b[j++]!;
    else (out[k] = a[i++]!), j++;
  }
  return out;
}

/**
 * Ids gathered in any order and with repeats (a closed way lists its first node twice, neighbouring
 * buildings share nodes), kept as one sorted, unique Float64Array (OSM ids exceed 32 bits). Ids wait in a
 * batch that is sorted and merged into the set when full: at most 8 bytes an id for the set, twice that
 * while a merge copies it, plus the batch (an eighth of the set, at least 8 MiB).
 */
export class IdSetBuilder {
  private set: Float64Array = new Float64Array(0);
  private batch: Float64Array = new Float64Array(MIN_BATCH);
  private batched = 0;

  add(id: number): void {
    if (this.batched === this.batch.length) this.merge();
    this.batch[this.batched++] = id;
  }

  /** The ids so far, sorted and unique; the builder is empty afterwards. */
  finish(): Float64Array {
    this.merge();
    const set = this.set;
    this.set = new Float64Array(0);
    this.batch = new Float64Array(0);
    return set;
  }

  private merge(): void {
    const batch = this.batch.subarray(0, this.batched).sort();
    let unique = 0;
    for (let i = 0; i < batch.length; i++) if (unique === 0 || batch[i] !== batch[unique - 1]) batch[unique++] = batch[i]!;
    this.set = mergeUnique(this.set, batch.subarray(0, unique));
    this.batched = 0;
    const size = Math.max(MIN_BATCH, this.set.length >>> 3);
    if (size > this.batch.length) this.batch = new Float64Array(size);
  }
}

/** Sorted unique ids with a look-up for random order and one for ascending order. */
class SortedIds {
  private cursor = 0;
  private last = -Infinity;

  constructor(readonly ids: Float64Array) {}

  get size(): number {
    return this.ids.length;
  }

  /** Index of `id`, or -1 (binary search). */
  indexOf(id: number): number {
    const ids = this.ids;
    let lo = 0;
    let hi = ids.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = ids[mid]!;
      if (v < id) lo = mid + 1;
      else if (v > id) hi = mid - 1;
      else return mid;
    }
    return -1;
  }

  /** Whether some id lies in `[min, max]`. */
  anyWithin(min: number, max: number): boolean {
    const ids = this.ids;
    let lo = 0;
    let hi = ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (ids[mid]! < min) lo = mid + 1;
      else hi = mid;
    }
    return lo < ids.length && ids[lo]! <= max;
  }

  /** Starts `indexOfNext` from the smallest id again, for another pass over the file. */
  rewind(): void {
    this.cursor = 0;
    this.last = -Infinity;
  }

  /**
   * Index of `id`, or -1, for ids asked in ascending order (a file's nodes or ways, as sorted files give
   * them): a cursor walks forward, so a whole file costs one walk over the set. An id below the previous
   * one (an unsorted file) falls back to a binary search.
   */
  indexOfNext(id: number): number {
    const ids = this.ids;
    if (id < this.last) {
      this.last = id;
      const at = this.indexOf(id);
      if (at >= 0) this.cursor = at;
      return at;
    }
    this.last = id;
    let c = this.cursor;
    while (c < ids.length && ids[c]! < id) c++;
    this.cursor = c;
    return c < ids.length && ids[c] === id ? c : -1;
  }
}

/** A latitude no point has: the slot of a node the file did not contain. */
const MISSING = -0x80000000;

/**
 * Locations of the nodes whose ids were gathered, in OSM's units of 1e-7 degrees as 32-bit integers:
 * 16 bytes a node (the id, latitude and longitude).
 */
export class NodeLocations extends SortedIds {
  private readonly lats: Int32Array;
  private readonly lons: Int32Array;

  constructor(ids: Float64Array) {
    super(ids);
    this.lats = new Int32Array(ids.length).fill(MISSING);
    this.lons = new Int32Array(ids.length);
  }

  /** For the file's nodes in file order: keeps the point of a wanted node; false for other nodes. */
  offer(id: number, lat: number, lon: number): boolean {
    const i = this.indexOfNext(id);
    if (i < 0) return false;
    this.lats[i] = Math.round(lat * 1e7);
    this.lons[i] = Math.round(lon * 1e7);
    return true;
  }

  /** Node `id`'s point in units of 1e-7°, as [lat, lon]; undefined for a node not in the file. */
  pointOf(id: number): [number, number] | undefined {
    const i = this.indexOf(id);
    if (i < 0 || this.lats[i] === MISSING) return undefined;
    return [this.lats[i]!, this.lons[i]!];
  }

  /** Adds node `id`'s point in degrees (rounded to 1e-7°) to `sum`; a node not in the file adds nothing. */
  addTo(sum: PointSum, id: number): void {
    const i = this.indexOf(id);
    if (i < 0 || this.lats[i] === MISSING) return;
    sum.lat += this.lats[i]! / 1e7;
    sum.lon += this.lons[i]! / 1e7;
    sum.count++;
  }
}

/** Running sum of vertices, so a way's or relation's point is the average of its located nodes. */
export class PointSum {
  lat = 0;
  lon = 0;
  count = 0;

  point(): { lat: number | null; lon: number | null } {
    if (this.count === 0) return { lat: null, lon: null };
    // toFixed rounds the exact binary value, as Python's round() does in the tool that wrote the NDJSON export.
    return { lat: Number((this.lat / this.count).toFixed(7)), lon: Number((this.lon / this.count).toFixed(7)) };
  }
}

/** Vertex sums of the ways that relations need (their members), 32 bytes a way: id, two sums, a count. */
export class WaySums extends SortedIds {
  private readonly lats: Float64Array;
  private readonly lons: Float64Array;
  private readonly counts: Float64Array;

  constructor(ids: Float64Array) {
    super(ids);
    this.lats = new Float64Array(ids.length);
    this.lons = new Float64Array(ids.length);
    this.counts = new Float64Array(ids.length);
  }

  /** Whether way `id` is wanted, for the file's ways in file order. */
  wants(id: number): boolean {
    return this.indexOfNext(id) >= 0;
  }

  /** Keeps the vertex sum of the way at index `i` (from `indexOfNext`). */
  keep(i: number, sum: PointSum): void {
    this.lats[i] = sum.lat;
    this.lons[i] = sum.lon;
    this.counts[i] = sum.count;
  }

  /** Adds way `id`'s vertex sum to `sum`; a way not in the file adds nothing. */
  addTo(sum: PointSum, id: number): void {
    const i = this.indexOf(id);
    if (i < 0) return;
    sum.lat += this.lats[i]!;
    sum.lon += this.lons[i]!;
    sum.count += this.counts[i]!;
  }
}
