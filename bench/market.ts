/**
 * A country from a release too large to read whole (issue 34): `leadatlas import overture --country PT` and
 * `leadatlas market PT` against loopback mirrors of the publishers' layouts (`test/helpers/mirrors.ts`).
 *
 *   node --import tsx bench/market.ts [--parts 20] [--rows-per-part 250000] [--row-group 100000] [--country PT] [--skip-market]
 *
 * The Overture release: the Boulder GeoParquet's 3,545 rows copied onto the land of the world (1° cells that
 * country-coder files under a country; each copy moved to its cell, its ids suffixed, its address country
 * cleared so that the border decides) and cut into `--parts` files by area: ten bands of longitude of about
 * 36° (none across the antimeridian; one boundary at −8°, which Portugal's mainland straddles) times north
 * and south of 25° N. Each part
 * gets `--rows-per-part` rows: every cell of the country the bench imports gets a copy, the part's other
 * cells are sampled evenly (cycled when it has fewer cells than copies). Within a part the copies follow a
 * Hilbert curve over their cells, as a release sorted by area is. Written as the releases are: zstd (the
 * `zstd` command compresses each page), `--row-group` rows per row group, bbox columns with statistics; then
 * the release's STAC catalog and collections.parquet. Foursquare: the 10,000-row sample in 4 files with
 * `unresolved_flags`; Geofabrik: Porto's extract and two osmium-made change files. Built once into
 * var/bench/market/ and reused.
 *
 * Measured, against the mirror served by a process of its own that counts the bytes it sends:
 * - the files `import overture --country PT` opens and the bytes it reads, against the release's bytes, and
 *   against the bytes of the row groups that hold a kept place (every column of them: what a reader of whole
 *   row groups would read);
 * - baselines computed in the same run: the release's bytes (a download), and the footers of the parts the
 *   catalog spares (what a reader without the catalog reads before it can skip a part);
 * - the places kept against a full scan of every row of the opened parts, each enriched and filtered by the
 *   border (the parts not opened have boxes that miss the country's);
 * - `leadatlas market PT` on the whole mirror: wall time, CPU, peak RSS, summary.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { ParquetWriter } from 'hyparquet-writer';
import { fileWriter } from 'hyparquet-writer/src/node.js';
import { openDatabase } from '../src/infra/db/database.ts';
import { type Box, boxesMeet, countryBoxes } from '../src/modules/geo/country-area.ts';
import { enrichPlace } from '../src/modules/importers/enrich.ts';
import { loadEnricher } from '../src/modules/importers/enricher.ts';
import { fileBuffer, topLevelColumns } from '../src/modules/importers/readers/parquet.ts';
import { parquetPlaces } from '../src/modules/importers/readers/parquet-places.ts';
import {
  boxOfRows,
  buildFoursquareRelease,
  buildGeofabrikMirror,
  type MirrorPart,
  movedOvertureRow,
  overturePartPath,
  portoExtract,
  writeOvertureCatalog,
} from '../test/helpers/mirrors.ts';
import { readParquet } from '../test/helpers/parquet.ts';
import { argValue } from './lib/args.ts';
import { compileForBench } from './lib/build.ts';
import { timed } from './lib/timed.ts';

const root = resolve(import.meta.dirname, '..');
const data = resolve(root, '../shared/data');
const parts = Number(argValue('--parts', '20'));
const rowsPerPart = Number(argValue('--rows-per-part', '250000'));
const rowGroup = Number(argValue('--row-group', '100000'));
const country = argValue('--country', 'PT');
const release = '2026-04-15.0';
const work = join(root, 'var/bench/market', `${parts}x${rowsPerPart}-rg${rowGroup}-${country}`);
const mirror = join(work, 'mirror');
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

// ---------------------------------------------------------------------------------------------------------
// The mirror

type CountryCoder = typeof import('@rapideditor/country-coder');
const cc = createRequire(import.meta.url)('@rapideditor/country-coder') as CountryCoder;

/** Hilbert index of (x, y) on an n × n grid (n a power of two). */
function hilbert(n: number, x: number, y: number): number {
  let d = 0;
  for (let s = n / 2; s >= 1; s /= 2) {
    const rx = (x & s) > 0 ? 1 : 0;
    const ry = (y & s) > 0 ? 1 : 0;
    d += s * s * ((3 * rx) ^ ry);
    if (ry === 0) {
      if (rx === 1) {
        x = s - 1 - x;
        y = s - 1 - y;
      }
      [x, y] = [y, x];
    }
  }
  return d;
}

