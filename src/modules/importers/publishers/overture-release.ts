import { parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { AppError } from '../../../infra/errors.ts';
import type { Box } from '../../geo/country-area.ts';
import type { HttpReadOptions } from '../importer.types.ts';
import { httpRangeBuffer } from '../readers/http-range.ts';
import { fetchJson, unreachable } from './fetch.ts';

/**
 * Overture's releases as its STAC catalog lists them (the layout of the OvertureMaps/stac repository):
 * `catalog.json` names every release (`links` rel `child` to `RELEASE/catalog.json`, and `latest`); a release's
 * `catalog.json` has a child catalog per theme (`places/catalog.json`), which has a collection per type
 * (`place/collection.json`), whose items (`00000/00000.json`) are the type's Parquet files, each with its
 * `bbox` and its file as an asset (`aws`: the https URL). `collections.parquet` at the root of each release holds
 * the same items as one STAC GeoParquet file (columns `id`, `collection`, `bbox`, `assets`, `num_rows`), read
 * first: one file instead of a request per item; the JSON tree is read when it is missing.
 */

/** The public catalog: the default of `--base-url`. */
export const OVERTURE_STAC_URL = 'https://stac.overturemaps.org/';

const CATALOG_BYTES = 8 << 20;

/** One Parquet file of a release, with the box its rows lie in (null when the catalog gives none). */
export interface ReleasePart {
  url: string;
  bbox: Box | null;
  rows: number | null;
}

export interface PublishedRelease {
  /** The release as the publisher names it (`2026-04-15.0`, `dt=2026-04-08`). */
  release: string;
  parts: ReleasePart[];
}

interface StacLink {
  rel?: string;
  href?: string;
  title?: string;
  latest?: boolean;
}

const linksOf = (doc: unknown, rel: string): StacLink[] =>
  Array.isArray((doc as { links?: unknown }).links)
    ? ((doc as { links: StacLink[] }).links.filter((l) => l && l.rel === rel && typeof l.href === 'string') as StacLink[])
    : [];

/** The last directory of a link's target: `./2026-04-15.0/catalog.json` → `2026-04-15.0`. */
const directoryOf = (href: string): string => href.replace(/\/[^/]*$/, '').replace(/^.*\//, '');

function boxOf(value: unknown): Box | null {
  if (Array.isArray(value) && value.length >= 4) {
    const n = value.slice(0, 4).map(Number);
    return n.every(Number.isFinite) ? (n as Box) : null;
  }
  const b = value as { xmin?: unknown; ymin?: unknown; xmax?: unknown; ymax?: unknown } | null;
  if (!b || typeof b !== 'object') return null;
  const n = [b.xmin, b.ymin, b.xmax, b.ymax].map(Number);
  return n.every(Number.isFinite) ? (n as Box) : null;
}

/** The Parquet file of an item's assets: `aws` (Overture's https asset) first, else any Parquet asset. */
function parquetHref(assets: unknown): string | null {
  if (!assets || typeof assets !== 'object') return null;
  const all = Object.entries(assets as Record<string, { href?: unknown; type?: unknown } | null>);
  const ordered = [...all.filter(([k]) => k === 'aws'), ...all.filter(([k]) => k !== 'aws')];
  for (const [, a] of ordered) {
    if (a && typeof a.href === 'string' && (a.type === 'application/vnd.apache.parquet' || /\.parquet$/.test(a.href))) return a.href;
  }
  return null;
}

/**
 * The Parquet files of `type` (`place`) in theme `theme` (`places`) of a release: `release` is `latest` or a
 * release id the catalog lists (anything else is refused with the ids it has).
 */
export async function overtureRelease(
  baseUrl: string,
  release: string,
  http: HttpReadOptions,
  theme = 'places',
  type = 'place',
): Promise<PublishedRelease> {
  const rootUrl = new URL('catalog.json', baseUrl).href;
  const root = await fetchJson(rootUrl, http, CATALOG_BYTES, 'base-url');
  const children = linksOf(root, 'child');
  const ids = children.map((l) => directoryOf(l.href!));
  const flagged = children.find((l) => l.latest === true) ?? children[0];
  const named = (root as { latest?: unknown }).latest;
  const latest = typeof named === 'string' ? named : flagged ? directoryOf(flagged.href!) : undefined;
  const id = release === 'latest' ? latest : release;
  const link = children.find((l) => directoryOf(l.href!) === id);
  if (!id || !link) {
    throw new AppError('unknown_value', `the catalog at ${rootUrl} has no release ${release}`, {
      errors: [{ field: 'release', message: 'not a release of the catalog', allowed: ['latest', ...ids] }],
    });
  }
  const releaseCatalog = new URL(link.href!, rootUrl).href;
  const parts =
    (await fromGeoParquet(new URL('collections.parquet', releaseCatalog).href, http, type)) ??
    (await fromJsonTree(releaseCatalog, http, theme, type));
  if (parts.length === 0) throw unreachable('release', releaseCatalog, `the release lists no ${theme}/${type} files`);
  parts.sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0));
  return { release: id, parts };
}

