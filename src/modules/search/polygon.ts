import booleanPointInPolygon from '@turf/boolean-point-in-polygon';
import { AppError, type FieldError } from '../../infra/errors.ts';

/**
 * A search area drawn as a GeoJSON Polygon or MultiPolygon (`POST /api/v2/map/search`): checked here,
 * then searched as its bounding box through the coordinate index and decided place by place with an exact
 * point-in-polygon test (`@turf/boolean-point-in-polygon`: even-odd over every ring, so holes exclude; a
 * point on an edge counts as inside).
 */

/** GeoJSON coordinates of a MultiPolygon: polygons of rings of [lon, lat] positions (first ring outer, the others holes). */
export type MultiPolygonCoordinates = number[][][][];

/** Bounds of a search polygon (documented in the route schema and the search README). */
export const polygonLimits = {
  /** Positions in all rings together. */
  maxVertices: 2000,
  /** Polygons in a MultiPolygon. */
  maxPolygons: 50,
  /** Rings in one polygon (the outer ring and its holes). */
  maxRings: 50,
  /** The bounding box's span in degrees of longitude and of latitude. */
  maxSpanDeg: 10,
} as const;

function bad(errors: FieldError[]): AppError {
  return new AppError('validation_failed', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });
}

const isPosition = (p: unknown): p is [number, number] =>
  Array.isArray(p) && (p.length === 2 || p.length === 3) && p.every((n) => typeof n === 'number' && Number.isFinite(n));

/**
 * A GeoJSON Polygon or MultiPolygon as MultiPolygon coordinates, or a 400 naming the field: the type, each
 * ring (at least four positions, closed: its last position is its first), each position ([lon, lat] within
 * -180..180 and -90..90), and the limits of `polygonLimits`. A third number in a position (altitude) is dropped.
 */
export function parseSearchPolygon(value: { type?: unknown; coordinates?: unknown } | undefined, field: string): MultiPolygonCoordinates {
  const allowedShape = {
    type: ['Polygon', 'MultiPolygon'],
    coordinates: 'Polygon: [[[lon, lat], …]] (outer ring, then holes); MultiPolygon: [ Polygon coordinates, … ]',
  };
  if (value === undefined || value === null || typeof value !== 'object')
    throw bad([{ field, message: 'must be a GeoJSON Polygon or MultiPolygon', allowed: allowedShape }]);
  if (value.type !== 'Polygon' && value.type !== 'MultiPolygon')
    throw bad([{ field: `${field}.type`, message: 'must be Polygon or MultiPolygon', allowed: ['Polygon', 'MultiPolygon'] }]);
  const coordinates = value.coordinates;
  const polygons: unknown[] | null = !Array.isArray(coordinates) ? null : value.type === 'Polygon' ? [coordinates] : coordinates;
  const path = (p: number) => (value.type === 'Polygon' ? `${field}.coordinates` : `${field}.coordinates[${p}]`);
  if (!polygons || polygons.length === 0)
    throw bad([{ field: `${field}.coordinates`, message: 'must be a non-empty array', allowed: allowedShape }]);
  if (polygons.length > polygonLimits.maxPolygons)
    throw bad([
      {
        field: `${field}.coordinates`,
        message: `has ${polygons.length} polygons; at most ${polygonLimits.maxPolygons}`,
        allowed: { maxPolygons: polygonLimits.maxPolygons },
      },
    ]);
  const out: MultiPolygonCoordinates = [];
  let vertices = 0;
  for (const [p, polygon] of polygons.entries()) {
    if (!Array.isArray(polygon) || polygon.length === 0)
      throw bad([{ field: path(p), message: 'must be an array of rings (the outer ring first, then holes)', allowed: allowedShape }]);
    if (polygon.length > polygonLimits.maxRings)
      throw bad([
        {
          field: path(p),
          message: `has ${polygon.length} rings; at most ${polygonLimits.maxRings}`,
          allowed: { maxRings: polygonLimits.maxRings },
        },
      ]);
    const rings: number[][][] = [];
    for (const [r, ring] of polygon.entries()) {
      const at = `${path(p)}[${r}]`;
      if (!Array.isArray(ring) || ring.length < 4)
        throw bad([
          { field: at, message: 'must be a ring of at least 4 positions (3 corners and the first again)', allowed: { minPositions: 4 } },
        ]);
      vertices += ring.length;
      if (vertices > polygonLimits.maxVertices)
        throw bad([
          {
            field: `${field}.coordinates`,
            message: `has more than ${polygonLimits.maxVertices} positions`,
            allowed: { maxVertices: polygonLimits.maxVertices },
          },
        ]);
      const positions: number[][] = [];
      for (const [i, position] of ring.entries()) {
        if (!isPosition(position))
          throw bad([
            {
              field: `${at}[${i}]`,
              message: 'must be a position [lon, lat] of two finite numbers',
              allowed: { pattern: '[lon, lat]', example: [11.575, 48.137] },
            },
          ]);
        const [lon, lat] = position;
        if (Math.abs(lon) > 180 || Math.abs(lat) > 90)
          throw bad([
            {
              field: `${at}[${i}]`,
              message: 'longitude must be within -180..180 and latitude within -90..90',
              allowed: { lon: [-180, 180], lat: [-90, 90] },
            },
          ]);
        positions.push([lon, lat]);
      }
      const first = positions[0]!;
      const last = positions.at(-1)!;
      if (first[0] !== last[0] || first[1] !== last[1])
        throw bad([{ field: at, message: 'must be closed: its last position must equal its first', allowed: { closed: true } }]);
      if (new Set(positions.slice(0, -1).map((q) => `${q[0]},${q[1]}`)).size < 3)
        throw bad([{ field: at, message: 'must have at least 3 distinct corners', allowed: { minCorners: 3 } }]);
      rings.push(positions);
    }
    out.push(rings);
  }
  const [minLon, minLat, maxLon, maxLat] = polygonBbox(out);
  if (maxLon - minLon > polygonLimits.maxSpanDeg || maxLat - minLat > polygonLimits.maxSpanDeg) {
    throw bad([
      {
        field,
        message: `spans ${(maxLon - minLon).toFixed(2)}° of longitude and ${(maxLat - minLat).toFixed(2)}° of latitude; at most ${polygonLimits.maxSpanDeg}° each`,
        allowed: { maxSpanDeg: polygonLimits.maxSpanDeg },
      },
    ]);
  }
  return out;
}

/** [minLon, minLat, maxLon, maxLat] of the outer rings (holes lie inside them). */
export function polygonBbox(polygons: MultiPolygonCoordinates): [number, number, number, number] {
  let minLon = Infinity,
    minLat = Infinity,
    maxLon = -Infinity,
    maxLat = -Infinity;
  for (const polygon of polygons) {
    for (const [lon, lat] of polygon[0]!) {
      if (lon! < minLon) minLon = lon!;
      if (lon! > maxLon) maxLon = lon!;
      if (lat! < minLat) minLat = lat!;
      if (lat! > maxLat) maxLat = lat!;
    }
  }
  return [minLon, minLat, maxLon, maxLat];
}

/** Whether the point lies in the MultiPolygon (inside an outer ring and outside its holes; edges count as inside). */
export function inPolygon(polygons: MultiPolygonCoordinates, lon: number | null, lat: number | null): boolean {
  if (lon === null || lat === null) return false;
  return booleanPointInPolygon([lon, lat], { type: 'MultiPolygon', coordinates: polygons });
}