/** Longitude bands of the parts (none across the antimeridian; Portugal's mainland straddles −8). */
const BANDS = [-180, -144, -108, -72, -40, -8, 28, 64, 100, 140, 180];
/** The part of a cell: its band of longitude, north or south of 25° N. */
const bandOf = (lon: number, lat: number) => (BANDS.findIndex((b, i) => lon >= b && lon < BANDS[i + 1]!) * 2 + (lat >= 25 ? 1 : 0)) % parts;

/** zstd of one page, by the `zstd` command (Node 20 has no zstd compressor). */
function zstd(input: Uint8Array): Uint8Array {
  const run = spawnSync('zstd', ['-3', '-c', '-q'], { input, maxBuffer: 1 << 30 });
  if (run.status !== 0) throw new Error(`zstd failed: ${run.stderr}`);
  return new Uint8Array(run.stdout);
}

async function buildOverture(): Promise<MirrorPart[]> {
  const { metadata, rows } = await readParquet(join(data, 'places/overture-places-boulder-3545.parquet'));
  const copiesPerPart = Math.ceil(rowsPerPart / rows.length);
  const cells: Array<Array<{ lon: number; lat: number; own: boolean }>> = Array.from({ length: parts }, () => []);
  for (let lat = -56; lat < 72; lat++)
    for (let lon = -180; lon < 180; lon++) {
      const code = cc.iso1A2Code([lon + 0.5, lat + 0.5]);
      if (code) cells[bandOf(lon, lat)]!.push({ lon, lat, own: code === country });
    }
  const topLevel = topLevelColumns(metadata);
  const out: MirrorPart[] = [];
  let copy = 0;
  for (let p = 0; p < parts; p++) {
    const own = cells[p]!.filter((c) => c.own);
    const others = cells[p]!.filter((c) => !c.own);
    if (own.length + others.length === 0) throw new Error(`part ${p} has no land: use fewer parts`);
    const picked = [...own];
    for (let k = 0; picked.length < copiesPerPart; k++)
      picked.push(
        others.length > 0
          ? others[Math.floor((k * others.length) / Math.max(1, copiesPerPart - own.length)) % others.length]!
          : own[k % own.length]!,
      );
    picked.sort((a, b) => hilbert(512, a.lon + 180, a.lat + 90) - hilbert(512, b.lon + 180, b.lat + 90));
    const path = overturePartPath(release, p);
    mkdirSync(join(mirror, path, '..'), { recursive: true });
    const writer = new ParquetWriter({
      writer: fileWriter(`${join(mirror, path)}.part`),
      schema: metadata.schema as never,
      codec: 'ZSTD',
      compressors: { ZSTD: zstd },
      kvMetadata: (metadata.key_value_metadata ?? []).filter((kv) => kv.key !== 'ARROW:schema'),
    });
    let batch: Array<Record<string, unknown>> = [];
    const box: Box = [180, 90, -180, -90];
    let written = 0;
    const flush = () => {
      const b = boxOfRows(batch);
      [box[0], box[1], box[2], box[3]] = [Math.min(box[0], b[0]), Math.min(box[1], b[1]), Math.max(box[2], b[2]), Math.max(box[3], b[3])];
      writer.write({ columnData: topLevel.map((name) => ({ name, data: batch.map((r) => r[name]) as never })), rowGroupSize: rowGroup });
      batch = [];
    };
    for (const cell of picked) {
      copy++;
      // Copies of one cell sit side by side within it, so that every copy is a place of its own.
      const dlon = cell.lon + 0.1 + (copy % 8) * 0.1 - -105.3;
      const dlat = cell.lat + 0.1 + (Math.floor(copy / 8) % 8) * 0.1 - 40.0;
      for (const r of rows) {
        if (written >= rowsPerPart) break;
        batch.push(movedOvertureRow(r, dlon, dlat, `-${copy}`, null));
        written++;
        if (batch.length === rowGroup) flush();
      }
    }
    if (batch.length > 0) flush();
    writer.finish();
    renameSync(`${join(mirror, path)}.part`, join(mirror, path));
    out.push({ path, bbox: box, rows: written });
    process.stdout.write(`  part ${p}: ${written.toLocaleString('en')} rows, ${mb(statSync(join(mirror, path)).size)}\n`);
  }
  writeOvertureCatalog(mirror, [release], release, out);
  return out;
}

