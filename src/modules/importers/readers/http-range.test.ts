import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { PlaceInput } from '../../places/place-input.ts';
import type { OpenOptions } from '../importer.types.ts';
import { parquetPlaces } from './parquet-places.ts';

const data = resolve(import.meta.dirname, '../../../../../shared/data');
const files: Record<string, Buffer> = {
  '/release/boulder.parquet': readFileSync(join(data, 'places/overture-places-boulder-3545.parquet')),
  '/release/fsq.parquet': readFileSync(join(data, 'places/fsq-os-places-sample-10k-2024-11-19.parquet')),
};

/** A static file server on loopback that answers range requests and counts the body bytes it sent. */
function rangeServer(options: { ignoreRanges?: boolean; stallMs?: number } = {}) {
  const sent = { bytes: 0, requests: 0 };
  const server = createServer((req, res) => {
    const body = files[req.url ?? ''];
    sent.requests++;
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (options.stallMs) {
      setTimeout(() => res.destroy(), options.stallMs);
      return;
    }
    if (!range || options.ignoreRanges) {
      sent.bytes += body.length;
      res.writeHead(200, { 'content-length': body.length }).end(body);
      return;
    }
    const start = Number(range[1]);
    const end = Math.min(Number(range[2]), body.length - 1);
    const part = body.subarray(start, end + 1);
    sent.bytes += part.length;
    res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${body.length}`, 'content-length': part.length }).end(part);
  });
  return { server, sent };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function readAll(url: string, options: OpenOptions): Promise<PlaceInput[]> {
  const reader = await parquetPlaces.open(url, options);
  const out: PlaceInput[] = [];
  for await (const r of reader.records()) if (r.ok) out.push(r.place);
  return out;
}

const loopback: OpenOptions = { http: { allowPrivate: true, timeoutMs: 5000 } };

describe('reading Parquet over HTTP range requests', () => {
  const { server, sent } = rangeServer();
  let base: string;
  before(async () => {
    base = await listen(server);
  });
  after(() => new Promise<void>((done) => server.close(() => done())));

  test('reads a whole file into the same places as the local copy, sending each byte about once', async () => {
    sent.bytes = 0;
    const remote = await readAll(`${base}/release/boulder.parquet`, loopback);
    const local = await readAll(join(data, 'places/overture-places-boulder-3545.parquet'), {});
    assert.deepEqual(remote, local);
    const size = files['/release/boulder.parquet']!.length;
    assert.ok(sent.bytes <= size * 1.1, `${sent.bytes} bytes sent for a file of ${size}`);
  });

  test('with a --bbox or --country outside the file reads the footer only', async () => {
    for (const options of [{ bbox: [2.2, 48.8, 2.4, 48.9] as [number, number, number, number] }, { country: 'DE' }]) {
      sent.bytes = 0;
      assert.deepEqual(await readAll(`${base}/release/boulder.parquet`, { ...loopback, ...options }), []);
      assert.ok(sent.bytes < files['/release/boulder.parquet']!.length / 10, `${sent.bytes} bytes sent`);
    }
  });

  test('reads the zstd Foursquare file and selects one country exactly', async () => {
    const de = await readAll(`${base}/release/fsq.parquet`, { ...loopback, country: 'DE' });
    assert.equal(de.length, 476);
    assert.ok(de.every((p) => p.countryCode === 'DE'));
  });

  test('refuses a loopback address unless private networks are allowed', async () => {
    await assert.rejects(
      parquetPlaces.open(`${base}/release/boulder.parquet`, {}),
      (e: Error & { code?: string }) => e.code === 'validation_failed' && /loopback/.test(e.message),
    );
  });

  test('names the HTTP status of a file the server does not have', async () => {
    await assert.rejects(parquetPlaces.open(`${base}/release/none.parquet`, loopback), /HTTP 404/);
  });
});

describe('HTTP servers that cannot serve a Parquet file in parts', () => {
  test('a server that ignores Range is refused before anything is read', async () => {
    const { server, sent } = rangeServer({ ignoreRanges: true });
    const base = await listen(server);
    try {
      await assert.rejects(parquetPlaces.open(`${base}/release/boulder.parquet`, loopback), /206 Partial Content/);
      // The whole body was offered; the reader stopped at the first byte over what it asked for.
      assert.equal(sent.requests, 1);
    } finally {
      await new Promise<void>((done) => server.close(() => done()));
    }
  });

  test('a server that never answers is given up after the time limit', async () => {
    const { server } = rangeServer({ stallMs: 3000 });
    const base = await listen(server);
    try {
      await assert.rejects(
        parquetPlaces.open(`${base}/release/boulder.parquet`, { http: { allowPrivate: true, timeoutMs: 300 } }),
        /within 300 ms/,
      );
    } finally {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    }
  });
});
