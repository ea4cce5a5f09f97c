import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../../../infra/errors.ts';
import { guardedStream } from '../../../infra/http/guarded-get.ts';
import type { HttpReadOptions } from '../importer.types.ts';
import { fetchJson, unreachable } from './fetch.ts';

/**
 * Geofabrik's extracts by country: `index-v1.json` (a GeoJSON FeatureCollection, one feature per region with
 * `properties.id`, `name`, `iso3166-1:alpha2` (a list) and `urls.pbf`, `urls.updates`, its replication feed).
 */

/** The public download server: the default of `--base-url` (the index is `index-v1.json` under it). */
export const GEOFABRIK_URL = 'https://download.geofabrik.de/';

/** The full index carries every region's polygon: a few tens of MB. */
const INDEX_BYTES = 128 << 20;

export interface CountryExtract {
  /** Geofabrik's region id (`portugal`). */
  id: string;
  name: string;
  pbf: string;
  /** The replication feed of the extract (`…/portugal-updates`), when the index names one. */
  updates: string | null;
}

interface IndexFeature {
  properties?: { id?: string; name?: string; 'iso3166-1:alpha2'?: string[]; urls?: { pbf?: string; updates?: string } };
}

/**
 * The extract of a country: the region whose `iso3166-1:alpha2` is the country alone (a region of several
 * countries, `israel-and-palestine`, only when no region is the country alone). A country Geofabrik has no
 * extract for is refused.
 */
export async function countryExtract(baseUrl: string, country: string, http: HttpReadOptions): Promise<CountryExtract> {
  const indexUrl = new URL('index-v1.json', baseUrl).href;
  const index = (await fetchJson(indexUrl, http, INDEX_BYTES, 'base-url')) as { features?: IndexFeature[] };
  const regions = (index.features ?? [])
    .map((f) => f.properties ?? {})
    .filter((p) => p.urls?.pbf && p['iso3166-1:alpha2']?.includes(country));
  const alone = regions.filter((p) => p['iso3166-1:alpha2']!.length === 1);
  const region = alone[0] ?? regions[0];
  if (!region) {
    throw new AppError('not_found', `${indexUrl} has no extract of ${country}`, {
      errors: [{ field: 'country', message: 'Geofabrik has no extract of this country' }],
    });
  }
  return {
    id: region.id ?? country.toLowerCase(),
    name: region.name ?? country,
    pbf: new URL(region.urls!.pbf!, indexUrl).href,
    updates: region.urls?.updates ? new URL(region.urls.updates, indexUrl).href : null,
  };
}

export interface DownloadOptions {
  http: HttpReadOptions;
  /** The largest file accepted. */
  maxBytes: number;
  onProgress?: (bytes: number, total: number) => void;
}

/**
 * Downloads `url` to `path`, resumably: the bytes come to `path.part`, which a later call continues with a
 * range request (`If-Range` with the validator the first answer gave, so a file the server replaced in the
 * meantime is fetched whole again), and `path` appears only once the file is whole. A file already at `path`
 * is kept as it is (the caller names it by what it holds). Returns the file's size.
 */
export async function downloadFile(url: string, path: string, options: DownloadOptions): Promise<number> {
  const done = await stat(path).catch(() => undefined);
  if (done) return done.size;
  await mkdir(dirname(path), { recursive: true });
  const part = `${path}.part`;
  const meta = `${path}.part.json`;
  const have = (await stat(part).catch(() => undefined))?.size ?? 0;
  const validator =
    have > 0 ? ((JSON.parse(await readFile(meta, 'utf8').catch(() => '{}')) as { validator?: string }).validator ?? '') : '';
  const resuming = have > 0 && validator !== '';
  const headers: Record<string, string> = { ...options.http.headers };
  if (resuming) Object.assign(headers, { range: `bytes=${have}-`, 'if-range': validator });
  let res: Awaited<ReturnType<typeof guardedStream>>;
  try {
    res = await guardedStream(url, {
      allowPrivate: options.http.allowPrivate === true,
      timeoutMs: options.http.timeoutMs ?? 30_000,
      headers,
    });
  } catch (error) {
    throw unreachable('base-url', url, (error as Error).message);
  }
  const status = res.statusCode ?? 0;
  if (status !== 200 && !(resuming && status === 206)) {
    res.destroy();
    throw unreachable('base-url', url, `HTTP ${status}`);
  }
  const from = status === 206 ? have : 0;
  const total = from + Number(res.headers['content-length'] ?? Number.NaN);
  if (total > options.maxBytes) {
    res.destroy();
    throw unreachable('base-url', url, `the file is larger than the ${options.maxBytes} bytes allowed`);
  }
  const next = res.headers.etag ?? res.headers['last-modified'] ?? '';
  if (from === 0) await writeFile(meta, JSON.stringify({ url, validator: next }));
  let bytes = from;
  const count = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      if (bytes > options.maxBytes) return callback(new Error(`the file is larger than the ${options.maxBytes} bytes allowed`));
      options.onProgress?.(bytes, Number.isFinite(total) ? total : bytes);
      callback(null, chunk);
    },
  });
  try {
    await pipeline(res, count, createWriteStream(part, { flags: from > 0 ? 'a' : 'w' }));
  } catch (error) {
    throw unreachable('base-url', url, (error as Error).message);
  }
  if (Number.isFinite(total) && bytes !== total) throw unreachable('base-url', url, `the download ended at ${bytes} of ${total} bytes`);
  await rename(part, path);
  await rm(meta, { force: true });
  return bytes;
}
