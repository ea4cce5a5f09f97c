/**
 * Import throughput: places per second for the merged OpenStreetMap file and for NDJSON, each into a fresh
 * SQLite file, next to osm2pgsql importing the same .osm.pbf into the local PostgreSQL, in one run; then
 * a country-sized .osm.pbf: wall time and peak memory of `leadatlas import` against osm2pgsql's.
 *
 *   node --import tsx bench/import.ts [--ndjson-lines 500000] [--ndjson-only] [--no-postgres]
 *                                     [--country-copies 44] [--pbf-copies 10] [--no-extracts] [--keep]
 *                                     [--conflation-only]
 *
 * Conflation's cost (`conflationSection`, `countryConflationSection`): each import against the same import
 * with `--no-conflate` in the same run; `--conflation-only` runs just that, on the NDJSON and the
 * country-like file.
 *
 * The NDJSON file (`--ndjson-lines`, resampled from the real POIs by bench/lib/ndjson.ts) is imported by
 * `leadatlas import` on both dialects side by side, each in a process of its own (the compiled CLI, as a
 * user runs it): into a fresh SQLite file, and into a throwaway schema of the local PostgreSQL (dropped
 * after); then PostgreSQL's own `COPY … FROM STDIN` of the same rows (the imported `places` rows, dumped
 * with `COPY … TO STDOUT` outside the timing) into a plain table of the same columns, without indexes or
 * constraints, as the baseline of what the server can take. Places/s is the import's own figure (from
 * reading to the last commit), peak RSS and CPU time are the CLI process's (GNU time): PostgreSQL's
 * backend, which does the server's share of the work, is not in them. `--no-postgres` leaves PostgreSQL
 * out; `--ndjson-only` stops after the NDJSON comparison (the rest takes minutes).
 *
 * The country-like file (`--country-copies`, default 44: 50.26 million nodes; 0 skips it) is that many
 * renumbered copies of the Andorra, Liechtenstein and Malta extracts merged into one sorted file
 * (bench/lib/country-like.ts), with a file of half as many copies beside it; both are built once with
 * osmium and cached in var/bench/. `leadatlas import` runs on each as a user runs it (the compiled CLI in
 * a process of its own, into a fresh SQLite file), and osm2pgsql on the larger one as one runs it for a
 * file of that size: `--slim` (the database can then follow change files, which LeadAtlas will too) with
 * the node cache the osm2pgsql manual advises (the file's size in MB), without `--flat-nodes` (which the
 * manual keeps for the planet and continent-sized extracts: it takes 8 bytes × the largest node id on
 * disk). Peak RSS comes from GNU time for both (Debian package time); PostgreSQL's own processes, which do
 * part of osm2pgsql's work, are not in its figure.
 *
 * Two more comparisons with osm2pgsql follow, to tell start-up from throughput:
 * - the merged file `--pbf-copies` times over (default 10; 0 skips it): copies with their ids moved apart
 *   (`osmium renumber`, Debian package osmium-tool) merged into one sorted file, built before any timing;
 * - every other `.osm.pbf` in the OSM folder (whole regional extracts, every object, as users download
 *   them), unless `--no-extracts`.
 *
 * The imports run the compiled JavaScript, as `leadatlas import` does: the sources are compiled with the
 * project's build settings into var/bench-build/ first (outside the timed span). Under tsx the import
 * worker would compile TypeScript on every start, inside the timed span, which no user ever waits for.
 *
 * Environment: BENCH_OSM_DIR (default ../shared/data/osm), BENCH_PG_URL (default
 * postgres://postgres@127.0.0.1:5432/test; osm2pgsql gets a database of its own, created and dropped here).
 */