/** The items of `collections.parquet`; undefined when the release has no such file (or it cannot be read). */
async function fromGeoParquet(url: string, http: HttpReadOptions, type: string): Promise<ReleasePart[] | undefined> {
  let rows: Array<Record<string, unknown>>;
  try {
    const file = await httpRangeBuffer(url, http);
    const metadata = await parquetMetadataAsync(file);
    const present = new Set(metadata.schema.slice(1).map((e) => e.name));
    const columns = ['id', 'collection', 'bbox', 'assets', 'num_rows'].filter((c) => present.has(c));
    rows = await parquetReadObjects({ file, metadata, columns, compressors });
  } catch {
    return undefined;
  }
  const parts: ReleasePart[] = [];
  for (const row of rows) {
    if (row.collection !== undefined && row.collection !== type) continue;
    const href = parquetHref(row.assets);
    if (!href) continue;
    const rowsCount = Number(row.num_rows);
    parts.push({ url: new URL(href, url).href, bbox: boxOf(row.bbox), rows: Number.isFinite(rowsCount) ? rowsCount : null });
  }
  return parts;
}

/** The items of the JSON tree: release catalog → theme catalog → type collection → one document per item. */
async function fromJsonTree(releaseCatalog: string, http: HttpReadOptions, theme: string, type: string): Promise<ReleasePart[]> {
  const child = async (url: string, name: string): Promise<string> => {
    const doc = await fetchJson(url, http, CATALOG_BYTES, 'release');
    const link = linksOf(doc, 'child').find((l) => directoryOf(l.href!) === name || l.title === name);
    if (!link) throw unreachable('release', url, `no ${name} in the catalog`);
    return new URL(link.href!, url).href;
  };
  const collectionUrl = await child(await child(releaseCatalog, theme), type);
  const collection = await fetchJson(collectionUrl, http, CATALOG_BYTES, 'release');
  const itemUrls = linksOf(collection, 'item').map((l) => new URL(l.href!, collectionUrl).href);
  const parts: ReleasePart[] = [];
  // A few at a time: a release has hundreds of items, each a small document.
  for (let i = 0; i < itemUrls.length; i += 8) {
    const items = await Promise.all(itemUrls.slice(i, i + 8).map((u) => fetchJson(u, http, CATALOG_BYTES, 'release')));
    items.forEach((item, k) => {
      const href = parquetHref((item as { assets?: unknown }).assets);
      if (!href) return;
      const rows = Number((item as { properties?: { num_rows?: unknown } }).properties?.num_rows);
      parts.push({
        url: new URL(href, itemUrls[i + k]!).href,
        bbox: boxOf((item as { bbox?: unknown }).bbox),
        rows: Number.isFinite(rows) ? rows : null,
      });
    });
  }
  return parts;
}
