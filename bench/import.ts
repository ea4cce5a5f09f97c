/**
 * Import throughput: places per second for the merged OpenStreetMap file and for NDJSON, each into a fresh
 * SQLite file, next to osm2pgsql importing the same .osm.pbf into the local PostgreSQL, in one run.
 *
 *   node --import tsx bench/import.ts [--ndjson-lines 500000] [--pbf-copies 10] [--no-extracts] [--keep]
 *
 * Two more comparisons with osm2pgsql follow the main table, to tell start-up from throughput:
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
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import type { ImportSummary } from '../src/modules/importers/import.service.ts';
import { compileForBench } from './lib/build.ts';
import { argValue } from './lib/args.ts';
import { buildNdjson } from './lib/ndjson.ts';

const ndjsonLines = Number(argValue('--ndjson-lines', '500000'));
if (!Number.isInteger(ndjsonLines) || ndjsonLines < 1000) throw new Error('--ndjson-lines must be a whole number of at least 1000');
const keep = process.argv.includes('--keep');
const pbfCopies = Number(argValue('--pbf-copies', '10'));
if (!Number.isInteger(pbfCopies) || pbfCopies < 0 || pbfCopies > 100) throw new Error('--pbf-copies must be a whole number from 0 to 100');
const extracts = !process.argv.includes('--no-extracts');

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

/** osm2pgsql with its default style (pgsql output, all objects), timed from start to exit. */
async function osm2pgsqlImport(file: string): Promise<{ seconds: number } | { error: string }> {
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
    const started = performance.now();
    const run = spawnSync(
      'osm2pgsql',
      ['--create', '--number-processes', '2', '-d', database, '-H', url.hostname, '-P', url.port || '5432', '-U', url.username || 'postgres', file],
      { encoding: 'utf8' },
    );
    const seconds = (performance.now() - started) / 1000;
    if (run.status !== 0) return { error: `osm2pgsql failed: ${(run.stderr || run.stdout).split('\n').slice(-5).join(' ')}` };
    return { seconds };
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${database}`);
    await admin.end();
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

try {
  const ndjsonPath = join(work, 'osm-pois-resampled.ndjson');
  console.log(`load average at start: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(`building ${ndjsonLines} NDJSON lines from ${ndjsonSource} …`);
  await buildNdjson(ndjsonSource, ndjsonPath, ndjsonLines);

  const pbf = await leadatlasImport('osm-pbf', pbfPath);
  const ndjson = await leadatlasImport('osm-ndjson', ndjsonPath);
  const osm2pgsql = await osm2pgsqlImport(pbfPath);

  // CPU time shows what the code costs when other processes share the 2 cores (the wall-clock rate drops then).
  const perCpu = (r: { summary: ImportSummary; cpuSeconds: number }) => String(Math.round(stored(r.summary) / r.cpuSeconds));
  const rows: string[][] = [
    ['import', 'places', 'seconds', 'places/s', 'places/CPU-s'],
    [`LeadAtlas ${pbf.summary.format} → SQLite (osm-pois-all.osm.pbf)`, String(stored(pbf.summary)), pbf.summary.seconds.toFixed(2), String(rate(pbf.summary)), perCpu(pbf)],
    [`LeadAtlas ${ndjson.summary.format} → SQLite (${ndjsonLines} lines)`, String(stored(ndjson.summary)), ndjson.summary.seconds.toFixed(2), String(rate(ndjson.summary)), perCpu(ndjson)],
  ];
  if ('seconds' in osm2pgsql) {
    // osm2pgsql stores every object of the file; the rate is given per named POI, the same count LeadAtlas
    // stores. Its CPU time is split between it and the PostgreSQL server, so it is not shown.
    rows.push(['osm2pgsql → PostgreSQL (same .osm.pbf, default style)', String(stored(pbf.summary)), osm2pgsql.seconds.toFixed(2), String(Math.round(stored(pbf.summary) / osm2pgsql.seconds)), '—']);
  }
  printTable(rows);
  console.log('');
  if ('seconds' in osm2pgsql) {
    console.log(`OSM file: LeadAtlas takes ${(pbf.summary.seconds / osm2pgsql.seconds).toFixed(2)}× osm2pgsql's time (target ≤ 1.00)`);
  } else {
    console.log(`osm2pgsql not measured: ${osm2pgsql.error}`);
  }
  console.log(`NDJSON: ${rate(ndjson.summary)} places/s (target ≥ 50000): ${rate(ndjson.summary) >= 50000 ? 'met' : 'NOT met'}`);

  // Start-up against throughput: the same comparison on larger files (not part of the targets).
  const more: Array<{ label: string; file: string }> = [];
  if (pbfCopies > 1) {
    const scaled = scaledPbf(pbfCopies);
    if ('error' in scaled) console.log(`\nmerged file ×${pbfCopies} not measured: ${scaled.error}`);
    else more.push({ label: `osm-pois-all ×${pbfCopies}`, file: scaled.file });
  }
  if (extracts) {
    for (const name of readdirSync(osmDir).filter((f) => f.endsWith('.osm.pbf') && f !== 'osm-pois-all.osm.pbf').sort()) {
      more.push({ label: name.replace(/\.osm\.pbf$/, ''), file: join(osmDir, name) });
    }
  }
  if (more.length > 0 && 'seconds' in osm2pgsql) {
    const table: string[][] = [['.osm.pbf', 'places', 'LeadAtlas s', 'osm2pgsql s', 'ratio']];
    for (const { label, file } of more) {
      const ours = await leadatlasImport(`more-${table.length}`, file);
      const theirs = await osm2pgsqlImport(file);
      const baseline = 'seconds' in theirs ? [theirs.seconds.toFixed(2), (ours.summary.seconds / theirs.seconds).toFixed(2)] : [theirs.error, '—'];
      table.push([label, String(stored(ours.summary)), ours.summary.seconds.toFixed(2), ...baseline]);
    }
    console.log('');
    printTable(table);
  }
  console.log(`load average at end: ${loadavg().map((l) => l.toFixed(1)).join(' ')} (2 cores: above 2, other processes took CPU from this run)`);
  console.log(`peak RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MB; ${process.platform} ${process.arch}, Node ${process.version}`);
} finally {
  if (keep) console.log(`kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}