import { spawnSync } from 'node:child_process';
import { createReadStream, createWriteStream, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import type { ImportSummary } from '../src/modules/importers/import.service.ts';
import { argValue } from './lib/args.ts';
import { compileForBench } from './lib/build.ts';
import { type CountryLikeFile, countryLikeExtracts, countryLikePbf } from './lib/country-like.ts';
import { buildNdjson } from './lib/ndjson.ts';
import { timed } from './lib/timed.ts';

const ndjsonLines = Number(argValue('--ndjson-lines', '500000'));
if (!Number.isInteger(ndjsonLines) || ndjsonLines < 1000) throw new Error('--ndjson-lines must be a whole number of at least 1000');
const keep = process.argv.includes('--keep');
const pbfCopies = Number(argValue('--pbf-copies', '10'));
if (!Number.isInteger(pbfCopies) || pbfCopies < 0 || pbfCopies > 100) throw new Error('--pbf-copies must be a whole number from 0 to 100');
const extracts = !process.argv.includes('--no-extracts');
const countryCopies = Number(argValue('--country-copies', '44'));
const ndjsonOnly = process.argv.includes('--ndjson-only');
const conflationOnly = process.argv.includes('--conflation-only');
const withPostgres = !process.argv.includes('--no-postgres');
if (!Number.isInteger(countryCopies) || countryCopies < 0 || countryCopies > 200)
  throw new Error('--country-copies must be a whole number from 0 to 200');

const osmDir = resolve(process.env.BENCH_OSM_DIR ?? resolve(import.meta.dirname, '../../shared/data/osm'));
const pbfPath = join(osmDir, 'osm-pois-all.osm.pbf');
const ndjsonSource = join(osmDir, 'osm-pois-all.ndjson.gz');
const pgUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const work = mkdtempSync(join(tmpdir(), 'leadatlas-bench-import-'));

const load = compileForBench();
const { openDatabase } = await load<typeof import('../src/infra/db/database.ts')>('infra/db/database.js');
const { prepareDatabase } = await load<typeof import('../src/bootstrap.ts')>('bootstrap.js');
const { runImport } = await load<typeof import('../src/modules/importers/import.service.ts')>('modules/importers/import.service.js');

async function leadatlasImport(label: string, file: string): Promise<{ summary: ImportSummary; cpuSeconds: number }> {
  const db = openDatabase(`sqlite:${join(work, `${label}.db`)}`);
  try {
    await prepareDatabase(db);
    // As `leadatlas import` runs it: reading and enriching on a worker thread (which loads the taxonomy
    // and gazetteer itself, inside the timed span) while this thread writes.
    const cpu = process.cpuUsage();
    // Default options, as `leadatlas import FILE` runs (transactions of 50,000 places).
    const summary = await runImport(db, null, file);
    const used = process.cpuUsage(cpu);
    return { summary, cpuSeconds: (used.user + used.system) / 1e6 };
  } finally {
    await db.close();
  }
}

/**
 * osm2pgsql with its default style (pgsql output, all objects), timed from start to exit; `options` as
 * one runs it for the file's size (none: everything in memory, for small files).
 */
async function osm2pgsqlImport(file: string, options: string[] = []): Promise<{ seconds: number; peakRssMB: number } | { error: string }> {
  const which = spawnSync('osm2pgsql', ['--version']);
  if (which.error) return { error: 'osm2pgsql is not installed (Debian package osm2pgsql)' };
  const database = `bench_osm2pgsql_${process.pid}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${database}`);
    const target = new pg.Client({ connectionString: pgUrl.replace(/\/[^/?]+(\?|$)/, `/${database}$1`) });
    await target.connect();
    try {
      await target.query('CREATE EXTENSION postgis');
    } catch (error) {
      return { error: `PostGIS is missing for osm2pgsql (Debian package postgresql-15-postgis-3): ${(error as Error).message}` };
    } finally {
      await target.end();
    }
    const url = new URL(pgUrl);
    const run = timed('osm2pgsql', [
      '--create',
      '--number-processes',
      '2',
      ...options,
      '-d',
      database,
      '-H',
      url.hostname,
      '-P',
      url.port || '5432',
      '-U',
      url.username || 'postgres',
      file,
    ]);
    return 'error' in run ? run : { seconds: run.seconds, peakRssMB: run.peakRssMB };
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${database}`);
    await admin.end();
  }
}

type CliRun = {
  seconds: number;
  peakRssMB: number;
  cpuSeconds: number;
  places: number;
  /** The import's own figures (its summary line): from reading the file to the last commit. */
  importSeconds: number;
  placesPerSecond: number;
};

/** Migrates the database at `url` and gives it its reference data (outside a timed import). */
async function migrated(url: string): Promise<void> {
  const db = openDatabase(url);
  try {
    await prepareDatabase(db);
  } finally {
    await db.close();
  }
}

/** `leadatlas import FILE` in a process of its own, into `url` (migrated already); its figures and its summary line's. */
function cliRun(url: string, file: string, args: string[] = []): CliRun | { error: string } {
  const run = timed(process.execPath, [join(load.dir, 'cli/main.js'), 'import', ...args, file], {
    env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'error' },
  });
  if ('error' in run) return run;
  // printImportSummary: "… imported N, updated N, unchanged N, … in S s, R places/s"
  const summary = /imported (\d+), updated (\d+), unchanged (\d+),.* in ([\d.]+) s, (\d+) places\/s/.exec(run.stderr);
  if (!summary) return { error: `no import summary in: ${run.stderr.trim().split('\n').slice(-3).join(' ')}` };
  const [, imported, updated, unchanged, importSeconds, placesPerSecond] = summary.map(Number);
  return {
    seconds: run.seconds,
    peakRssMB: run.peakRssMB,
    cpuSeconds: run.cpuSeconds,
    places: imported! + updated! + unchanged!,
    importSeconds: importSeconds!,
    placesPerSecond: placesPerSecond!,
  };
}

/**
 * `leadatlas import FILE` as a user runs it: the compiled CLI in a process of its own (which applies the
 * migrations, already applied here outside the timing, then imports), into a fresh SQLite file.
 */
async function cliImport(label: string, file: string, args: string[] = []): Promise<CliRun | { error: string }> {
  const dbPath = join(work, `${label}.db`);
  await migrated(`sqlite:${dbPath}`);
  const run = cliRun(`sqlite:${dbPath}`, file, args);
  if ('error' in run) return run;
  const counted = openDatabase(`sqlite:${dbPath}`);
  try {
    const places = (counted.sqlite!.prepare('SELECT count(*) AS n FROM places').get() as { n: number }).n;
    return { ...run, places };
  } finally {
    await counted.close();
    rmSync(dbPath, { force: true });
  }
}

/** `url` with its connections' search_path set to `schema`. */
const inSchema = (url: string, schema: string) =>
  `${url}${url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;

type CopyRun = { seconds: number; rows: number };

/**
 * `leadatlas import FILE` into a throwaway schema of the local PostgreSQL (migrated and given its
 * reference data first, outside the timing), then the baseline: the imported rows, dumped with `COPY
 * places TO STDOUT` into a file, copied back with `COPY … FROM STDIN` into a plain table of the same
 * columns (`LIKE places`: no index, no key, no trigger), timed. The schema is dropped after.
 */
async function postgresImport(file: string): Promise<{ ours: CliRun | { error: string }; copy: CopyRun | { error: string } }> {
  const schema = `bench_import_${process.pid}`;
  const url = inSchema(pgUrl, schema);
  const admin = new pg.Client({ connectionString: pgUrl });
  try {
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
  } catch (error) {
    await admin.end().catch(() => {});
    const message = `PostgreSQL at ${pgUrl}: ${(error as Error).message}`;
    return { ours: { error: message }, copy: { error: message } };
  }
  try {
    await migrated(url);
    const ours = cliRun(url, file);
    if ('error' in ours) return { ours, copy: { error: 'no rows to copy' } };
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const dump = join(work, 'places.copy');
      await pipeline(client.query(copyStreams.to('COPY places TO STDOUT')), createWriteStream(dump));
      await client.query('CREATE TABLE copy_baseline (LIKE places)');
      const started = performance.now();
      const copy = client.query(copyStreams.from('COPY copy_baseline FROM STDIN'));
      await pipeline(createReadStream(dump), copy);
      const seconds = (performance.now() - started) / 1000;
      rmSync(dump, { force: true });
      return { ours, copy: { seconds, rows: copy.rowCount } };
    } finally {
      await client.end();
    }
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

/** The `.osm.pbf` reader alone in this process (no enrichment, no writing): its time and what it kept located. */
async function readOnly(
  file: string,
): Promise<{ seconds: number; records: number; gathered: { nodes: number; memberWays: number; blobs: number } }> {
  const { OsmPbfReader } = await load<typeof import('../src/modules/importers/readers/osm-pbf.ts')>('modules/importers/readers/osm-pbf.js');
  const reader = new OsmPbfReader(file, statSync(file).size, 'osm');
  const started = performance.now();
  let records = 0;
  for await (const _ of reader.records()) records++;
  return { seconds: (performance.now() - started) / 1000, records, gathered: reader.gathered! };
}

/** Seconds or hours, for a projection. */
const duration = (seconds: number) => (seconds < 3600 ? `${(seconds / 60).toFixed(0)} min` : `${(seconds / 3600).toFixed(1)} h`);

/** The country-like file and its half: LeadAtlas's time and peak memory on both, osm2pgsql's on the larger. */
async function countryLikeSection(ndjsonPlacesPerSecond: number): Promise<void> {
  const cache = resolve(import.meta.dirname, '../var/bench');
  let full: CountryLikeFile;
  let half: CountryLikeFile;
  try {
    full = countryLikePbf(osmDir, cache, countryCopies, console.log);
    half = countryLikePbf(osmDir, cache, Math.max(1, Math.floor(countryCopies / 2)), console.log);
  } catch (error) {
    console.log(`\ncountry-like file not built: ${(error as Error).message}`);
    return;
  }
  const mb = (bytes: number) => Math.round(bytes / 1e6);
  const sizeMB = mb(statSync(full.path).size);
  const osm2pgsqlOptions = ['--slim', '--cache', String(Math.max(100, sizeMB))];
  const m = (n: number) => (n / 1e6).toFixed(2);
  console.log(
    `\ncountry-like .osm.pbf: ${countryCopies} renumbered copies of ${countryLikeExtracts.join(', ')}: ` +
      `${m(full.nodes)} M nodes, ${m(full.ways)} M ways, ${full.relations} relations, ${sizeMB} MB ` +
      `(half: ${Math.floor(countryCopies / 2)} copies, ${m(half.nodes)} M nodes)`,
  );
  // Each LeadAtlas import twice, the two files in turn and osm2pgsql between the rounds: a peak RSS moves
  // with when the garbage collectors run, which other tenants' load shifts; the figures are the means.
  const ourRuns = [];
  const halfRuns = [];
  ourRuns.push(await cliImport('country-full', full.path));
  halfRuns.push(await cliImport('country-half', half.path));
  const theirs = await osm2pgsqlImport(full.path, osm2pgsqlOptions);
  ourRuns.push(await cliImport('country-full', full.path));
  halfRuns.push(await cliImport('country-half', half.path));
  const reading = await readOnly(full.path);
  // Baseline of conflation's cost: the same import leaving its records unconflated.
  const unconflated = await cliImport('country-full-no-conflate', full.path, ['--no-conflate']);

  const rows: string[][] = [['run', 'places', 'wall s', 'peak RSS MB', 'M nodes/s']];
  const row = (label: string, file: CountryLikeFile, r: { seconds: number; peakRssMB: number; places?: number } | { error: string }) =>
    rows.push(
      'error' in r
        ? [label, r.error, '', '', '']
        : [label, r.places === undefined ? '—' : String(r.places), r.seconds.toFixed(1), r.peakRssMB.toFixed(0), m(file.nodes / r.seconds)],
    );
  ourRuns.forEach((r, i) => row(`leadatlas import (${countryCopies} copies), run ${i + 1}`, full, r));
  halfRuns.forEach((r, i) => row(`leadatlas import (${Math.floor(countryCopies / 2)} copies), run ${i + 1}`, half, r));
  row(`osm2pgsql ${osm2pgsqlOptions.join(' ')} (${countryCopies} copies)`, full, theirs);
  row(`leadatlas import --no-conflate (${countryCopies} copies)`, full, unconflated);
  rows.push([
    `the .osm.pbf reader alone (${countryCopies} copies, no writing)`,
    String(reading.records),
    reading.seconds.toFixed(1),
    '—',
    m(full.nodes / reading.seconds),
  ]);
  printTable(rows);
  const { nodes, memberWays, blobs } = reading.gathered;
  console.log(
    `located by the reader: ${nodes} nodes (${((100 * nodes) / full.nodes).toFixed(2)}% of the file's), ${memberWays} member ways, ` +
      `${blobs} blobs: 16·N + 32·W + 33·B = ${((16 * nodes + 32 * memberWays + 33 * blobs) / 2 ** 20).toFixed(1)} MiB, ` +
      `gathering peak 17·N = ${((17 * nodes) / 2 ** 20).toFixed(1)} MiB (docs/importing-osm.md, "Memory")`,
  );
  type Measured = { seconds: number; peakRssMB: number; places: number };
  const mean = (runs: Array<Measured | { error: string }>) => {
    const ok = runs.filter((r): r is Measured => !('error' in r));
    if (ok.length < runs.length) return undefined;
    const average = (f: (r: Measured) => number) => ok.reduce((sum, r) => sum + f(r), 0) / ok.length;
    return { seconds: average((r) => r.seconds), peakRssMB: average((r) => r.peakRssMB), places: ok[0]!.places };
  };
  const ours = mean(ourRuns);
  const ourHalf = mean(halfRuns);
  if (!ours || !ourHalf) return;
  if (!('error' in unconflated)) {
    console.log(
      `conflation's cost on the country-like file: ${(ours.seconds / unconflated.seconds).toFixed(2)}× the import without it (mean of the runs ÷ --no-conflate)`,
    );
  }
  const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
  console.log(
    `peak RSS, mean of the runs: ${ours.peakRssMB.toFixed(0)} MB (target < 1024: ${met(ours.peakRssMB < 1024)}); ` +
      `${Math.floor(countryCopies / 2)} copies ${ourHalf.peakRssMB.toFixed(0)} MB: ${(ours.peakRssMB / ourHalf.peakRssMB).toFixed(3)}× (target ≤ 1.10: ${met(ours.peakRssMB <= 1.1 * ourHalf.peakRssMB)})`,
  );
  if ('error' in theirs) console.log(`osm2pgsql not measured: ${theirs.error}`);
  else {
    const ratio = ours.seconds / theirs.seconds;
    console.log(
      `wall time, mean of the runs: LeadAtlas takes ${ratio.toFixed(2)}× osm2pgsql's (target ≤ 1.00: ${met(ratio <= 1)}); peak RSS ${(ours.peakRssMB / theirs.peakRssMB).toFixed(2)}× osm2pgsql's process's`,
    );
  }
  // On paper: reading every node at the reader's rate, then enriching and writing every place at the NDJSON
  // import's (the threads overlap in a real import, so this errs long; it is checked on this file first).
  // A country's places are taken at this file's share of them (named POIs per node).
  const readRate = full.nodes / reading.seconds;
  const model = (countryNodes: number, places: number) => countryNodes / readRate + places / ndjsonPlacesPerSecond;
  console.log(
    `model: nodes ÷ ${m(readRate)} M nodes/s (the reader alone) + places ÷ ${ndjsonPlacesPerSecond} places/s (NDJSON import): ` +
      `${model(full.nodes, ours.places).toFixed(1)} s for this file, measured ${ours.seconds.toFixed(1)} s`,
  );
  const placesPerNode = ours.places / full.nodes;
  const located = nodes / full.nodes;
  for (const [name, countryNodes] of [
    ['Germany', 400e6],
    ['the planet', 9e9],
  ] as const) {
    const places = countryNodes * placesPerNode;
    console.log(
      `projection, ${name}: ~${countryNodes / 1e6} M nodes, ~${m(places)} M places (this file's ${(1000 * placesPerNode).toFixed(1)} a 1,000 nodes): ` +
        `~${duration(model(countryNodes, places))}; ~${m(located * countryNodes)} M nodes located (${(100 * located).toFixed(2)}%): ` +
        `location store ~${mb(16 * located * countryNodes)} MB, gathering peak ~${mb(17 * located * countryNodes)} MB`,
    );
  }
}

/**
 * The merged file `copies` times over, each copy's node, way and relation ids moved up by 2·10¹⁰ (above the
 * largest OSM ids), merged into one file sorted by type and id as the original is: the same places at the
 * same points, `copies` times as many.
 */
function scaledPbf(copies: number): { file: string } | { error: string } {
  const parts: string[] = [];
  for (let i = 0; i < copies; i++) {
    const start = String(1 + i * 2e10);
    const part = join(work, `copy-${i}.osm.pbf`);
    const run = spawnSync('osmium', ['renumber', '--start-id', `${start},${start},${start}`, '-o', part, pbfPath], { encoding: 'utf8' });
    if (run.error) return { error: 'osmium is not installed (Debian package osmium-tool)' };
    if (run.status !== 0) return { error: `osmium renumber failed: ${run.stderr.trim()}` };
    parts.push(part);
  }
  const file = join(work, `osm-pois-all-x${copies}.osm.pbf`);
  const merge = spawnSync('osmium', ['merge', '-o', file, ...parts], { encoding: 'utf8' });
  if (merge.status !== 0) return { error: `osmium merge failed: ${merge.stderr.trim()}` };
  for (const part of parts) rmSync(part);
  return { file };
}

/** Rows of equal length as aligned columns: the first left-aligned, the others right-aligned. */
function printTable(rows: string[][]): void {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const r of rows) console.log(r.map((v, c) => (c === 0 ? v.padEnd(widths[c]!) : v.padStart(widths[c]!))).join('  '));
}

const rate = (s: ImportSummary) => Math.round(s.placesPerSecond);
const stored = (s: ImportSummary) => s.imported_count + s.updated_count + s.unchanged_count;

/** NDJSON on both dialects, side by side; returns SQLite's rate (the country-like model's). */
async function ndjsonSection(ndjsonPath: string): Promise<CliRun | { error: string }> {
  const sqlite = await cliImport('osm-ndjson', ndjsonPath);
  const postgres = withPostgres ? await postgresImport(ndjsonPath) : undefined;
  const rows: string[][] = [
    ['NDJSON import, ' + ndjsonLines + ' lines', 'places', 'import s', 'places/s', 'places/CPU-s', 'wall s', 'peak RSS MB'],
  ];
  const row = (label: string, r: CliRun | { error: string }) =>
    rows.push(
      'error' in r
        ? [label, r.error, '', '', '', '', '']
        : [
            label,
            String(r.places),
            r.importSeconds.toFixed(2),
            String(r.placesPerSecond),
            String(Math.round(r.places / r.cpuSeconds)),
            r.seconds.toFixed(2),
            r.peakRssMB.toFixed(0),
          ],
    );
  row('leadatlas import → SQLite', sqlite);
  if (postgres) {
    row('leadatlas import → PostgreSQL', postgres.ours);
    const c = postgres.copy;
    rows.push(
      'error' in c
        ? ['PostgreSQL COPY FROM, plain table (baseline)', c.error, '', '', '', '', '']
        : [
            'PostgreSQL COPY FROM, plain table (baseline)',
            String(c.rows),
            c.seconds.toFixed(2),
            String(Math.round(c.rows / c.seconds)),
            '—',
            '—',
            '—',
          ],
    );
  }
  printTable(rows);
  console.log("places/CPU-s and peak RSS: the import process alone (PostgreSQL's backend is not in them)");
  if (postgres && !('error' in sqlite) && !('error' in postgres.ours)) {
    const ratio = postgres.ours.placesPerSecond / sqlite.placesPerSecond;
    console.log(
      `PostgreSQL ÷ SQLite places/s: ${ratio.toFixed(2)} (target ≥ 0.50: ${ratio >= 0.5 ? 'met' : 'NOT met'}); ` +
        `peak RSS ${(postgres.ours.peakRssMB / sqlite.peakRssMB).toFixed(2)}×`,
    );
    if (!('error' in postgres.copy)) {
      console.log(
        `PostgreSQL import ÷ COPY FROM of the same rows: ${(postgres.ours.placesPerSecond / (postgres.copy.rows / postgres.copy.seconds)).toFixed(2)}`,
      );
    }
  }
  return sqlite;
}

try {
  const ndjsonPath = join(work, 'osm-pois-resampled.ndjson');
  console.log(
    `load average at start: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log(`building ${ndjsonLines} NDJSON lines from ${ndjsonSource} …`);
  await buildNdjson(ndjsonSource, ndjsonPath, ndjsonLines);

  if (conflationOnly) {
    await conflationSection(ndjsonPath);
    if (countryCopies > 0) await countryConflationSection();
  } else {
    const ndjson = await ndjsonSection(ndjsonPath);
    await conflationSection(ndjsonPath);
    if (!ndjsonOnly) await restOfTheBench(ndjson);
  }
  console.log(
    `load average at end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} (2 cores: above 2, other processes took CPU from this run)`,
  );
  console.log(
    `peak RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MB; ${process.platform} ${process.arch}, Node ${process.version}`,
  );
} finally {
  if (keep) console.log(`kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}

/**
 * What conflation costs the import (`src/modules/conflation`), each against the same import with
 * `--no-conflate` (its records left due) in the same run, on SQLite:
 * - a first import (one source: records are indexed under their blocking keys, nothing to compare with);
 * - the same file again as a second source (`--source twin`): every record finds its twin, the worst case
 *   of a second source (each record compared, and each one merged into a place of two sources).
 */
async function conflationSection(ndjsonPath: string): Promise<void> {
  const dbPath = join(work, 'conflation.db');
  const fresh = async () => {
    rmSync(dbPath, { force: true });
    await migrated(`sqlite:${dbPath}`);
  };
  const url = `sqlite:${dbPath}`;
  const twin = ['--source', 'twin', '--dataset', 'twin'];
  const runs: Array<[string, CliRun | { error: string }]> = [];
  await fresh();
  runs.push(['first import, --no-conflate', cliRun(url, ndjsonPath, ['--no-conflate'])]);
  runs.push(['the twin source, --no-conflate', cliRun(url, ndjsonPath, [...twin, '--no-conflate'])]);
  await fresh();
  runs.push(['first import, conflating', cliRun(url, ndjsonPath)]);
  runs.push(['the twin source, conflating (every record merged)', cliRun(url, ndjsonPath, twin)]);
  const db = openDatabase(url);
  let merged = 0;
  let keys = 0;
  try {
    merged = (db.sqlite!.prepare('SELECT count(*) AS n FROM places WHERE sources IS NOT NULL').get() as { n: number }).n;
    keys = (db.sqlite!.prepare('SELECT count(*) AS n FROM place_match_keys').get() as { n: number }).n;
  } finally {
    await db.close();
    rmSync(dbPath, { force: true });
  }
  const rows: string[][] = [['conflation, NDJSON ' + ndjsonLines + ' lines → SQLite', 'places', 'import s', 'places/s']];
  for (const [label, r] of runs)
    rows.push('error' in r ? [label, r.error, '', ''] : [label, String(r.places), r.importSeconds.toFixed(2), String(r.placesPerSecond)]);
  console.log('');
  printTable(rows);
  const s = runs.map(([, r]) => ('error' in r ? undefined : r.importSeconds));
  if (s.every((x) => x !== undefined)) {
    console.log(
      `conflation's cost: first import ${(s[2]! / s[0]!).toFixed(2)}× without it; a fully overlapping second source ${(s[3]! / s[1]!).toFixed(2)}× ` +
        `(${merged} places of two sources, ${keys} blocking keys)`,
    );
  }
}

/** `--conflation-only`: the country-like file imported with and without conflation, twice each in turn. */
async function countryConflationSection(): Promise<void> {
  let full: CountryLikeFile;
  try {
    full = countryLikePbf(osmDir, resolve(import.meta.dirname, '../var/bench'), countryCopies, console.log);
  } catch (error) {
    console.log(`\ncountry-like file not built: ${(error as Error).message}`);
    return;
  }
  const runs: Array<[string, CliRun | { error: string }]> = [];
  for (let round = 1; round <= 2; round++) {
    runs.push([`conflating, run ${round}`, await cliImport('country-conflating', full.path)]);
    runs.push([`--no-conflate, run ${round}`, await cliImport('country-no-conflate', full.path, ['--no-conflate'])]);
  }
  const rows: string[][] = [
    [
      `country-like .osm.pbf (${countryCopies} copies, ${(full.nodes / 1e6).toFixed(2)} M nodes) → SQLite`,
      'places',
      'import s',
      'wall s',
      'peak RSS MB',
    ],
  ];
  for (const [label, r] of runs)
    rows.push(
      'error' in r
        ? [label, r.error, '', '', '']
        : [label, String(r.places), r.importSeconds.toFixed(1), r.seconds.toFixed(1), r.peakRssMB.toFixed(0)],
    );
  console.log('');
  printTable(rows);
  const ok = runs.map(([, r]) => r).filter((r): r is CliRun => !('error' in r));
  if (ok.length === runs.length) {
    const mean = (i: number) => (ok[i]!.seconds + ok[i + 2]!.seconds) / 2;
    console.log(
      `conflation's cost on the country-like file: ${(mean(0) / mean(1)).toFixed(2)}× the wall time without it (means of two runs each)`,
    );
  }
}

/** The merged .osm.pbf against osm2pgsql, the country-like file, and the larger files. */
async function restOfTheBench(ndjson: CliRun | { error: string }): Promise<void> {
  const pbf = await leadatlasImport('osm-pbf', pbfPath);
  const osm2pgsql = await osm2pgsqlImport(pbfPath);

  // CPU time shows what the code costs when other processes share the 2 cores (the wall-clock rate drops then).
  const perCpu = (r: { summary: ImportSummary; cpuSeconds: number }) => String(Math.round(stored(r.summary) / r.cpuSeconds));
  const rows: string[][] = [
    ['import', 'places', 'seconds', 'places/s', 'places/CPU-s'],
    [
      `LeadAtlas ${pbf.summary.format} → SQLite (osm-pois-all.osm.pbf)`,
      String(stored(pbf.summary)),
      pbf.summary.seconds.toFixed(2),
      String(rate(pbf.summary)),
      perCpu(pbf),
    ],
  ];
  if (!('error' in ndjson)) {
    rows.push([
      `LeadAtlas osm-ndjson → SQLite (${ndjsonLines} lines)`,
      String(ndjson.places),
      ndjson.importSeconds.toFixed(2),
      String(ndjson.placesPerSecond),
      String(Math.round(ndjson.places / ndjson.cpuSeconds)),
    ]);
  }
  if ('seconds' in osm2pgsql) {
    // osm2pgsql stores every object of the file; the rate is given per named POI, the same count LeadAtlas
    // stores. Its CPU time is split between it and the PostgreSQL server, so it is not shown.
    rows.push([
      'osm2pgsql → PostgreSQL (same .osm.pbf, default style)',
      String(stored(pbf.summary)),
      osm2pgsql.seconds.toFixed(2),
      String(Math.round(stored(pbf.summary) / osm2pgsql.seconds)),
      '—',
    ]);
  }
  console.log('');
  printTable(rows);
  console.log('');
  if ('seconds' in osm2pgsql) {
    console.log(`OSM file: LeadAtlas takes ${(pbf.summary.seconds / osm2pgsql.seconds).toFixed(2)}× osm2pgsql's time (target ≤ 1.00)`);
  } else {
    console.log(`osm2pgsql not measured: ${osm2pgsql.error}`);
  }
  if (!('error' in ndjson)) {
    console.log(`NDJSON: ${ndjson.placesPerSecond} places/s (target ≥ 50000): ${ndjson.placesPerSecond >= 50000 ? 'met' : 'NOT met'}`);
    if (countryCopies > 0) await countryLikeSection(ndjson.placesPerSecond);
  }

  // Start-up against throughput: the same comparison on larger files (not part of the targets).
  const more: Array<{ label: string; file: string }> = [];
  if (pbfCopies > 1) {
    const scaled = scaledPbf(pbfCopies);
    if ('error' in scaled) console.log(`\nmerged file ×${pbfCopies} not measured: ${scaled.error}`);
    else more.push({ label: `osm-pois-all ×${pbfCopies}`, file: scaled.file });
  }
  if (extracts) {
    for (const name of readdirSync(osmDir)
      .filter((f) => f.endsWith('.osm.pbf') && f !== 'osm-pois-all.osm.pbf')
      .sort()) {
      more.push({ label: name.replace(/\.osm\.pbf$/, ''), file: join(osmDir, name) });
    }
  }
  if (more.length > 0 && 'seconds' in osm2pgsql) {
    const table: string[][] = [['.osm.pbf', 'places', 'LeadAtlas s', 'osm2pgsql s', 'ratio']];
    for (const { label, file } of more) {
      const ours = await leadatlasImport(`more-${table.length}`, file);
      const theirs = await osm2pgsqlImport(file);
      const baseline =
        'seconds' in theirs ? [theirs.seconds.toFixed(2), (ours.summary.seconds / theirs.seconds).toFixed(2)] : [theirs.error, '—'];
      table.push([label, String(stored(ours.summary)), ours.summary.seconds.toFixed(2), ...baseline]);
    }
    console.log('');
    printTable(table);
  }
}
