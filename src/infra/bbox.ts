/** A box in degrees: [minLon, minLat, maxLon, maxLat]. */
export type Bbox = [minLon: number, minLat: number, maxLon: number, maxLat: number];

/**
 * A box written as `minLon,minLat,maxLon,maxLat` (the API's `bbox`, the importer's `--bbox`), or what is wrong
 * with it: `format`, not four numbers; `range`, outside -180..180 or -90..90; `order`, a min above its max.
 * Each caller words the error its own way (a problem document, a command-line usage error).
 */
export function parseBbox(text: string): { box: Bbox } | { problem: 'format' | 'range' | 'order' } {
  const parts = text.split(',').map((p) => Number(p.trim()));
  if (parts.length !== 4 || parts.some((p) => !Number.isFinite(p))) return { problem: 'format' };
  const [minLon, minLat, maxLon, maxLat] = parts as Bbox;
  if (Math.abs(minLon) > 180 || Math.abs(maxLon) > 180 || Math.abs(minLat) > 90 || Math.abs(maxLat) > 90) return { problem: 'range' };
  if (minLon > maxLon || minLat > maxLat) return { problem: 'order' };
  return { box: [minLon, minLat, maxLon, maxLat] };
}
