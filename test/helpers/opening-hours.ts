import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import type { Db } from '../../src/infra/db/database.ts';
import { type HoursLocation, instantOfWallClock, isOpenAt, parseOpeningHours, timeZoneAt } from '../../src/modules/places/opening-hours.ts';

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

/** Places of a search as the open filter's tests check it: a city or a country, and categories. */
export interface OpenSearchScope {
  cityId?: number;
  countryCode?: string;
  categories: string[];
}

/**
 * The not-closed places of `scope` with hours, each with the opening-hours library's own answer at an instant
 * (ms) or a local time (wall-clock ms): the public ids of the open ones, and how many are unparsed. Where the
 * library knows no holidays for the country, without holidays (docs/opening-hours.md).
 */
export async function libraryOpenAt(db: Db, scope: OpenSearchScope, at: { instantMs: number } | { localMs: number }) {
  let query = db.kysely
    .selectFrom('places')
    .select(['public_id', 'opening_hours', 'lat', 'lon', 'country_code', 'region'])
    .where('category', 'in', scope.categories)
    .where('closed_at', 'is', null)
    .where('opening_hours', 'is not', null);
  if (scope.cityId !== undefined) query = query.where('city_id', '=', scope.cityId);
  if (scope.countryCode !== undefined) query = query.where('country_code', '=', scope.countryCode);
  const rows = await query.execute();
  const open = new Set<string>();
  let unparsed = 0;
  for (const r of rows) {
    const tz = timeZoneAt(r.lat, r.lon)!;
    const instant = 'instantMs' in at ? at.instantMs : instantOfWallClock(at.localMs, tz);
    const stateWith = (where: HoursLocation | null) => {
      const parsed = parseOpeningHours(r.opening_hours!.trim(), where);
      return parsed.ok ? isOpenAt(parsed.hours, tz, instant) : parsed;
    };
    let state = stateWith({ lat: r.lat!, lon: r.lon!, countryCode: r.country_code, region: r.region });
    if (typeof state !== 'boolean' && /no holidays/i.test(state.reason)) state = stateWith(null);
    if (typeof state !== 'boolean') unparsed++;
    else if (state) open.add(r.public_id);
  }
  return { open, unparsed, withHours: rows.length };
}

/** The next day (UTC) at 18:00, as `open_at` takes it: inside the window whatever today is. */
export function tomorrowAt18(): string {
  return `${new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)}T18:00`;
}
