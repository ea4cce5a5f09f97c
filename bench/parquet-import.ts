/**
 * Parquet import (issue 23): category coverage on the real samples, then speed and memory on a resampled
 * GeoParquet file against NDJSON of the same rows, and the bytes a `--bbox` import reads over HTTP.
 *
 *   node --import tsx bench/parquet-import.ts [--rows 1000000] [--row-group 100000] [--keep] [--build-only] [--coverage-only] [--bbox-only] [--parquet-first]
 *
 * `--keep` keeps the resampled files in var/bench/parquet/ (a later run with the same sizes reuses them);
 * `--build-only` stops once they are written; `--bbox-only` writes the Parquet file alone and runs only its `--bbox`
 * import (the bytes a city costs on a file too large to import whole here).
 *
 * Coverage: the share of the records that carry a category which get a project category, read by the
 * Parquet readers from the Overture Boulder file (current schema, with and without its `categories`
 * column) and the Foursquare sample; the baseline, in the same run, is the reader before this work, which
 * took Overture's `categories.primary`/`alternate` only (so nothing once a release drops that column).
 *
 * Speed: the Boulder rows resampled to `--rows` rows: copy k of the 3,545 rows is moved to its own "city"
 * on a grid over the globe (ids made unique with `-k`), so the file is spatially ordered as Overture's are;
 * written with the sample's codec (snappy) and schema, `--row-group` rows per row group. The same rows as
 * NDJSON (what `overturemaps download` writes) are the baseline. Each file is imported by the compiled CLI
 * in a process of its own into a fresh SQLite file with `--no-conflate` (conflation's cost is measured
 * separately, bench/import.ts), peak RSS from GNU time. Then `--bbox` of one city out of the Parquet file,
 * served by a range server on loopback that counts the bytes it sends.
 */

import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { ParquetWriter } from 'hyparquet-writer';
import { fileWriter } from 'hyparquet-writer/src/node.js';
import { prepareDatabase } from '../src/bootstrap.ts';
import { openDatabase } from '../src/infra/db/database.ts';
import type { EnrichedChunk } from '../src/modules/importers/enriched-chunks.ts';
import type { ReaderFactory } from '../src/modules/importers/importer.types.ts';
import { parquetPlaces } from '../src/modules/importers/readers/parquet-places.ts';
import type { PlaceInput } from '../src/modules/places/place-input.ts';
import { loadClassifier } from '../src/modules/taxonomy/classifier.ts';
import { readParquet, writeParquetLike } from '../test/helpers/parquet.ts';
import { argValue } from './lib/args.ts';
import { compileForBench } from './lib/build.ts';
import { timed } from './lib/timed.ts';

const root = resolve(import.meta.dirname, '..');
const data = resolve(root, '../shared/data');
const work = join(root, 'var/bench/parquet');
const rowsWanted = Number(argValue('--rows', '1000000'));
const rowGroup = Number(argValue('--row-group', '100000'));
mkdirSync(work, { recursive: true });
const boulder = join(data, 'places/overture-places-boulder-3545.parquet');
const fsq = join(data, 'places/fsq-os-places-sample-10k-2024-11-19.parquet');

// ---------------------------------------------------------------------------------------------------------
// Coverage

async function places(factory: ReaderFactory, path: string): Promise<PlaceInput[]> {
  const out: PlaceInput[] = [];
  for await (const r of (await factory.open(path, {})).records()) if (r.ok) out.push(r.place);
  return out;
}

const classifier = loadClassifier();
function coverage(source: string, list: Array<Pick<PlaceInput, 'sourceCategories'>>): string {
  const carrying = list.filter((p) => p.sourceCategories.length > 0);
  const mapped = carrying.filter((p) => classifier.classify(source, { sourceId: 'x', name: 'x', ...p }).length > 0).length;
  return `${mapped.toLocaleString('en')} of ${carrying.length.toLocaleString('en')} (${((100 * mapped) / Math.max(1, carrying.length)).toFixed(1)} %)`;
}

