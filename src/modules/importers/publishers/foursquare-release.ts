import { AppError } from '../../../infra/errors.ts';
import type { HttpReadOptions } from '../importer.types.ts';
import { asDirectory, fetchDocument, unreachable } from './fetch.ts';
import type { PublishedRelease } from './overture-release.ts';

/**
 * Foursquare OS Places as Foursquare publishes it: a bucket whose `release/dt=YYYY-MM-DD/places/parquet/`
 * holds one monthly release's Parquet files. The bucket is listed as S3 lists one (ListObjectsV2:
 * `?list-type=2&prefix=…&delimiter=/`, pages joined by `continuation-token`), which any S3-compatible host
 * or mirror answers; `--header` sends a token to a host that wants one.
 */

/** The public bucket: the default of `--base-url`. */
export const FOURSQUARE_BUCKET_URL = 'https://fsq-os-places-us-east-1.s3.amazonaws.com/';

const LISTING_BYTES = 8 << 20;
/** Pages of a listing followed at most (1,000 keys each): a release has tens of files. */
const MAX_PAGES = 100;

const xmlText = (s: string): string =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
const tags = (xml: string, tag: string): string[] =>
  [...xml.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, 'g'))].map((m) => xmlText(m[1]!));

/** Every key (with its size) and common prefix under `prefix`. */
async function listBucket(base: string, prefix: string, http: HttpReadOptions): Promise<{ keys: string[]; prefixes: string[] }> {
  const keys: string[] = [];
  const prefixes: string[] = [];
  let token: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = new URLSearchParams({ 'list-type': '2', prefix, delimiter: '/', ...(token ? { 'continuation-token': token } : {}) });
    const url = `${base}?${query}`;
    const body = await fetchDocument(url, http, LISTING_BYTES, 'base-url');
    if (!body) throw unreachable('base-url', url, 'HTTP 404: not a bucket listing');
    const xml = body.toString('utf8');
    if (!xml.includes('<ListBucketResult')) throw unreachable('base-url', url, 'not an S3 bucket listing (ListBucketResult)');
    for (const contents of xml.match(/<Contents>[\s\S]*?<\/Contents>/g) ?? []) keys.push(...tags(contents, 'Key'));
    for (const common of xml.match(/<CommonPrefixes>[\s\S]*?<\/CommonPrefixes>/g) ?? []) prefixes.push(...tags(common, 'Prefix'));
    token = tags(xml, 'NextContinuationToken')[0];
    if (tags(xml, 'IsTruncated')[0] !== 'true' || !token) return { keys, prefixes };
  }
  throw unreachable('base-url', base, `a listing of more than ${MAX_PAGES} pages`);
}

/** `release` is `latest` or `dt=YYYY-MM-DD` (a bare date is taken as that too). */
export async function foursquareRelease(baseUrl: string, release: string, http: HttpReadOptions): Promise<PublishedRelease> {
  const base = asDirectory(baseUrl);
  const { prefixes } = await listBucket(base, 'release/', http);
  const releases = prefixes
    .map((p) => /^release\/(dt=\d{4}-\d{2}-\d{2})\/$/.exec(p)?.[1])
    .filter((r): r is string => r !== undefined)
    .sort();
  const wanted = release === 'latest' ? releases.at(-1) : /^\d{4}-\d{2}-\d{2}$/.test(release) ? `dt=${release}` : release;
  if (!wanted || !releases.includes(wanted)) {
    throw new AppError('unknown_value', `${base} has no release ${release}`, {
      errors: [{ field: 'release', message: 'not a release of the bucket', allowed: ['latest', ...releases] }],
    });
  }
  const { keys } = await listBucket(base, `release/${wanted}/places/parquet/`, http);
  const parts = keys
    .filter((k) => k.endsWith('.parquet'))
    .sort()
    .map((k) => ({ url: new URL(k, base).href, bbox: null, rows: null }));
  if (parts.length === 0) throw unreachable('release', base, `release ${wanted} has no places/parquet files`);
  return { release: wanted, parts };
}