const partsFile = join(work, 'parts.json');
let overtureParts: MirrorPart[];
if (existsSync(partsFile)) overtureParts = JSON.parse(readFileSync(partsFile, 'utf8')) as MirrorPart[];
else {
  rmSync(mirror, { recursive: true, force: true });
  mkdirSync(mirror, { recursive: true });
  const started = performance.now();
  console.log(`Building the mirror in ${work} (load ${loadavg()})`);
  overtureParts = await buildOverture();
  await buildFoursquareRelease(mirror, 'dt=2024-11-19', 4, join(data, 'places/fsq-os-places-sample-10k-2024-11-19.parquet'));
  buildGeofabrikMirror(
    mirror,
    join(work, 'osm'),
    { id: 'portugal', name: 'Portugal', country: 'PT', extract: portoExtract, continent: 'europe' },
    2,
    1,
  );
  writeFileSync(partsFile, JSON.stringify(overtureParts));
  console.log(`  built in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}
const releaseBytes = overtureParts.reduce((n, p) => n + statSync(join(mirror, p.path)).size, 0);
const releaseRows = overtureParts.reduce((n, p) => n + p.rows, 0);
const boxes = countryBoxes(country)!;
const meeting = overtureParts.filter((p) => boxes.some((b) => boxesMeet(b, p.bbox)));
console.log(
  `\nOverture release: ${overtureParts.length} parts, ${releaseRows.toLocaleString('en')} rows, ${mb(releaseBytes)} (zstd, ${rowGroup.toLocaleString('en')} rows per row group); ${meeting.length} parts meet ${country}'s boxes`,
);

// ---------------------------------------------------------------------------------------------------------
// The server and the imports

const server = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench/lib/mirror-server.ts'), mirror], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const first = await new Promise<string>((done) => createInterface({ input: server.stdout! }).once('line', done));
const { url, stats } = JSON.parse(first) as { url: string; stats: string };
const sentSince = async (reset: boolean) =>
  ((await (await fetch(`${stats}${reset ? 'reset' : ''}`)).json()) as { sent: Record<string, number> }).sent;

const load = compileForBench();
function cli(label: string, args: string[]) {
  const dbPath = join(work, `${label}.db`);
  rmSync(dbPath, { force: true });
  return {
    dbPath,
    run: timed(process.execPath, [join(load.dir, 'cli/main.js'), ...args], {
      env: { ...process.env, DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: 'error' },
    }),
  };
}
const describe = (r: ReturnType<typeof timed>) =>
  'error' in r ? r.error : `${r.seconds.toFixed(1)} s wall, ${r.cpuSeconds.toFixed(1)} s CPU, peak RSS ${r.peakRssMB.toFixed(0)} MB`;

try {
  await sentSince(true);
  console.log(`\nimport overture --country ${country} (compiled CLI, load ${loadavg()})`);
  const imported = cli('overture', [
    'import',
    'overture',
    '--country',
    country,
    '--base-url',
    `${url}overture/`,
    '--allow-private-networks',
    '--no-conflate',
  ]);
  const sent = await sentSince(false);
  console.log(`  ${describe(imported.run)}`);
  if (!('error' in imported.run)) console.log(`  ${imported.run.stderr.trim().split('\n').slice(-2).join('\n  ')}`);
  const partBytes = Object.entries(sent).filter(([p]) => p.startsWith('overture/release/'));
  const readBytes = Object.values(sent).reduce((a, b) => a + b, 0);
  console.log(
    `  files opened: ${partBytes.length} of ${overtureParts.length}; bytes read over HTTP: ${readBytes.toLocaleString('en')} of the release's ${releaseBytes.toLocaleString('en')} (${((100 * readBytes) / releaseBytes).toFixed(2)} %; catalog and collections.parquet included)`,
  );

  // Kept places, and the row groups that hold them.
  const db = openDatabase(`sqlite:${imported.dbPath}`);
  const kept = new Set(
    (await db.kysely.selectFrom('places').select('source_id').where('source', '=', 'overture').execute()).map((r) => r.source_id),
  );
  await db.close();
  let keptGroupBytes = 0;
  let keptGroups = 0;
  let spareFooters = 0;
  for (const part of overtureParts) {
    const file = await fileBuffer(join(mirror, part.path));
    const metadata = await parquetMetadataAsync(file);
    if (!meeting.includes(part)) {
      spareFooters += metadata.metadata_length + 8;
      await file.close();
      continue;
    }
    let start = 0;
    for (const group of metadata.row_groups) {
      const n = Number(group.num_rows);
      const ids = await parquetReadObjects({ file, metadata, columns: ['id'], compressors, rowStart: start, rowEnd: start + n });
      if (ids.some((r) => kept.has(String(r.id)))) {
        keptGroups++;
        keptGroupBytes += group.columns.reduce((s, c) => s + Number(c.meta_data?.total_compressed_size ?? 0), 0);
      }
      start += n;
    }
    await file.close();
  }
  console.log(
    `  row groups holding a kept place: ${keptGroups}, ${keptGroupBytes.toLocaleString('en')} bytes; read over HTTP / those: ${(readBytes / keptGroupBytes).toFixed(2)}×`,
  );
  console.log(
    `  baselines (same release): downloading it, ${releaseBytes.toLocaleString('en')} bytes (${(releaseBytes / readBytes).toFixed(0)}× the bytes read); without the catalog, the footers of the ${overtureParts.length - meeting.length} other parts on top: +${spareFooters.toLocaleString('en')} bytes and ${overtureParts.length - meeting.length} more files opened`,
  );

  // The full scan of the opened parts: every row, enriched, the border applied.
  const began = performance.now();
  const scanned = new Set<string>();
  let rowsScanned = 0;
  for (const part of meeting) {
    const reader = await parquetPlaces.open(join(mirror, part.path), {});
    for await (const r of reader.records()) {
      rowsScanned++;
      if (!r.ok) continue;
      const e = enrichPlace(reader, r.place, loadEnricher());
      if (e.ok && e.record.country_code === country) scanned.add(e.record.source_id);
    }
  }
  const same = scanned.size === kept.size && [...scanned].every((id) => kept.has(id));
  console.log(
    `  full scan of the ${meeting.length} parts (${rowsScanned.toLocaleString('en')} rows, ${((performance.now() - began) / 1000).toFixed(0)} s): ${scanned.size.toLocaleString('en')} places in ${country}; the import kept ${kept.size.toLocaleString('en')}: ${same ? 'the same places' : 'DIFFERENT'}`,
  );

  if (!process.argv.includes('--skip-market')) {
    console.log(`\nmarket ${country} on the whole mirror (compiled CLI, load ${loadavg()})`);
    const market = cli('market', ['market', country, '--base-url', url, '--allow-private-networks', '--cache-dir', join(work, 'cache')]);
    console.log(`  ${describe(market.run)}`);
    if (!('error' in market.run))
      console.log(
        `  ${[
          ...market.run.stderr
            .trim()
            .split('\n')
            .filter((l) => / files read; /.test(l)),
          ...market.run.stdout.trim().split('\n'),
        ].join('\n  ')}`,
      );
    rmSync(join(work, 'cache'), { recursive: true, force: true });
  }
} finally {
  server.kill();
}