const { metadata: boulderMeta, rows: boulderRows } = await readParquet(boulder);
const stripped = join(work, 'boulder-without-categories.parquet');
writeParquetLike(stripped, boulderMeta, boulderRows, { drop: ['categories'] });
/** The reader before this work: `categories.primary` and `alternate` only. */
const oldReader = (rows: Array<Record<string, unknown>>) =>
  rows.map((r) => {
    const c = r.categories as { primary?: string | null; alternate?: string[] | null } | null | undefined;
    return { sourceCategories: [c?.primary, ...(c?.alternate ?? [])].filter((s): s is string => !!s) };
  });
console.log('Category coverage (records that carry a category → a project category)');
console.log(`  Overture Boulder, current reader:               ${coverage('overture', await places(parquetPlaces, boulder))}`);
console.log(`  Overture Boulder without categories, current:   ${coverage('overture', await places(parquetPlaces, stripped))}`);
console.log(`  Overture Boulder, baseline (categories only):   ${coverage('overture', oldReader(boulderRows))}`);
console.log(
  `  Overture Boulder without categories, baseline:  0 of ${boulderRows.filter((r) => (r.taxonomy as { primary?: string } | null)?.primary).length} (the column is gone)`,
);
console.log(`  Foursquare sample:                              ${coverage('foursquare', await places(parquetPlaces, fsq))}`);
if (process.argv.includes('--coverage-only')) process.exit(0);

// ---------------------------------------------------------------------------------------------------------
// The resampled file

const copies = Math.ceil(rowsWanted / boulderRows.length);
/**
 * Copy k's offset: a grid of cities 3.5° apart in longitude and 3° in latitude, 100 to a row, within ±60°
 * latitude, walked row after row in alternate directions: consecutive copies are neighbours, so each row group
 * covers one compact stretch of the grid, as a release sorted by place covers one region per row group (a walk
 * that jumped back across the globe at each row's end gave a row group spanning every longitude).
 */
const offset = (k: number) => {
  const row = Math.floor(k / 100) % 40;
  const column = row % 2 === 0 ? k % 100 : 99 - (k % 100);
  return { dlon: column * 3.5 - 170 - -105.27, dlat: row * 3 - 60 - 40.01 };
};
const moved = (r: Record<string, unknown>, k: number): Record<string, unknown> => {
  if (k === 0) return r;
  const { dlon, dlat } = offset(k);
  const g = r.geometry as { coordinates: [number, number] };
  const b = r.bbox as { xmin: number; xmax: number; ymin: number; ymax: number };
  return {
    ...r,
    id: `${String(r.id)}-${k}`,
    geometry: { type: 'Point', coordinates: [g.coordinates[0] + dlon, g.coordinates[1] + dlat] },
    bbox: { xmin: b.xmin + dlon, xmax: b.xmax + dlon, ymin: b.ymin + dlat, ymax: b.ymax + dlat },
  };
};

const parquetFile = join(work, `overture-${rowsWanted}-rg${rowGroup}.parquet`);
const ndjsonFile = join(work, `overture-${rowsWanted}.ndjson`);
/** `--bbox-only`: the Parquet file and its `--bbox` import alone (no NDJSON, no full imports). */
const bboxOnly = process.argv.includes('--bbox-only');
const started = performance.now();
const built = existsSync(parquetFile) && (bboxOnly || existsSync(ndjsonFile));
if (!built) {
  const topLevel: string[] = [];
  for (let i = 1; i < boulderMeta.schema.length; ) {
    topLevel.push(boulderMeta.schema[i]!.name);
    let end = i + 1;
    for (let pending = boulderMeta.schema[i]!.num_children ?? 0; pending > 0; pending--, end++)
      pending += boulderMeta.schema[end]!.num_children ?? 0;
    i = end;
  }
  const writer = new ParquetWriter({
    writer: fileWriter(`${parquetFile}.part`),
    schema: boulderMeta.schema as never,
    codec: 'SNAPPY',
    kvMetadata: (boulderMeta.key_value_metadata ?? []).filter((kv) => kv.key !== 'ARROW:schema'),
  });
  const ndjson = bboxOnly ? null : createWriteStream(`${ndjsonFile}.part`);
  let batch: Array<Record<string, unknown>> = [];
  let written = 0;
  const flush = async () => {
    writer.write({ columnData: topLevel.map((name) => ({ name, data: batch.map((r) => r[name]) as never })), rowGroupSize: rowGroup });
    if (ndjson && !ndjson.write(batch.map((r) => JSON.stringify(r)).join('\n') + '\n')) await once(ndjson, 'drain');
    batch = [];
  };
  for (let k = 0; k < copies && written < rowsWanted; k++) {
    for (const r of boulderRows) {
      if (written++ >= rowsWanted) break;
      batch.push(moved(r, k));
      if (batch.length === rowGroup) await flush();
    }
  }
  if (batch.length > 0) await flush();
  writer.finish();
  renameSync(`${parquetFile}.part`, parquetFile);
  if (ndjson) {
    ndjson.end();
    await once(ndjson, 'finish');
    renameSync(`${ndjsonFile}.part`, ndjsonFile);
  }
}
const mb = (path: string) => (statSync(path).size / 1e6).toFixed(1);
console.log(
  `\nResampled file: ${rowsWanted.toLocaleString('en')} rows, ${rowGroup.toLocaleString('en')} rows per row group, snappy: ${mb(parquetFile)} MB Parquet${bboxOnly ? '' : `, ${mb(ndjsonFile)} MB NDJSON`} (${built ? 'kept from an earlier run' : `built in ${((performance.now() - started) / 1000).toFixed(0)} s`})`,
);
if (process.argv.includes('--build-only')) process.exit(0);

