import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { MultiLineString, MultiPolygon, Polygon, Position } from 'geojson';
import { feature, mesh } from 'topojson-client';
import type { GeometryCollection, Topology } from 'topojson-specification';
import { html, raw, type SafeHtml } from './html.ts';

/**
 * The results map, drawn on the server as inline SVG: no tile server, no WebGL, no client library,
 * so it works offline, without JavaScript and in a screenshot.
 *
 * Layers, bottom to top:
 * - sea, land and country borders from Natural Earth 1:10m (`world-atlas`), only when the view is
 *   wider than a region: at city scale its ~300 m quantisation would put seaside places in the
 *   water and draw borders through the wrong streets;
 * - the settlement footprint: every catalogued place in view as a soft disc, so streets and
 *   built-up areas emerge from the data itself;
 * - names of gazetteer cities and quarters in view;
 * - the results, a scale bar and the attribution.
 */

export interface LatLon {
  lat: number;
  lon: number;
}
export interface MapResult extends LatLon {
  name: string;
}
export interface MapLabel extends LatLon {
  name: string;
}
export interface MapInput {
  results: MapResult[];
  /** Other places in view (the footprint). */
  context: LatLon[];
  labels: MapLabel[];
  /** Used for the view when there are no results. */
  center?: LatLon;
  title: string;
  width?: number;
  height?: number;
}

/** The geographic box a map shows. */
export interface GeoBox {
  west: number;
  south: number;
  east: number;
  north: number;
}

const earthCircumference = 40_075_016.686;
/** Below this view width (metres) the Natural Earth layers are left out, see above. */
const naturalEarthMinWidth = 40_000;
/** The narrowest view: a single result still shows its street block. */
const minViewWidth = 1_500;

const mercX = (lon: number) => (lon + 180) / 360;
const mercY = (lat: number) => {
  const phi = (Math.max(-85, Math.min(85, lat)) * Math.PI) / 180;
  return (1 - Math.log(Math.tan(phi) + 1 / Math.cos(phi)) / Math.PI) / 2;
};
const lonOf = (x: number) => x * 360 - 180;
const latOf = (y: number) => (Math.atan(Math.sinh(Math.PI * (1 - 2 * y))) * 180) / Math.PI;

interface View {
  x0: number;
  y0: number;
  /** Pixels per normalised Mercator unit. */
  k: number;
  width: number;
  height: number;
  box: GeoBox;
  /** Ground metres per pixel at the view's centre. */
  metresPerPx: number;
}

/** Fits the points (or a 3 km square around `center`) into width × height with a margin. */
export function fitView(points: LatLon[], center: LatLon | undefined, width: number, height: number): View {
  let xs = points.map((p) => mercX(p.lon));
  let ys = points.map((p) => mercY(p.lat));
  if (xs.length === 0) {
    const c = center ?? { lat: 20, lon: 0 };
    xs = [mercX(c.lon)];
    ys = [mercY(c.lat)];
  }
  const cx = (Math.min(...xs) + Math.max(...xs)) / 2;
  const cy = (Math.min(...ys) + Math.max(...ys)) / 2;
  const cosLat = Math.cos((latOf(cy) * Math.PI) / 180);
  const minSpan = minViewWidth / (earthCircumference * cosLat);
  let spanX = Math.max((Math.max(...xs) - Math.min(...xs)) * 1.15, minSpan);
  let spanY = Math.max((Math.max(...ys) - Math.min(...ys)) * 1.15, minSpan * (height / width));
  if (spanX / spanY < width / height) spanX = (spanY * width) / height;
  else spanY = (spanX * height) / width;
  const x0 = cx - spanX / 2;
  const y0 = cy - spanY / 2;
  const k = width / spanX;
  return {
    x0,
    y0,
    k,
    width,
    height,
    box: { west: lonOf(x0), east: lonOf(x0 + spanX), north: latOf(y0), south: latOf(y0 + spanY) },
    metresPerPx: (earthCircumference * cosLat * spanX) / width,
  };
}

/** The box to query context places and labels for, before drawing. */
export function viewBox(points: LatLon[], center: LatLon | undefined, width = 960, height = 540): GeoBox {
  return fitView(points, center, width, height).box;
}

