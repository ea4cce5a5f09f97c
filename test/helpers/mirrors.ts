import { createHash } from 'node:crypto';
import { copyFileSync, createReadStream, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { dirname, join, normalize, relative, sep } from 'node:path';
import type { FileMetaData } from 'hyparquet';
import { parquetWriteFile } from 'hyparquet-writer';
import { osmDir } from './osm.ts';
import { readParquet, writeParquetLike } from './parquet.ts';
import { buildReplication, sequenceFile, stateText } from './replication.ts';
import { runTool } from './tools.ts';

/**
 * Loopback mirrors of the three publishers' real layouts, built from the shared samples, for the tests and
 * the bench (`bench/market.ts`). One directory holds the three, as `leadatlas market --base-url` expects:
 *
 * - `overture/`: Overture's STAC catalog (the OvertureMaps/stac layout: `catalog.json` → `RELEASE/catalog.json`
 *   → `places/catalog.json` → `place/collection.json` → `00000/00000.json` items with their `bbox` and the
 *   Parquet file as the `aws` asset, and `RELEASE/collections.parquet`, the same items as STAC GeoParquet), the
 *   files under `overture/release/RELEASE/theme=places/type=place/`;
 * - `foursquare/`: a bucket with `release/dt=YYYY-MM-DD/places/parquet/places-NNNNN.parquet`, listed as S3
 *   lists one (ListObjectsV2);
 * - `geofabrik/`: `index-v1.json` naming a country's `.osm.pbf` and its replication feed (`…-updates/`).
 *
 * Asset and index URLs are relative to the document that names them (STAC and Geofabrik's index allow it), so
 * a mirror is valid at any address. `serveMirror` serves the directory on loopback as a static server that
 * answers ranges, `If-Range` and bucket listings, and counts what it sends.
 */

export type Box = [number, number, number, number];
type Row = Record<string, unknown>;

/** A Parquet file of a release as the catalog describes it. */
export interface MirrorPart {
  /** Path under the mirror's root. */
  path: string;
  bbox: Box;
  rows: number;
}

// ---------------------------------------------------------------------------------------------------------
// Overture

/**
 * A row moved by (dlon, dlat), its point and its bbox; `suffix` keeps a copy's id apart from the original's.
 * A moved row's address names `country` (null: none) and no locality: a Boulder address kept on a point in
 * Portugal would file the place in the US (the gazetteer believes a source's country whose city it knows).
 */
export function movedOvertureRow(r: Row, dlon: number, dlat: number, suffix = '', country: string | null = null): Row {
  if (dlon === 0 && dlat === 0 && !suffix) return r;
  const g = r.geometry as { type: string; coordinates: [number, number] };
  const b = r.bbox as { xmin: number; xmax: number; ymin: number; ymax: number };
  const addresses = (r.addresses as Row[] | null) ?? [];
  return {
    ...r,
    ...(suffix ? { id: `${String(r.id)}${suffix}` } : {}),
    addresses: addresses.map((a) => ({ ...a, country, locality: null, region: null, postcode: null })),
    geometry: { type: 'Point', coordinates: [g.coordinates[0] + dlon, g.coordinates[1] + dlat] },
    bbox: { xmin: b.xmin + dlon, xmax: b.xmax + dlon, ymin: b.ymin + dlat, ymax: b.ymax + dlat },
  };
}

/** The box of rows' points (Overture's `bbox` struct, or Foursquare's latitude/longitude). */
export function boxOfRows(rows: Row[]): Box {
  const box: Box = [180, 90, -180, -90];
  for (const r of rows) {
    const b = r.bbox as { xmin: number; xmax: number; ymin: number; ymax: number } | undefined;
    const [x0, y0, x1, y1] = b ? [b.xmin, b.ymin, b.xmax, b.ymax] : [r.longitude, r.latitude, r.longitude, r.latitude].map(Number);
    box[0] = Math.min(box[0], x0!);
    box[1] = Math.min(box[1], y0!);
    box[2] = Math.max(box[2], x1!);
    box[3] = Math.max(box[3], y1!);
  }
  return box;
}

const json = (path: string, value: unknown) => {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(value, null, 1)}\n`);
};

/** Where a release's place files go, under the mirror's root. */
export const overturePartPath = (release: string, i: number) =>
  `overture/release/${release}/theme=places/type=place/part-${String(i).padStart(5, '0')}-c000.parquet`;

/** The STAC GeoParquet of a release's items, in stac-geoparquet's shape (properties lifted to columns). */
function writeCollectionsParquet(path: string, items: Array<{ id: string; bbox: Box; href: string; rows: number }>): void {
  const text = { type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' } as const;
  const double = { type: 'DOUBLE', repetition_type: 'OPTIONAL' } as const;
  parquetWriteFile({
    filename: path,
    schema: [
      { name: 'schema', num_children: 5 },
      { name: 'id', ...text },
      { name: 'collection', ...text },
      { name: 'bbox', repetition_type: 'OPTIONAL', num_children: 4 },
      { name: 'xmin', ...double },
      { name: 'ymin', ...double },
      { name: 'xmax', ...double },
      { name: 'ymax', ...double },
      { name: 'assets', repetition_type: 'OPTIONAL', num_children: 1 },
      { name: 'aws', repetition_type: 'OPTIONAL', num_children: 2 },
      { name: 'href', ...text },
      { name: 'type', ...text },
      { name: 'num_rows', type: 'INT64', repetition_type: 'OPTIONAL' },
    ] as never,
    columnData: [
      { name: 'id', data: items.map((i) => i.id) },
      { name: 'collection', data: items.map(() => 'place') },
      { name: 'bbox', data: items.map((i) => ({ xmin: i.bbox[0], ymin: i.bbox[1], xmax: i.bbox[2], ymax: i.bbox[3] })) as never },
      { name: 'assets', data: items.map((i) => ({ aws: { href: i.href, type: 'application/vnd.apache.parquet' } })) as never },
      { name: 'num_rows', data: items.map((i) => BigInt(i.rows)) as never },
    ],
  });
}

/**
 * Writes a release's STAC tree over parts already written (`parts`, paths under `root`), and adds the release
 * to the root catalog (`releases`, newest first: the first is `latest`). `collectionsParquet: false` leaves
 * out the release's `collections.parquet`, so that readers walk the JSON tree.
 */
export function writeOvertureCatalog(
  root: string,
  releases: string[],
  release: string,
  parts: MirrorPart[],
  collectionsParquet = true,
): void {
  const stac = join(root, 'overture');
  json(join(stac, 'catalog.json'), {
    type: 'Catalog',
    id: 'Overture Releases',
    stac_version: '1.1.0',
    description: 'All Overture Releases',
    links: releases.map((r, i) => ({
      rel: 'child',
      href: `./${r}/catalog.json`,
      type: 'application/json',
      title: i === 0 ? 'Latest Overture Release' : `${r} Overture Release`,
      ...(i === 0 ? { latest: true } : {}),
    })),
    latest: releases[0],
  });
  const releaseDir = join(stac, release);
  json(join(releaseDir, 'catalog.json'), {
    type: 'Catalog',
    id: release,
    stac_version: '1.1.0',
    links: [{ rel: 'child', href: './places/catalog.json', type: 'application/json', title: 'places' }],
    'release:version': release,
  });
  json(join(releaseDir, 'places/catalog.json'), {
    type: 'Catalog',
    id: 'places',
    stac_version: '1.1.0',
    links: [{ rel: 'child', href: './place/collection.json', type: 'application/json', title: 'place' }],
  });
  const items = parts.map((p, i) => ({ id: String(i).padStart(5, '0'), bbox: p.bbox, rows: p.rows, path: p.path }));
  json(join(releaseDir, 'places/place/collection.json'), {
    type: 'Collection',
    id: 'place',
    stac_version: '1.1.0',
    license: 'other',
    extent: { spatial: { bbox: items.map((i) => i.bbox) }, temporal: { interval: [[null, null]] } },
    links: items.map((i) => ({ rel: 'item', href: `./${i.id}/${i.id}.json`, type: 'application/geo+json' })),
  });
  for (const item of items) {
    const at = join(releaseDir, 'places/place', item.id, `${item.id}.json`);
    const [x0, y0, x1, y1] = item.bbox;
    json(at, {
      type: 'Feature',
      stac_version: '1.1.0',
      id: item.id,
      collection: 'place',
      bbox: item.bbox,
      geometry: {
        type: 'Polygon',
        coordinates: [
          [
            [x0, y0],
            [x1, y0],
            [x1, y1],
            [x0, y1],
            [x0, y0],
          ],
        ],
      },
      properties: { num_rows: item.rows, datetime: `${release.slice(0, 10)}T00:00:00Z` },
      assets: {
        aws: {
          href: relative(dirname(at), join(root, item.path)).split(sep).join('/'),
          type: 'application/vnd.apache.parquet',
          roles: ['data'],
        },
      },
      links: [],
    });
  }
  if (collectionsParquet) {
    const path = join(releaseDir, 'collections.parquet');
    writeCollectionsParquet(
      path,
      items.map((i) => ({ ...i, href: relative(releaseDir, join(root, i.path)).split(sep).join('/') })),
    );
  }
}

/**
 * The Boulder GeoParquet as a release of `groups.length` parts: its rows sorted by longitude and cut into equal
 * parts, part k moved by `groups[k]` (dlon, dlat, and the address country the moved rows get; [0, 0] leaves it
 * in Boulder), each written with the sample's schema in row groups of `rowGroupSize`. `keep` filters the rows (a
 * later release without some places).
 */
export async function buildOvertureRelease(
  root: string,
  releases: string[],
  release: string,
  groups: Array<[number, number, (string | null)?]>,
  options: { rowGroupSize?: number; keep?: (row: Row, index: number) => boolean; collectionsParquet?: boolean; sample: string },
): Promise<{ parts: MirrorPart[]; metadata: FileMetaData }> {
  const { metadata, rows } = await readParquet(options.sample);
  const sorted = [...rows].sort(
    (a, b) => (a.geometry as { coordinates: number[] }).coordinates[0]! - (b.geometry as { coordinates: number[] }).coordinates[0]!,
  );
  const size = Math.ceil(sorted.length / groups.length);
  const parts: MirrorPart[] = [];
  groups.forEach(([dlon, dlat, country], k) => {
    const partRows = sorted
      .slice(k * size, (k + 1) * size)
      .map((r) => movedOvertureRow(r, dlon, dlat, '', country ?? null))
      .filter((r, i) => options.keep?.(r, k * size + i) ?? true);
    const path = overturePartPath(release, k);
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeParquetLike(join(root, path), metadata, partRows, { rowGroupSize: options.rowGroupSize ?? 100 });
    parts.push({ path, bbox: boxOfRows(partRows), rows: partRows.length });
  });
  writeOvertureCatalog(root, releases, release, parts, options.collectionsParquet ?? true);
  return { parts, metadata };
}

// ---------------------------------------------------------------------------------------------------------
// Foursquare

/**
 * `unresolved_flags` for the mirror's rows: the shared sample carries none, so a few rows get each flag by
 * their position (every 97th `doesnt_exist`, 89th `closed`, 83rd `privatevenue`, 79th `duplicate`, 73rd
 * `delete`, 71st `relocated`, which drops nothing), the first that applies.
 */
export function mirrorFlags(index: number): string[] {
  for (const [every, flag] of [
    [97, 'doesnt_exist'],
    [89, 'closed'],
    [83, 'privatevenue'],
    [79, 'duplicate'],
    [73, 'delete'],
    [71, 'relocated'],
  ] as const)
    if (index % every === every - 1) return [flag];
  return [];
}

/** The sample's schema with the release's `unresolved_flags` (a list of strings, shaped like `fsq_category_ids`). */
export function withUnresolvedFlags(metadata: FileMetaData): FileMetaData {
  const schema = [...metadata.schema];
  const at = schema.findIndex((e) => e.name === 'fsq_category_ids');
  const list = schema.slice(at, at + 3);
  schema.push({ ...list[0]!, name: 'unresolved_flags' }, list[1]!, list[2]!);
  schema[0] = { ...schema[0]!, num_children: (schema[0]!.num_children ?? 0) + 1 };
  return { ...metadata, schema };
}

export const foursquarePartPath = (dt: string, i: number) =>
  `foursquare/release/${dt}/places/parquet/places-${String(i).padStart(5, '0')}.parquet`;

/** The Foursquare sample as release `dt` in `parts` files of consecutive rows, with `unresolved_flags` (`mirrorFlags`). */
export async function buildFoursquareRelease(
  root: string,
  dt: string,
  parts: number,
  sample: string,
  rowGroupSize = 1000,
): Promise<MirrorPart[]> {
  const { metadata, rows } = await readParquet(sample);
  const flagged = rows.map((r, i) => ({ ...r, unresolved_flags: mirrorFlags(i) }));
  const like = withUnresolvedFlags(metadata);
  const size = Math.ceil(flagged.length / parts);
  const out: MirrorPart[] = [];
  for (let k = 0; k < parts; k++) {
    const partRows = flagged.slice(k * size, (k + 1) * size);
    const path = foursquarePartPath(dt, k);
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeParquetLike(join(root, path), like, partRows, { rowGroupSize });
    out.push({ path, bbox: boxOfRows(partRows), rows: partRows.length });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Geofabrik

export interface GeofabrikMirror {
  /** The region id and the paths under the root of its extract and feed. */
  id: string;
  pbf: string;
  updates: string;
  /** The extract's own replication sequence (its header), and the feed's newest. */
  sequence: number;
  newest: number;
  /** The last state of the data, to compare a followed import with. */
  lastSnapshot: string;
}

/**
 * A Geofabrik server for one country: `index-v1.json` (the region with `iso3166-1:alpha2` and its `pbf` and
 * `updates` URLs, plus a neighbour so the choice is real), the extract as snapshot `sequence` of a feed of
 * `versions` osmium-made change files (`buildReplication`), its header naming that sequence as Geofabrik's do.
 */
export function buildGeofabrikMirror(
  root: string,
  work: string,
  region: { id: string; name: string; country: string; extract: string; continent: string },
  versions: number,
  sequence: number,
): GeofabrikMirror {
  mkdirSync(work, { recursive: true });
  const fixture = buildReplication(work, versions, region.extract);
  const base = join(root, 'geofabrik');
  const updates = `${region.continent}/${region.id}-updates`;
  const pbf = `${region.continent}/${region.id}-latest.osm.pbf`;
  mkdirSync(join(base, updates), { recursive: true });
  for (let v = 1; v <= versions; v++) {
    for (const suffix of ['.osc.gz', '.state.txt']) {
      mkdirSync(dirname(join(base, updates, sequenceFile(v, suffix))), { recursive: true });
      copyFileSync(join(fixture.feed, sequenceFile(v, suffix)), join(base, updates, sequenceFile(v, suffix)));
    }
  }
  writeFileSync(join(base, updates, 'state.txt'), stateText(versions, `2026-01-0${versions}T00:00:00Z`));
  runTool('osmium', [
    'cat',
    '-O',
    fixture.snapshot(sequence),
    '-o',
    join(base, pbf),
    `--output-header=osmosis_replication_sequence_number=${sequence}`,
    `--output-header=osmosis_replication_timestamp=2026-01-0${sequence}T00:00:00Z`,
    '--output-header=osmosis_replication_base_url=https://download.geofabrik.de/' + updates,
  ]);
  const feature = (id: string, country: string[], name: string) => ({
    type: 'Feature',
    properties: {
      id,
      parent: region.continent,
      name,
      'iso3166-1:alpha2': country,
      urls: { pbf: `${region.continent}/${id}-latest.osm.pbf`, updates: `${region.continent}/${id}-updates` },
    },
    geometry: null,
  });
  json(join(base, 'index-v1.json'), {
    type: 'FeatureCollection',
    features: [feature('neighbours', [region.country, 'ZZ'], 'Two countries'), feature(region.id, [region.country], region.name)],
  });
  return { id: region.id, pbf, updates, sequence, newest: versions, lastSnapshot: fixture.snapshot(versions) };
}

// ---------------------------------------------------------------------------------------------------------
// The server

export interface MirrorServer {
  url: string;
  /** Every request: its path (decoded, under the root) and range, in order; bytes of bodies sent, per path. */
  requests: Array<{ path: string; range?: string }>;
  sent: Map<string, number>;
  /** Requests for paths starting with this wait until `release()` (a test cuts an import off there). */
  hold(prefix: string): void;
  release(): void;
  bytesSent(): number;
  close(): Promise<void>;
}

const etagOf = (path: string) => {
  const s = statSync(path);
  return `"${createHash('sha1').update(`${s.size}-${s.mtimeMs}`).digest('hex').slice(0, 16)}"`;
};

/** An S3 ListObjectsV2 answer over a directory: keys under `prefix`, grouped at `delimiter`. */
function listing(dir: string, prefix: string, delimiter: string): string {
  const keys: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, e.name);
      if (e.isDirectory()) walk(full);
      else keys.push(relative(dir, full).split(sep).join('/'));
    }
  };
  walk(dir);
  const contents: string[] = [];
  const prefixes = new Set<string>();
  for (const key of keys.sort()) {
    if (!key.startsWith(prefix)) continue;
    const rest = key.slice(prefix.length);
    const cut = delimiter ? rest.indexOf(delimiter) : -1;
    if (cut >= 0) prefixes.add(prefix + rest.slice(0, cut + 1));
    else contents.push(`<Contents><Key>${key}</Key><Size>${statSync(join(dir, key)).size}</Size></Contents>`);
  }
  return (
    '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' +
    `<Prefix>${prefix}</Prefix><KeyCount>${contents.length + prefixes.size}</KeyCount><IsTruncated>false</IsTruncated>` +
    contents.join('') +
    [...prefixes].map((p) => `<CommonPrefixes><Prefix>${p}</Prefix></CommonPrefixes>`).join('') +
    '</ListBucketResult>'
  );
}

/** Serves `root` on loopback (see the module's comment). */
export async function serveMirror(root: string): Promise<MirrorServer> {
  const requests: MirrorServer['requests'] = [];
  const sent = new Map<string, number>();
  let held: string | undefined;
  let waiting: Array<() => void> = [];
  const count = (path: string, n: number) => sent.set(path, (sent.get(path) ?? 0) + n);
  const answer = (req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams) => {
    const file = join(root, path);
    let stats: ReturnType<typeof statSync>;
    try {
      stats = statSync(file);
    } catch {
      res.writeHead(404).end();
      return;
    }
    if (stats.isDirectory()) {
      if (query.get('list-type') !== '2') {
        res.writeHead(404).end();
        return;
      }
      const body = listing(file, query.get('prefix') ?? '', query.get('delimiter') ?? '');
      res.writeHead(200, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) }).end(body);
      return;
    }
    const etag = etagOf(file);
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const ifRange = req.headers['if-range'];
    if (range && (ifRange === undefined || ifRange === etag)) {
      const start = Number(range[1]);
      const end = Math.min(range[2] ? Number(range[2]) : stats.size - 1, stats.size - 1);
      if (start >= stats.size) {
        res.writeHead(416, { 'content-range': `bytes */${stats.size}` }).end();
        return;
      }
      count(path, end - start + 1);
      res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${stats.size}`, 'content-length': end - start + 1, etag });
      createReadStream(file, { start, end }).pipe(res);
      return;
    }
    count(path, stats.size);
    res.writeHead(200, { 'content-length': stats.size, etag });
    createReadStream(file).pipe(res);
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://mirror');
    const path = normalize(decodeURIComponent(url.pathname)).replace(/^[/\\]+/, '');
    if (path.startsWith('..')) {
      res.writeHead(400).end();
      return;
    }
    requests.push({ path, ...(req.headers.range ? { range: req.headers.range } : {}) });
    if (held !== undefined && path.startsWith(held)) waiting.push(() => answer(req, res, path, url.searchParams));
    else answer(req, res, path, url.searchParams);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/`,
    requests,
    sent,
    hold: (prefix) => {
      held = prefix;
    },
    release: () => {
      held = undefined;
      const go = waiting;
      waiting = [];
      for (const f of go) f();
    },
    bytesSent: () => [...sent.values()].reduce((a, b) => a + b, 0),
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

/** The extract of the shared data a Geofabrik mirror serves for Portugal: Porto. */
export const portoExtract = join(osmDir, 'porto-2020.osm.pbf');
