import { RoaringBitmap32 } from 'roaring-wasm';
import { inPolygon, type MultiPolygonCoordinates } from '../polygon.ts';
import { boxAround } from '../query/criteria.sql.ts';
import type { PlaceCriteria, PlaceKey, PlaceSort } from '../query/criteria.ts';
import type { BitmapIndex } from './bitmap-index.ts';
import { GeoIndex, haversineM } from './geo-index.ts';
import { NameOrder, topK } from './name-order.ts';
import type { SlotExtension } from './slot-extension.ts';

/**
 * Geography and the name order in the engine: the criteria `near`, `bbox` and `polygon` as a bitmap of slots
 * that the evaluation intersects with the others, and the pages in `sort=distance` (and relevance with `near`,
 * which is the same order) and `sort=name`. The conditions are the SQL's (`whereCriteria`): a box is inclusive;
 * `near` is the box around the circle (`boxAround`: the SQL narrows by it too) and the haversine distance at
 * most the radius; a drawn area is its bounding box (`bbox`) and the
 * point-in-polygon test of `polygon.ts`. A box whose west edge is east of its east edge holds nothing, as in SQL
 * (no search crosses the antimeridian).
 */

/** The extensions of one index: coordinates and the name order. Made by `BitmapIndex.build` through `attach`. */
export class IndexOrders {
  geo = new GeoIndex();
  names: NameOrder | null = null;

  /** For `BitmapIndex.build`: the extensions of the index being built. */
  attach(index: { placeIdOf(slot: number): number }): readonly SlotExtension[] {
    this.names = new NameOrder((slot) => index.placeIdOf(slot));
    return [this.geo, this.names];
  }

  bytes(): number {
    return this.geo.bytes() + (this.names?.bytesHeld() ?? 0);
  }
}

/** The geography criteria the engine answers (the planner's: `indexQueryOf`). */
export const geoCriteria = ['near', 'bbox', 'polygon'] as const satisfies ReadonlyArray<keyof PlaceCriteria>;

/** Whether the engine holds the order: `name` always, `distance` with a point (SQL refuses it without). */
export function ordersBy(sort: PlaceSort, criteria: PlaceCriteria): boolean {
  return sort === 'name' || (sort === 'distance' && criteria.near !== null);
}

/** Whether a cursor's key is of the kind the order gives (a name is text, every other key a number). */
export function cursorFits(sort: PlaceSort, after: PlaceKey | null): boolean {
  return after === null || typeof after.key === (sort === 'name' ? 'string' : 'number');
}

/**
 * The matches of `base` (the other criteria's) inside the search's area: bbox, and the box around `near` with the
 * distance at most its radius; null when the search sets no area. The caller disposes both. Few matches (an
 * eighth of the places or fewer) are each tested on their coordinates; more, intersected with the area's slots
 * from the k-d tree (`areaSlots`), whose cost is the places in the area's box.
 */
export function withinArea(orders: IndexOrders, base: RoaringBitmap32, criteria: PlaceCriteria, places: number): RoaringBitmap32 | null {
  const { bbox, near } = criteria;
  if (!bbox && !near) return null;
  if (base.size * 8 > places) {
    const area = areaSlots(orders, criteria)!;
    try {
      return RoaringBitmap32.and(base, area);
    } finally {
      area.dispose();
    }
  }
  const around = near ? boxAround(near.lat, near.lon, near.radiusM) : null;
  return RoaringBitmap32.from(
    base
      .toUint32Array()
      .filter(
        (s) =>
          (!bbox || orders.geo.inside(s, ...bbox)) &&
          (!near || (orders.geo.inside(s, ...around!) && orders.geo.distance(s, near.lat, near.lon) <= near.radiusM)),
      ),
  );
}

/** The slots in the search's area (bbox, and the box around `near` with its radius), or null when it sets none. The caller disposes it. */
function areaSlots(orders: IndexOrders, criteria: PlaceCriteria): RoaringBitmap32 | null {
  const { bbox, near } = criteria;
  if (!bbox && !near) return null;
  let slots = bbox ? orders.geo.inBox(...bbox) : null;
  if (near) {
    const around = orders.geo.inBox(...boxAround(near.lat, near.lon, near.radiusM));
    const kept = around.toUint32Array().filter((s) => orders.geo.distance(s, near.lat, near.lon) <= near.radiusM);
    around.dispose();
    const circle = RoaringBitmap32.from(kept);
    if (slots) {
      slots.andInPlace(circle);
      circle.dispose();
    } else slots = circle;
  }
  return slots;
}

/** The matches inside the drawn area (each decided by the exact test), as a new bitmap; the caller disposes both. */
export function insidePolygon(orders: IndexOrders, result: RoaringBitmap32, polygon: MultiPolygonCoordinates): RoaringBitmap32 {
  return RoaringBitmap32.from(
    result.toUint32Array().filter((s) => {
      const [lon, lat] = orders.geo.position(s);
      return !Number.isNaN(lon) && !Number.isNaN(lat) && inPolygon(polygon, lon, lat);
    }),
  );
}

/**
 * The first `limit` matches after `after` in the order the extensions hold (`ordersBy`, and relevance with `near`),
 * as place keys; null for the orders of the bitmaps themselves.
 */
export function pageInOrder(
  orders: IndexOrders,
  index: BitmapIndex,
  result: RoaringBitmap32,
  criteria: PlaceCriteria,
  sort: PlaceSort,
  after: PlaceKey | null,
  limit: number,
): PlaceKey[] | null {
  if (sort === 'name' && orders.names) {
    const slots = orders.names.page(result, after as { key: string; id: number } | null, limit, index.size);
    return slots.map((s) => ({ key: orders.names!.nameOf(s), id: index.placeIdOf(s) }));
  }
  const near = criteria.near;
  if (near && (sort === 'distance' || sort === 'relevance')) {
    // Nearest first, ties by the smaller id (the SQL's `ORDER BY distance, id`): one pass over the matches keeping the best.
    const from = after as { key: number; id: number } | null;
    const keys: Array<{ key: number; id: number }> = [];
    for (const s of result.toUint32Array()) {
      const k = { key: orders.geo.distance(s, near.lat, near.lon), id: index.placeIdOf(s) };
      if (!from || k.key > from.key || (k.key === from.key && k.id > from.id)) keys.push(k);
    }
    return topK(keys, limit, (a, b) => a.key - b.key || a.id - b.id);
  }
  return null;
}

/** Metres from the search's point to a row (the SQL's `distance_m`), null without a point. */
export function distanceToRow(criteria: PlaceCriteria, row: { lat: number | null; lon: number | null }): number | null {
  const near = criteria.near;
  if (!near || row.lat === null || row.lon === null) return null;
  return haversineM(near.lat, near.lon, row.lat, row.lon);
}