export function renderMap(input: MapInput): SafeHtml {
  const width = input.width ?? 960;
  const height = input.height ?? 540;
  const view = fitView(input.results, input.center, width, height);
  const px = (p: LatLon): [number, number] => [(mercX(p.lon) - view.x0) * view.k, (mercY(p.lat) - view.y0) * view.k];
  const wide = view.metresPerPx * width >= naturalEarthMinWidth;
  const base = wide ? loadBaseMap() : null;
  const land = base ? raw(`<path class="map-land" d="${polygonsPath(base.land, view)}"/>`) : '';
  const borders = base ? raw(`<path class="map-border" d="${linesPath(base.borders, view)}"/>`) : '';
  // A disc of ~45 m around each place: neighbouring places on a street merge into a band.
  const r = Math.max(1.2, 45 / view.metresPerPx).toFixed(1);
  const footprint = input.context
    .map((p) => {
      const [x, y] = px(p);
      return `<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="${r}"/>`;
    })
    .join('');
  const labels = input.labels.map((l) => {
    const [x, y] = px(l);
    return html`<text class="map-label" x="${x.toFixed(1)}" y="${y.toFixed(1)}">${l.name}</text>`;
  });
  const results = input.results.map((p) => {
    const [x, y] = px(p);
    return html`<circle class="map-result" cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="5"><title>${p.name}</title></circle>`;
  });
  const scale = scaleBar(view.metresPerPx);
  const sx = 16;
  const sy = height - 22;
  return html`<svg class="map" viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="map-title" xmlns="http://www.w3.org/2000/svg">
<title id="map-title">${input.title}</title>
<rect class="${wide ? 'map-sea' : 'map-paper'}" width="${width}" height="${height}"/>
${land}
<g class="map-footprint">${raw(footprint)}</g>
${borders}
${labels}
<g class="map-results">${results}</g>
<g class="map-scale" transform="translate(${sx} ${sy})">
<rect class="map-scale-bg" x="-6" y="-18" width="${scale.px + 12}" height="30" rx="3"/>
<path d="M0 -4 V4 H${scale.px.toFixed(1)} V-4"/>
<text x="0" y="-7">${scale.label}</text>
</g>
<text class="map-attribution" x="${width - 8}" y="${height - 8}">Places © OpenStreetMap contributors${base ? ' · Land and borders: Natural Earth' : ''}</text>
</svg>`;
}

/** The longest round length (1, 2 or 5 × 10ⁿ metres) that fits in 140 px. */
export function scaleBar(metresPerPx: number): { metres: number; px: number; label: string } {
  const target = metresPerPx * 140;
  const magnitude = 10 ** Math.floor(Math.log10(target));
  const metres = [5, 2, 1].map((f) => f * magnitude).find((m) => m <= target) ?? magnitude;
  const label = metres >= 1000 ? `${metres / 1000} km` : `${metres} m`;
  return { metres, px: metres / metresPerPx, label };
}

interface BaseMap {
  land: Position[][][];
  borders: Position[][];
}

let baseMap: BaseMap | undefined;
/** Natural Earth 1:10m land and country borders, decoded once per process (a few MB of JSON). */
function loadBaseMap(): BaseMap {
  if (baseMap) return baseMap;
  const require = createRequire(import.meta.url);
  const topology = JSON.parse(readFileSync(require.resolve('world-atlas/countries-10m.json'), 'utf8')) as Topology;
  const countries = topology.objects.countries as GeometryCollection;
  const landTopology = JSON.parse(readFileSync(require.resolve('world-atlas/land-10m.json'), 'utf8')) as Topology;
  const landFeature = feature(landTopology, landTopology.objects.land as GeometryCollection);
  const land: Position[][][] = [];
  for (const f of landFeature.features) {
    const g = f.geometry as Polygon | MultiPolygon;
    if (g.type === 'Polygon') land.push(g.coordinates);
    else land.push(...g.coordinates);
  }
  const borders = (mesh(topology, countries, (a, b) => a !== b) as MultiLineString).coordinates;
  baseMap = { land, borders };
  return baseMap;
}

type Pt = [number, number];

function project(coords: Position[], view: View): Pt[] {
  return coords.map(([lon, lat]) => [(mercX(lon as number) - view.x0) * view.k, (mercY(lat as number) - view.y0) * view.k]);
}

/** The view plus a margin, so clipped edges and stroke ends stay out of sight. */
function clipBox(view: View): { x0: number; y0: number; x1: number; y1: number } {
  const m = 0.05 * Math.max(view.width, view.height);
  return { x0: -m, y0: -m, x1: view.width + m, y1: view.height + m };
}

