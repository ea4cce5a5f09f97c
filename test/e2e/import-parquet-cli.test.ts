import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cliCommand, runCli } from '../helpers/cli.ts';
import { copyTestSqlite, type TestSqlite } from '../helpers/databases.ts';

const data = resolve(import.meta.dirname, '../../../shared/data');
const fsq = readFileSync(join(data, 'places/fsq-os-places-sample-10k-2024-11-19.parquet'));

/** `leadatlas ARGS…` without blocking this process (the range server below answers it). */
function cli(args: string[], env: Record<string, string>): Promise<{ status: number | null; stderr: string; stdout: string }> {
  const child = spawn(...cliCommand(args), {
    cwd: resolve(import.meta.dirname, '../..'),
    env: { ...process.env, LOG_LEVEL: 'error', ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((done) => child.on('exit', (status) => done({ status, stdout, stderr })));
}

describe('leadatlas import with Parquet files and URLs', () => {
  let sent = 0;
  const server = createServer((req, res) => {
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (req.url !== '/fsq.parquet' || !range) return void res.writeHead(404).end();
    const [start, end] = [Number(range[1]), Math.min(Number(range[2]), fsq.length - 1)];
    sent += end - start + 1;
    res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${fsq.length}` }).end(fsq.subarray(start, end + 1));
  });
  let base: string;
  let db: TestSqlite;
  before(async () => {
    db = await copyTestSqlite('prepared');
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.close();
    await db?.dispose();
  });

  test('formats lists Parquet', () => {
    const run = runCli(['formats'], {});
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^parquet +Parquet or GeoParquet/m);
    assert.match(run.stdout, /^foursquare-csv /m);
  });

  test('a malformed --bbox, --country or --min-confidence is refused naming the allowed values', () => {
    for (const [flag, value, allowed] of [
      ['--bbox', '1,2,3', /four numbers minLon,minLat,maxLon,maxLat/],
      ['--bbox', '10,0,5,1', /min before max/],
      ['--country', 'Germany', /ISO 3166-1 alpha-2/],
      ['--min-confidence', '1.5', /from 0 to 1/],
    ] as const) {
      const run = runCli(['import', `${base}/fsq.parquet`, flag, value], { DATABASE_URL: db.url });
      assert.notEqual(run.status, 0);
      assert.match(run.stderr, allowed, `${flag} ${value}: ${run.stderr}`);
    }
  });

  test('imports one country from a URL through the import worker, each byte read about once', async () => {
    sent = 0;
    const run = await cli(['import', `${base}/fsq.parquet`, '--country', 'de', '--allow-private-networks', '--no-conflate'], {
      DATABASE_URL: db.url,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stderr, /fsq\.parquet \(parquet, dataset fsq\): read 476, imported 476/);
    // The sample is one row group, which holds every country: the footer and that row group (they overlap).
    assert.ok(sent > 0 && sent <= fsq.length * 1.1, `${sent} bytes`);
    const rows = db.db
      .sqlite!.prepare("SELECT count(*) AS n, min(country_code) AS lo, max(country_code) AS hi FROM places WHERE source = 'foursquare'")
      .get() as { n: number; lo: string; hi: string };
    assert.deepEqual({ ...rows }, { n: 476, lo: 'DE', hi: 'DE' });
  });

  test('refuses a loopback URL without --allow-private-networks', async () => {
    const run = await cli(['import', `${base}/fsq.parquet`], { DATABASE_URL: db.url });
    assert.notEqual(run.status, 0);
    assert.match(run.stderr, /loopback address: only public addresses may be reached/);
  });
});
