import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';

/** The country of each real OSM extract (the opening-hours library's public holidays need it). */
const extractCountry: Record<string, string> = {
  'andorra-2026': 'AD',
  'helsinki-center-2019': 'FI',
  'liechtenstein-2024': 'LI',
  'london-center-2020': 'GB',
  'malta-2018': 'MT',
  'monaco-2026': 'MC',
  'munich-center-2020': 'DE',
  'porto-2020': 'PT',
  'tokyo-center': 'JP',
};

export interface RealHoursValue {
  value: string;
  /** Places of the extracts with this value. */
  places: number;
  /** Where the first of them lies, and its country. */
  lat: number;
  lon: number;
  country: string | null;
}

/** Every distinct `opening_hours` value of the real extracts (../shared/data/osm/osm-pois-all.ndjson.gz). */
export async function realHoursValues(): Promise<RealHoursValue[]> {
  const path = new URL('../../../shared/data/osm/osm-pois-all.ndjson.gz', import.meta.url);
  const seen = new Map<string, RealHoursValue>();
  for await (const line of createInterface({ input: createReadStream(path).pipe(createGunzip()) })) {
    const o = JSON.parse(line) as { extract: string; lat: number; lon: number; tags?: Record<string, string> };
    const value = o.tags?.opening_hours?.trim();
    if (!value) continue;
    const known = seen.get(value);
    if (known) known.places++;
    else seen.set(value, { value, places: 1, lat: o.lat, lon: o.lon, country: extractCountry[o.extract] ?? null });
  }
  return [...seen.values()];
}
