import { createRequire } from 'node:module';

type CountryCoder = typeof import('@rapideditor/country-coder');
type RegionFeature = NonNullable<ReturnType<CountryCoder['feature']>>;

/**
 * How close to another country a point must be for the source's country (or the address city) to be
 * believed over the polygon. country-coder's land borders are generalised: on the real extracts the
 * polygon got a point wrong only within about 200 m of the border (the Rhine between Liechtenstein and
 * Switzerland, the streets between Monaco and Beausoleil), so 300 m covers them with a margin.
 */
export const BORDER_TOLERANCE_M = 300;
/** Grid of the cell cache, in degrees: a cell whose surroundings lie in one country answers every point in it. */
const CELL_DEG = 0.01;
const CELL_CACHE_SIZE = 100_000;
const M_PER_DEGREE = 111_320;

/** Where a point is, by country-coder's borders. */
export interface PointCountry {
  /** The ISO code of the territory (Guadeloupe GP, Isle of Man IM) or country the point is in, as GeoNames files cities; null at sea or outside any country. */
  code: string | null;
  /** The country `code` belongs to (FR for GP); equal to `code` for a country. */
  parent: string | null;
}

const TERRITORY = { level: 'territory' } as const;

/**
 * Point-in-polygon country lookup over `@rapideditor/country-coder` (the iD editor's: generalised land
 * borders and coastal waters of every country and territory, in the package; no network). Loaded on first
 * use, so processes that never place a point (the API server) do not pay for building its index.
 *
 * Most points of an import are far from any border: a grid cell whose box, widened by the tolerance,
 * touches a single country is looked up once and answers every later point in it, with no polygon test.
 */
export class CountryBorders {
  private coder: CountryCoder | undefined;
  private readonly cells = new Map<number, PointCountry | null>();

  /** `known`: whether GeoNames files cities under a code (country-coder also has codes such as EA for Ceuta, which GeoNames files under ES). */
  constructor(private readonly known: (code: string) => boolean) {}

  private get cc(): CountryCoder {
    this.coder ??= createRequire(import.meta.url)('@rapideditor/country-coder') as CountryCoder;
    return this.coder;
  }

  /** The territory-or-country code of a feature that GeoNames knows, and its country. */
  private codeOf(feature: RegionFeature | null): PointCountry {
    if (!feature) return { code: null, parent: null };
    const p = feature.properties;
    const parent = p.country ?? p.iso1A2 ?? null;
    const code = p.iso1A2 && this.known(p.iso1A2) ? p.iso1A2 : parent && this.known(parent) ? parent : null;
    return { code, parent: parent && this.known(parent) ? parent : code };
  }

  /** The country of a point (see `PointCountry`). */
  at(lat: number, lon: number): PointCountry {
    const key = Math.floor((lat + 90) / CELL_DEG) * 40_000 + Math.floor((lon + 180) / CELL_DEG);
    const cached = this.cells.get(key);
    if (cached) return cached;
    if (cached === undefined) {
      const whole = this.wholeCell(lat, lon);
      if (this.cells.size >= CELL_CACHE_SIZE) this.cells.clear();
      this.cells.set(key, whole);
      if (whole) return whole;
    }
    return this.codeOf(this.cc.feature([lon, lat], { ...TERRITORY }));
  }

  /** The cell's country when the cell and the tolerance around it lie in one territory only; else null. */
  private wholeCell(lat: number, lon: number): PointCountry | null {
    const south = Math.floor((lat + 90) / CELL_DEG) * CELL_DEG - 90;
    const west = Math.floor((lon + 180) / CELL_DEG) * CELL_DEG - 180;
    const dLat = BORDER_TOLERANCE_M / M_PER_DEGREE;
    const dLon = dLat / Math.max(Math.cos(((Math.abs(lat) + CELL_DEG) * Math.PI) / 180), 0.01);
    const codes = this.codesIn(west - dLon, south - dLat, west + CELL_DEG + dLon, south + CELL_DEG + dLat);
    if (codes.size !== 1) return null;
    const here = this.codeOf(this.cc.feature([lon, lat], { ...TERRITORY }));
    if (here.code === null || !codes.has(here.code)) return null;
    // The box only says no other country is near; the corners say the cell is not partly open sea.
    for (const [y, x] of [
      [south, west],
      [south, west + CELL_DEG],
      [south + CELL_DEG, west],
      [south + CELL_DEG, west + CELL_DEG],
    ] as const) {
      if (this.codeOf(this.cc.feature([x, y], { ...TERRITORY })).code !== here.code) return null;
    }
    return here;
  }

  /** Territory-or-country codes of the land and coastal waters that reach into a box. */
  private codesIn(west: number, south: number, east: number, north: number): Set<string> {
    const codes = new Set<string>();
    const found = this.cc.featuresContaining([west, south, east, north]);
    // The answer lists the smallest features in the box (a country, or a territory or part of one) and then
    // the groups they belong to (their country, regions, unions): only the smallest count.
    const groups = new Set(found.flatMap((f) => f.properties.groups));
    for (const f of found) {
      if (groups.has(f.properties.id)) continue;
      const { code } = this.codeOf(f);
      if (code) codes.add(code);
    }
    return codes;
  }

  /**
   * The codes of the territories or countries other than the point's own (and its country's) within
   * BORDER_TOLERANCE_M of the point: where the polygon may be wrong about the side of the border.
   */
  othersNear(lat: number, lon: number, own: PointCountry): string[] {
    const dLat = BORDER_TOLERANCE_M / M_PER_DEGREE;
    const dLon = dLat / Math.max(Math.cos((Math.abs(lat) * Math.PI) / 180), 0.01);
    const codes = this.codesIn(lon - dLon, lat - dLat, lon + dLon, lat + dLat);
    return [...codes].filter((c) => c !== own.code && c !== own.parent);
  }
}
