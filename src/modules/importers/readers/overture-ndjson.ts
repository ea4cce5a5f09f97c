import type { PlaceInput, ReadResult, ReaderFactory } from '../importer.types.ts';
import { attributes, distinct, isObject, number, text, unwrapFeature } from './fields.ts';
import { firstJsonObject, openNdjsonReader, refuseColumns, type JsonObject } from './rows.ts';

const firstText = (v: unknown): string | null => (Array.isArray(v) ? (v.map(text).find((s) => s !== null) ?? null) : text(v));

/** A point from a GeoJSON Point geometry, else the centre of the bbox. */
function position(o: JsonObject): { lat: number | null; lon: number | null } {
  const g = isObject(o.geometry) ? o.geometry : undefined;
  if (g && g.type === 'Point' && Array.isArray(g.coordinates)) return { lon: number(g.coordinates[0]), lat: number(g.coordinates[1]) };
  const b = isObject(o.bbox) ? o.bbox : undefined;
  const [xmin, xmax, ymin, ymax] = [number(b?.xmin), number(b?.xmax), number(b?.ymin), number(b?.ymax)];
  if (xmin !== null && xmax !== null && ymin !== null && ymax !== null) return { lon: (xmin + xmax) / 2, lat: (ymin + ymax) / 2 };
  return { lat: null, lon: null };
}

/** An Overture Maps `places` record (one per line, as `overturemaps` or DuckDB writes them). */
export function overtureToPlace(line: JsonObject): ReadResult {
  // A GeoJSON Feature line (`overturemaps download -f geojsonseq`) carries the place in `properties`.
  const o = unwrapFeature(line);
  const sourceId = text(o.id);
  if (!sourceId) return { ok: false, reason: 'no id' };
  const names = isObject(o.names) ? o.names : {};
  const name = text(names.primary);
  if (!name) return { ok: false, reason: 'no name' };
  const common = isObject(names.common) ? names.common : {};
  const localised: Record<string, string> = {};
  for (const [lang, v] of Object.entries(common)) {
    const t = text(v);
    if (t && t !== name) localised[lang] = t;
  }
  const cats = isObject(o.categories) ? o.categories : {};
  const alternate = Array.isArray(cats.alternate) ? cats.alternate.map(text) : [];
  const addr = Array.isArray(o.addresses) && isObject(o.addresses[0]) ? o.addresses[0] : {};
  // `open`, `permanently_closed`, `temporarily_closed`; absent in older releases (then open).
  const operatingStatus = text(o.operating_status);
  const brand = isObject(o.brand) && isObject(o.brand.names) ? text(o.brand.names.primary) : null;
  const place: PlaceInput = {
    sourceId,
    name,
    names: Object.keys(localised).length > 0 ? localised : undefined,
    sourceCategories: distinct([text(cats.primary), ...alternate]),
    phone: firstText(o.phones),
    website: firstText(o.websites),
    email: firstText(o.emails),
    street: text(addr.freeform),
    postcode: text(addr.postcode),
    city: text(addr.locality),
    region: text(addr.region),
    countryCode: text(addr.country),
    ...position(o),
    attributes: attributes({
      confidence: number(o.confidence),
      operating_status: operatingStatus,
      brand,
    }),
    closed: operatingStatus !== null && operatingStatus !== 'open',
  };
  return { ok: true, place };
}

export const overtureNdjson: ReaderFactory = {
  format: 'overture-ndjson',
  description: 'Overture Maps places as NDJSON or GeoJSON lines: id, names.primary, categories, addresses, sources…',
  detect: (_path, head) => {
    const line = firstJsonObject(head);
    if (!line) return false;
    const o = unwrapFeature(line);
    return typeof o.id === 'string' && isObject(o.names) && 'primary' in o.names && ('sources' in o || 'addresses' in o || 'categories' in o);
  },
  open: async (path, options) => {
    refuseColumns(options, 'overture-ndjson');
    return openNdjsonReader({ path, options, format: 'overture-ndjson', source: 'overture', prepare: () => overtureToPlace });
  },
};
