import KDBush from 'kdbush';
import { RoaringBitmap32 } from 'roaring-wasm';
import { earthRadiusM } from '../query/criteria.sql.ts';
import type { PlaceFacts } from './engine.repository.ts';
import type { SlotExtension } from './slot-extension.ts';

/**
 * The coordinates of every slot of the index (`bitmap-index.ts`), and a static k-d tree over them (`kdbush`),
 * so that a box (bbox, the box around a radius, a drawn area's box) becomes a bitmap of slots that the
 * evaluation intersects with the other criteria.
 *
 * The tree is built once with the index, in slot order, with float32 coordinates (8 bytes a place instead of
 * 16): it is only a coarse filter. A box is looked up widened by `TREE_MARGIN_DEG` (far more than float32's
 * rounding) and every candidate is decided on the exact float64 coordinates kept per slot, with the SQL's own
 * inclusive comparisons, so the answer is the SQL's. A place without coordinates matches no box (SQL: NULL).
 *
 * Changes: a slot whose coordinates changed after the build (a place edited in place, or one added or moved to
 * the tail) is "loose": the tree's position for it is stale, so loose slots are tested one by one on every box
 * (the owner rebuilds when they grow: `looseSize`). A stale tree hit is rejected by the exact test; an emptied
 * slot is left out by the evaluation's intersection with the open or shown places.
 */

/** Widening of a box looked up in the float32 tree: float32 rounds a coordinate below 180 by at most 8e-6°. */
const TREE_MARGIN_DEG = 1e-4;
const RAD = Math.PI / 180;

export class GeoIndex implements SlotExtension {
  private lat = new Float64Array(0);
  private lon = new Float64Array(0);
  private tree: KDBush | null = null;
  /** Slots the tree does not place right (changed or added after it was built). */
  private readonly loose = new Set<number>();
  private sealed = 0;

  get looseSize(): number {
    return this.loose.size;
  }

  fill(slot: number, facts: PlaceFacts): void {
    if (slot >= this.lat.length) this.grow(slot + 1);
    const lat = facts.lat ?? Number.NaN;
    const lon = facts.lon ?? Number.NaN;
    if (slot >= this.sealed || !same(this.lat[slot]!, lat) || !same(this.lon[slot]!, lon)) {
      if (this.tree) this.loose.add(slot);
    }
    this.lat[slot] = lat;
    this.lon[slot] = lon;
  }

  /** Builds the tree over slots 0..sorted-1 (the build's slots, in order: tree item i is slot i). */
  seal(sorted: number): void {
    this.sealed = sorted;
    // The build's slots are all filled: the arrays are cut to them (growth resumes with the next change).
    this.lat = this.lat.slice(0, sorted);
    this.lon = this.lon.slice(0, sorted);
    const tree = new KDBush(Math.max(sorted, 1), 64, Float32Array);
    // A place without coordinates is put where no box reaches; the exact test rejects it anyway.
    for (let s = 0; s < sorted; s++)
      tree.add(Number.isNaN(this.lon[s]!) ? 1e30 : this.lon[s]!, Number.isNaN(this.lat[s]!) ? 1e30 : this.lat[s]!);
    if (sorted === 0) tree.add(1e30, 1e30);
    this.tree = tree.finish();
  }

  /** The slots whose coordinates lie in the box, bounds included (`lon BETWEEN … AND lat BETWEEN …`), as a bitmap the caller disposes. */
  inBox(minLon: number, minLat: number, maxLon: number, maxLat: number): RoaringBitmap32 {
    const out: number[] = [];
    const inside = (s: number) => this.inside(s, minLon, minLat, maxLon, maxLat);
    if (this.tree && minLon <= maxLon && minLat <= maxLat) {
      const m = TREE_MARGIN_DEG;
      for (const s of this.tree.range(minLon - m, minLat - m, maxLon + m, maxLat + m)) if (s < this.sealed && inside(s)) out.push(s);
    }
    for (const s of this.loose) if (inside(s)) out.push(s);
    const sorted = Uint32Array.from(out).sort();
    const bitmap = new RoaringBitmap32();
    bitmap.addMany(sorted);
    return bitmap;
  }

  /** Whether the slot's coordinates lie in the box, bounds included (the SQL's comparisons). */
  inside(slot: number, minLon: number, minLat: number, maxLon: number, maxLat: number): boolean {
    const lat = this.lat[slot]!;
    const lon = this.lon[slot]!;
    return lat >= minLat && lat <= maxLat && lon >= minLon && lon <= maxLon;
  }

  /**
   * Metres from (lat, lon) to the slot's place, the SQL's haversine (`distanceExpr`) operation for operation;
   * NaN without coordinates.
   */
  distance(slot: number, lat: number, lon: number): number {
    return haversineM(lat, lon, this.lat[slot]!, this.lon[slot]!);
  }

  /** The slot's [lon, lat] (NaN without coordinates). */
  position(slot: number): [number, number] {
    return [this.lon[slot]!, this.lat[slot]!];
  }

  bytes(): number {
    return this.lat.byteLength + this.lon.byteLength + (this.tree?.data.byteLength ?? 0);
  }

  private grow(slots: number): void {
    const capacity = Math.max(slots, Math.ceil(this.lat.length * 1.5), 1024);
    const lat = new Float64Array(capacity).fill(Number.NaN);
    const lon = new Float64Array(capacity).fill(Number.NaN);
    lat.set(this.lat);
    lon.set(this.lon);
    this.lat = lat;
    this.lon = lon;
  }
}

const same = (a: number, b: number) => a === b || (Number.isNaN(a) && Number.isNaN(b));

/**
 * The SQL's distance (`distanceExpr` in query/criteria.sql.ts) in the same operations and order:
 * `2R · asin(sqrt(sin²(rad(lat − lat0)/2) + cos(rad(lat0)) · cos(rad(lat)) · sin²(rad(lon − lon0)/2)))`.
 */
export function haversineM(lat0: number, lon0: number, lat: number, lon: number): number {
  const a = Math.sin(((lat - lat0) * RAD) / 2);
  const b = Math.sin(((lon - lon0) * RAD) / 2);
  return 2 * earthRadiusM * Math.asin(Math.sqrt(a * a + Math.cos(lat0 * RAD) * Math.cos(lat * RAD) * (b * b)));
}
