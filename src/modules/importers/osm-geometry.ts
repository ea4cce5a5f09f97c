import { PointSum } from './readers/osm-pbf-locations.ts';

/**
 * The geometry of OpenStreetMap ways that places need, as it crosses from the import worker to the writer
 * (flat arrays, like PlaceRows) and as the change-file import reads it back from the catalog
 * (`osm-geometry.repository.ts`, migration 0023).
 */

/** Ways as flat arrays: way i has `refCounts[i]` node ids in `refs` (lats/lons alike, NaN where not located). */
export interface WayRows {
  count: number;
  ids: number[];
  /** JSON object of the way's tags when it is a place; null for a relation's member way. */
  tags: Array<string | null>;
  refCounts: number[];
  refs: number[];
  lats: number[];
  lons: number[];
}

export function emptyWayRows(): WayRows {
  return { count: 0, ids: [], tags: [], refCounts: [], refs: [], lats: [], lons: [] };
}

/** One way of a WayRows, as objects (the change-file import and tests). */
export interface StoredWay {
  id: number;
  refs: number[];
  tags: Record<string, string> | null;
}

/** A node's location, in degrees rounded to OpenStreetMap's 1e-7°. */
export interface NodePoint {
  lat: number;
  lon: number;
}

/** Each way of `rows` with its node ids and the located nodes' points. */
export function* waysOf(
  rows: WayRows,
): Generator<{ id: number; tags: string | null; refs: number[]; points: Array<{ id: number } & NodePoint> }> {
  let at = 0;
  for (let i = 0; i < rows.count; i++) {
    const n = rows.refCounts[i]!;
    const refs = rows.refs.slice(at, at + n);
    const points: Array<{ id: number } & NodePoint> = [];
    for (let j = at; j < at + n; j++) {
      if (!Number.isNaN(rows.lats[j]!)) points.push({ id: rows.refs[j]!, lat: rows.lats[j]!, lon: rows.lons[j]! });
    }
    yield { id: rows.ids[i]!, tags: rows.tags[i]!, refs, points };
    at += n;
  }
}

/** Appends way `id` with its first `refCount` node ids and, where `locate` knows them, their points. */
export function appendWay(
  rows: WayRows,
  id: number,
  tags: string | null,
  refs: ArrayLike<number>,
  refCount: number,
  locate: (id: number) => NodePoint | undefined,
): void {
  rows.ids.push(id);
  rows.tags.push(tags);
  rows.refCounts.push(refCount);
  for (let i = 0; i < refCount; i++) {
    const p = locate(refs[i]!);
    rows.refs.push(refs[i]!);
    rows.lats.push(p ? p.lat : Number.NaN);
    rows.lons.push(p ? p.lon : Number.NaN);
  }
  rows.count++;
}

/**
 * A way's point as the `.osm.pbf` reader computes it (`PointSum`): the average of its located vertices (a
 * closed way's first node counts twice, as it is listed twice); null without a located vertex.
 */
export function wayPoint(
  refs: readonly number[],
  locate: (id: number) => NodePoint | undefined,
): { lat: number | null; lon: number | null } {
  const sum = new PointSum();
  for (const ref of refs) {
    const p = locate(ref);
    if (!p) continue;
    sum.lat += p.lat;
    sum.lon += p.lon;
    sum.count++;
  }
  return sum.point();
}