// ---------------------------------------------------------------------------------------------------------
// Imports

const load = compileForBench();
async function cliImport(label: string, file: string, args: string[] = []) {
  const dbPath = join(work, `${label}.db`);
  rmSync(dbPath, { force: true });
  const db = openDatabase(`sqlite:${dbPath}`);
  await prepareDatabase(db);
  await db.close();
  const run = timed(process.execPath, [join(load.dir, 'cli/main.js'), 'import', '--no-conflate', ...args, file], {
    env: { ...process.env, DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: 'error' },
  });
  rmSync(dbPath, { force: true });
  if ('error' in run) return run;
  const summary = /imported (\d+),.* in ([\d.]+) s, (\d+) places\/s/.exec(run.stderr);
  return { ...run, imported: Number(summary?.[1]), placesPerSecond: Number(summary?.[3]) };
}

const report = (label: string, r: Awaited<ReturnType<typeof cliImport>>) =>
  'error' in r
    ? `  ${label}: ${r.error}`
    : `  ${label}: ${r.imported.toLocaleString('en')} places, ${r.placesPerSecond.toLocaleString('en')} places/s, ${r.seconds.toFixed(1)} s wall, ${r.cpuSeconds.toFixed(1)} s CPU, peak RSS ${r.peakRssMB.toFixed(0)} MB`;