/** Sutherland–Hodgman: the part of a ring inside the clip box (a coastline around a continent shrinks to the view). */
export function clipRing(ring: Pt[], box: { x0: number; y0: number; x1: number; y1: number }): Pt[] {
  const edges: Array<[(p: Pt) => boolean, (a: Pt, b: Pt) => Pt]> = [
    [(p) => p[0] >= box.x0, (a, b) => cutX(a, b, box.x0)],
    [(p) => p[0] <= box.x1, (a, b) => cutX(a, b, box.x1)],
    [(p) => p[1] >= box.y0, (a, b) => cutY(a, b, box.y0)],
    [(p) => p[1] <= box.y1, (a, b) => cutY(a, b, box.y1)],
  ];
  let out = ring;
  for (const [inside, cut] of edges) {
    const input = out;
    out = [];
    for (let i = 0; i < input.length; i++) {
      const cur = input[i] as Pt;
      const prev = input[(i + input.length - 1) % input.length] as Pt;
      if (inside(cur)) {
        if (!inside(prev)) out.push(cut(prev, cur));
        out.push(cur);
      } else if (inside(prev)) out.push(cut(prev, cur));
    }
    if (out.length === 0) break;
  }
  return out;
}

const cutX = (a: Pt, b: Pt, x: number): Pt => [x, a[1] + ((b[1] - a[1]) * (x - a[0])) / (b[0] - a[0])];
const cutY = (a: Pt, b: Pt, y: number): Pt => [a[0] + ((b[0] - a[0]) * (y - a[1])) / (b[1] - a[1]), y];

/** Path data for points, dropping those under a pixel from the previous one; `M` starts each run. */
function pathData(runs: Pt[][], close: boolean): string {
  let d = '';
  for (const run of runs) {
    let part = '';
    let last: Pt | null = null;
    for (const p of run) {
      if (last && Math.abs(p[0] - last[0]) + Math.abs(p[1] - last[1]) < 1) continue;
      part += `${part === '' ? 'M' : 'L'}${p[0].toFixed(1)} ${p[1].toFixed(1)}`;
      last = p;
    }
    if (part.includes('L')) d += close ? `${part}Z` : part;
  }
  return d;
}

/** Splits a line into the runs of segments that touch the clip box. */
function clipLine(line: Pt[], box: { x0: number; y0: number; x1: number; y1: number }): Pt[][] {
  const inBox = (p: Pt) => p[0] >= box.x0 && p[0] <= box.x1 && p[1] >= box.y0 && p[1] <= box.y1;
  const runs: Pt[][] = [];
  let run: Pt[] = [];
  for (let i = 0; i < line.length; i++) {
    const p = line[i] as Pt;
    const next = line[i + 1];
    const prev = line[i - 1];
    if (inBox(p) || (next && inBox(next)) || (prev && inBox(prev))) run.push(p);
    else if (run.length > 0) {
      runs.push(run);
      run = [];
    }
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

function intersects(coords: Position[], box: GeoBox): boolean {
  const margin = (box.east - box.west) * 0.5;
  for (const [lon, lat] of coords) {
    if (
      (lon as number) >= box.west - margin &&
      (lon as number) <= box.east + margin &&
      (lat as number) >= box.south - margin &&
      (lat as number) <= box.north + margin
    )
      return true;
  }
  return false;
}

function polygonsPath(polygons: Position[][][], view: View): string {
  const box = clipBox(view);
  const rings: Pt[][] = [];
  for (const polygon of polygons) {
    const outer = polygon[0];
    if (!outer || !ringBoxOverlaps(outer, view.box)) continue;
    for (const ring of polygon) rings.push(clipRing(project(ring, view), box));
  }
  return pathData(rings, true);
}

function linesPath(lines: Position[][], view: View): string {
  const box = clipBox(view);
  return pathData(
    lines.filter((l) => intersects(l, view.box)).flatMap((l) => clipLine(project(l, view), box)),
    false,
  );
}

function ringBoxOverlaps(ring: Position[], box: GeoBox): boolean {
  let w = Infinity;
  let e = -Infinity;
  let s = Infinity;
  let n = -Infinity;
  for (const [lon, lat] of ring) {
    w = Math.min(w, lon as number);
    e = Math.max(e, lon as number);
    s = Math.min(s, lat as number);
    n = Math.max(n, lat as number);
  }
  return w <= box.east && e >= box.west && s <= box.north && n >= box.south;
}
