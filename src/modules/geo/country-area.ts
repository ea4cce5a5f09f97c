import { createRequire } from 'node:module';

type CountryCoder = typeof import('@rapideditor/country-coder');

/** minLon, minLat, maxLon, maxLat. */
export type Box = [number, number, number, number];

/**
 * The boxes around a country's land and coastal waters, one per polygon of its border in country-coder (the
 * data `borders.ts` places points with): Portugal is three boxes (the mainland, Madeira, the Azores), not one
 * box over the Atlantic between them. With overseas parts (France's) the boxes cover them too; a point there
 * is filed under the territory's own code, so the border check drops it. null for a code country-coder does
 * not know. A selection by these boxes is a superset of the country: the border decides each point.
 */
export function countryBoxes(code: string): Box[] | null {
  const cc = createRequire(import.meta.url)('@rapideditor/country-coder') as CountryCoder;
  const feature = cc.aggregateFeature(code.toUpperCase());
  const geometry = feature?.geometry;
  if (!geometry) return null;
  const polygons = geometry.type === 'MultiPolygon' ? geometry.coordinates : geometry.type === 'Polygon' ? [geometry.coordinates] : [];
  const boxes: Box[] = [];
  for (const polygon of polygons) {
    const box: Box = [180, 90, -180, -90];
    for (const [lon, lat] of polygon[0] ?? []) {
      box[0] = Math.min(box[0], lon!);
      box[1] = Math.min(box[1], lat!);
      box[2] = Math.max(box[2], lon!);
      box[3] = Math.max(box[3], lat!);
    }
    if (box[0] <= box[2]) boxes.push(box);
  }
  return boxes.length > 0 ? boxes : null;
}

/** Whether two boxes share a point. */
export const boxesMeet = (a: Box, b: Box): boolean => a[0] <= b[2] && b[0] <= a[2] && a[1] <= b[3] && b[1] <= a[3];