if (!bboxOnly) {
  console.log(
    `\nImport into SQLite (compiled CLI, --no-conflate); load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
  );
  // `--parquet-first`: the same two imports in the other order (does the first one's write-back slow the second?).
  const parquetFirst = process.argv.includes('--parquet-first');
  const fromParquetFirst = parquetFirst ? await cliImport('parquet', parquetFile) : undefined;
  if (fromParquetFirst) console.log(report('GeoParquet       ', fromParquetFirst));
  const fromNdjson = await cliImport('ndjson', ndjsonFile);
  console.log(report('NDJSON (baseline)', fromNdjson));
  const fromParquet = fromParquetFirst ?? (await cliImport('parquet', parquetFile));
  if (!fromParquetFirst) console.log(report('GeoParquet       ', fromParquet));
  if (!('error' in fromNdjson) && !('error' in fromParquet)) {
    console.log(`  Parquet against NDJSON: ${(fromNdjson.placesPerSecond / fromParquet.placesPerSecond).toFixed(2)}× the time per place`);
  }

  // The writer alone: the first places of the Parquet file read and enriched beforehand (on this thread, not
  // timed), then written by the import's writing half on one thread, as `leadatlas import` writes them: what
  // the writer can take when it never waits for the reading thread. At most 200,000 places (they are held in memory).
  {
    type Store = typeof import('../src/modules/importers/import-store.ts');
    type Host = typeof import('../src/modules/importers/import-worker.host.ts');
    type Enr = typeof import('../src/modules/importers/enricher.ts');
    type Readers = typeof import('../src/modules/importers/readers/parquet-places.ts');
    type Writer = typeof import('../src/modules/places/places.writer.ts');
    type Database = typeof import('../src/infra/db/database.ts');
    type Boot = typeof import('../src/bootstrap.ts');
    const [{ storeChunks, DEFAULT_BATCH_SIZE }, { inlineChunks }, { loadEnricher }, readers, { placeWriterChunkSize }, database, boot] =
      await Promise.all([
        load<Store>('modules/importers/import-store.js'),
        load<Host>('modules/importers/import-worker.host.js'),
        load<Enr>('modules/importers/enricher.js'),
        load<Readers>('modules/importers/readers/parquet-places.js'),
        load<Writer>('modules/places/places.writer.js'),
        load<Database>('infra/db/database.js'),
        load<Boot>('bootstrap.js'),
      ]);
    const dbPath = join(work, 'writer.db');
    rmSync(dbPath, { force: true });
    const db = database.openDatabase(`sqlite:${dbPath}`);
    await boot.prepareDatabase(db);
    const input = await inlineChunks(readers.parquetPlaces, parquetFile, {}, loadEnricher(), placeWriterChunkSize(db));
    const held: EnrichedChunk[] = [];
    let places = 0;
    for await (const chunk of input.chunks) {
      held.push(chunk);
      places += chunk.rows.count;
      if (places >= 200_000) break;
    }
    const began = performance.now();
    const cpuBefore = process.cpuUsage();
    await storeChunks(
      db,
      {
        dataset: 'writer',
        source: input.source,
        format: 'parquet',
        path: parquetFile,
        fileSha256: '',
        startedAt: new Date().toISOString(),
      },
      (async function* () {
        yield* held;
      })(),
      { batchSize: DEFAULT_BATCH_SIZE, largeFile: true, conflate: false },
    );
    const seconds = (performance.now() - began) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    await db.close();
    rmSync(dbPath, { force: true });
    console.log(
      `  the writer alone (${places.toLocaleString('en')} places enriched beforehand, one thread): ${Math.round(places / seconds).toLocaleString('en')} places/s, ${seconds.toFixed(1)} s wall, ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s CPU`,
    );
  }
}

// One city (copy 1234 of the grid, or the last one) over HTTP. The range server runs on a thread of its own:
// `timed` waits for the CLI synchronously, which would leave a server on this thread unable to answer.
const sentBytes = new BigInt64Array(new SharedArrayBuffer(8));
const server = new Worker(
  `const { createServer } = require('node:http');
  const { readFileSync } = require('node:fs');
  const { workerData, parentPort } = require('node:worker_threads');
  const body = readFileSync(workerData.file);
  const server = createServer((req, res) => {
    const range = /^bytes=(\\d+)-(\\d+)$/.exec(req.headers.range || '');
    if (!range) return void res.writeHead(416).end();
    const start = Number(range[1]);
    const end = Math.min(Number(range[2]), body.length - 1);
    Atomics.add(workerData.sent, 0, BigInt(end - start + 1));
    res.writeHead(206, { 'content-range': 'bytes ' + start + '-' + end + '/' + body.length }).end(body.subarray(start, end + 1));
  });
  server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));`,
  { eval: true, workerData: { file: parquetFile, sent: sentBytes } },
);
const [port] = (await once(server, 'message')) as [number];
const city = Math.min(1234, copies - 1);
const { dlon, dlat } = offset(city);
const bbox = [-105.3 + dlon, 39.95 + dlat, -105.2 + dlon, 40.1 + dlat].map((v) => v.toFixed(4)).join(',');
const byBbox = await cliImport('bbox', `http://127.0.0.1:${port}/overture.parquet`, ['--bbox', bbox, '--allow-private-networks']);
await server.terminate();
const sent = Number(sentBytes[0]);
const fileBytes = statSync(parquetFile).size;
console.log(`\n--bbox ${bbox} (one city, copy ${city}) over HTTP from a range server on loopback`);
console.log(report('GeoParquet --bbox', byBbox));
console.log(`  bytes sent: ${sent.toLocaleString('en')} of ${fileBytes.toLocaleString('en')} (${((100 * sent) / fileBytes).toFixed(2)} %)`);

if (!process.argv.includes('--keep')) rmSync(work, { recursive: true, force: true });
