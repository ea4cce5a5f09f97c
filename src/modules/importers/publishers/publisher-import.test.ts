import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { spawnCli } from '../../../../test/helpers/cli.ts';
import { sharedData } from '../../../../test/helpers/conflation-sample.ts';
import { dialects, openTestSqlite, type TestDatabase } from '../../../../test/helpers/databases.ts';
import {
  buildFoursquareRelease,
  buildGeofabrikMirror,
  buildOvertureRelease,
  type GeofabrikMirror,
  type MirrorPart,
  type MirrorServer,
  mirrorFlags,
  portoExtract,
  serveMirror,
} from '../../../../test/helpers/mirrors.ts';
import { prepareDatabase } from '../../../bootstrap.ts';
import { countryCoverage } from '../../places/coverage.repository.ts';
import { enrichPlace } from '../enrich.ts';
import { loadEnricher } from '../enricher.ts';
import { parquetPlaces } from '../readers/parquet-places.ts';
import { foursquareRelease } from './foursquare-release.ts';
import { downloadFile } from './geofabrik.ts';
import { loadMarket } from './market.service.ts';
import { overtureRelease } from './overture-release.ts';
import { importFoursquare, importOsm, importOverture } from './publisher-import.service.ts';

const boulder = join(sharedData, 'places/overture-places-boulder-3545.parquet');
const fsqSample = join(sharedData, 'places/fsq-os-places-sample-10k-2024-11-19.parquet');
const http = { allowPrivate: true, timeoutMs: 10_000 };

/** Boulder's rows moved across the Portuguese-Spanish border at Elvas, to Lisbon, or left in Boulder (US). */
const acrossTheBorder: [number, number, null] = [98.238, -1.135, null];
const lisbon: [number, number, string] = [96.13, -1.295, 'PT'];
const older = '2026-04-15.0';
const newer = '2026-05-13.0';

/** The source ids a full scan of the files keeps for a country: every row read and enriched, the gazetteer's country compared. */
async function fullScan(root: string, parts: MirrorPart[], country: string): Promise<Set<string>> {
  const kept = new Set<string>();
  for (const part of parts) {
    const reader = await parquetPlaces.open(join(root, part.path), {});
    for await (const r of reader.records()) {
      if (!r.ok || r.place.withheld) continue;
      const e = enrichPlace(reader, r.place, loadEnricher());
      if (e.ok && e.record.country_code === country) kept.add(e.record.source_id);
    }
  }
  return kept;
}

describe('importing a country from its publishers through loopback mirrors of their layouts', () => {
  let root: string;
  let server: MirrorServer;
  let olderParts: MirrorPart[];
  let newerParts: MirrorPart[];
  let fsqParts: MirrorPart[];
  let geofabrik: GeofabrikMirror;
  let expected: { overture: Set<string>; overtureNext: Set<string>; foursquare: Set<string> };

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'publishers-'));
    const groups = [acrossTheBorder, lisbon, [0, 0] as [number, number], [0, 0] as [number, number]];
    olderParts = (await buildOvertureRelease(root, [newer, older], older, groups, { sample: boulder })).parts;
    // The next release: every tenth place of Lisbon gone, and no collections.parquet (read from the JSON tree).
    newerParts = (
      await buildOvertureRelease(root, [newer, older], newer, groups, {
        sample: boulder,
        keep: (_, i) => i % 10 !== 3,
        collectionsParquet: false,
      })
    ).parts;
    fsqParts = await buildFoursquareRelease(root, 'dt=2024-11-19', 2, fsqSample);
    await buildFoursquareRelease(root, 'dt=2024-10-15', 1, fsqSample);
    geofabrik = buildGeofabrikMirror(
      root,
      join(root, 'work'),
      { id: 'portugal', name: 'Portugal', country: 'PT', extract: portoExtract, continent: 'europe' },
      2,
      1,
    );
    expected = {
      overture: await fullScan(root, olderParts, 'PT'),
      overtureNext: await fullScan(root, newerParts, 'PT'),
      foursquare: await fullScan(root, fsqParts, 'PT'),
    };
    server = await serveMirror(root);
  });
  after(async () => {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  });

  test('the STAC catalog gives each release its files and boxes, from collections.parquet or from the JSON tree alike', async () => {
    const base = `${server.url}overture/`;
    const fromParquet = await overtureRelease(base, older, http);
    const fromJson = await overtureRelease(base, 'latest', http);
    assert.equal(fromJson.release, newer);
    for (const [release, parts] of [
      [fromParquet, olderParts],
      [fromJson, newerParts],
    ] as const) {
      assert.deepEqual(
        release.parts.map((p) => [p.url, p.bbox, p.rows]),
        parts.map((p) => [`${server.url}${p.path}`, p.bbox, p.rows]),
      );
    }
    assert.ok(server.requests.some((r) => r.path === `overture/${older}/collections.parquet`));
    assert.ok(server.requests.some((r) => r.path === `overture/${newer}/places/place/00003/00003.json`));
    await assert.rejects(
      overtureRelease(base, '2020-01-01.0', http),
      (e: Error & { code?: string; extras?: { errors?: Array<{ allowed?: string[] }> } }) => {
        return e.code === 'unknown_value' && e.extras?.errors?.[0]?.allowed?.includes(older) === true;
      },
    );
  });

  test('the Foursquare bucket listing gives the latest dt= release and its files', async () => {
    const release = await foursquareRelease(`${server.url}foursquare/`, 'latest', http);
    assert.equal(release.release, 'dt=2024-11-19');
    assert.deepEqual(
      release.parts.map((p) => p.url),
      fsqParts.map((p) => `${server.url}${p.path}`),
    );
    assert.equal((await foursquareRelease(`${server.url}foursquare/`, '2024-10-15', http)).parts.length, 1);
  });

  test('Foursquare flags withhold a record with the flag as the reason, and closed ones are closed', async () => {
    const reader = await parquetPlaces.open(join(root, fsqParts[0]!.path), {});
    const reasons = new Map<string, number>();
    let closed = 0;
    let index = 0;
    for await (const r of reader.records()) {
      const flag = mirrorFlags(index++)[0];
      assert.ok(r.ok);
      if (r.place.withheld) reasons.set(r.place.withheld, (reasons.get(r.place.withheld) ?? 0) + 1);
      assert.equal(r.place.withheld, flag && flag !== 'closed' && flag !== 'relocated' ? `flagged ${flag}` : undefined);
      if (flag === 'closed') {
        assert.equal(r.place.closed, true);
        closed++;
      }
    }
    assert.deepEqual([...reasons.keys()].sort(), ['flagged delete', 'flagged doesnt_exist', 'flagged duplicate', 'flagged privatevenue']);
    assert.ok(closed > 0);
  });

  test('an extract download cut short is continued by a range request, and fetched whole again when the file changed', async () => {
    const original = readFileSync(join(root, 'geofabrik', geofabrik.pbf));
    const url = `${server.url}geofabrik/${geofabrik.pbf}`;
    const etag = (await fetch(url, { method: 'HEAD' })).headers.get('etag')!;
    for (const [validator, range] of [
      [etag, `bytes=${1000}-`],
      ['"an older file"', `bytes=${1000}-`],
    ] as const) {
      const dest = join(root, 'downloads', `${validator.length}.osm.pbf`);
      mkdirSync(join(root, 'downloads'), { recursive: true });
      writeFileSync(`${dest}.part`, original.subarray(0, 1000));
      writeFileSync(`${dest}.part.json`, JSON.stringify({ url, validator }));
      const from = server.requests.length;
      assert.equal(await downloadFile(url, dest, { http, maxBytes: 1 << 30 }), original.length);
      assert.deepEqual(readFileSync(dest), original);
      assert.deepEqual(server.requests.slice(from), [{ path: `geofabrik/${geofabrik.pbf}`, range }]);
      assert.equal(existsSync(`${dest}.part`), false);
    }
  });

  for (const dialect of dialects)
    describe(`on ${dialect.name}`, () => {
      let t: TestDatabase;
      const enricher = loadEnricher();
      before(async () => {
        t = await dialect.open();
        await prepareDatabase(t.db);
      });
      after(() => t.dispose());

      const sourceIds = async (runId: number) =>
        new Set(
          (await t.db.kysely.selectFrom('places').select('source_id').where('seen_run_id', '=', runId).execute()).map((r) => r.source_id),
        );

      test('Overture: only the files that meet the country are opened, and the rows kept are a full scan filtered by the border', async () => {
        const before = server.requests.length;
        const r = await importOverture(t.db, {
          country: 'PT',
          release: older,
          baseUrl: `${server.url}overture/`,
          http,
          enricher,
          conflate: false,
        });
        const opened = new Set(
          server.requests
            .slice(before)
            .map((q) => q.path)
            .filter((p) => p.endsWith('.parquet') && p.includes('/release/')),
        );
        assert.deepEqual([...opened].sort(), [olderParts[0]!.path, olderParts[1]!.path]);
        assert.deepEqual(r.parts, { total: 4, read: 2 });
        assert.equal(r.dataset, 'overture-PT');
        assert.deepEqual(await sourceIds(r.summary!.runId), expected.overture);
        assert.equal(r.kept, expected.overture.size);
        assert.ok(r.outsideBorder > 0, 'the part across the border holds places of Spain');
        assert.equal(r.outsideBorder + r.kept, olderParts[0]!.rows + olderParts[1]!.rows);
      });

      test('Overture: the next release, imported as the same dataset, retires what it dropped', async () => {
        const r = await importOverture(t.db, { country: 'PT', baseUrl: `${server.url}overture/`, http, enricher, conflate: false });
        assert.equal(r.release, newer);
        assert.equal(r.summary!.retired_count, [...expected.overture].filter((id) => !expected.overtureNext.has(id)).length);
        assert.deepEqual(await sourceIds(r.summary!.runId), expected.overtureNext);
      });

      test('Foursquare: the country kept by its border, flagged and closed rows counted, not imported open', async () => {
        const r = await importFoursquare(t.db, { country: 'PT', baseUrl: `${server.url}foursquare/`, http, enricher, conflate: false });
        assert.equal(r.dataset, 'foursquare-PT');
        assert.deepEqual(await sourceIds(r.summary!.runId), expected.foursquare);
        const closed = await t.db.kysely
          .selectFrom('places')
          .select(['source_id', 'closed_reason'])
          .where('seen_run_id', '=', r.summary!.runId)
          .where('closed', '=', 1)
          .execute();
        assert.equal(r.closed, closed.length);
        assert.ok(closed.every((c) => c.closed_reason === 'closed'));
        const flagged = Object.keys(r.summary!.skipped_reasons).filter((k) => k.startsWith('flagged '));
        assert.ok(flagged.length > 0, JSON.stringify(r.summary!.skipped_reasons));
        assert.equal(r.kept + r.outsideBorder + flagged.reduce((n, k) => n + r.summary!.skipped_reasons[k]!, 0), r.summary!.read_count);
        // The market's summary counts the live records of each source, closed ones left out.
        const coverage = await countryCoverage(t.db, 'PT', ['overture', 'foursquare']);
        assert.equal(coverage.bySource.foursquare!.places, r.kept - r.closed);
        assert.equal(coverage.bySource.overture!.places, expected.overtureNext.size);
        assert.equal(coverage.merged.places, r.kept - r.closed + expected.overtureNext.size);
      });

      // The extract's import and the feed are the paths `osm-import` and `follow` test on both databases: once here.
      if (dialect.name !== 'sqlite') return;

      test("OpenStreetMap: the country's Geofabrik extract, then its feed from the extract's own sequence, and only the feed next time", async () => {
        const cacheDir = join(root, `cache-${dialect.name}`);
        const follow = { timeoutMs: 10_000, maxFileBytes: 50 << 20, retryBaseMs: 50 };
        const r = await importOsm(t.db, {
          country: 'PT',
          baseUrl: `${server.url}geofabrik/`,
          http,
          enricher,
          cacheDir,
          follow,
          conflate: false,
        });
        assert.equal(r.dataset, 'osm-PT');
        assert.deepEqual(r.followed, { dataset: 'osm-PT', applied: geofabrik.newest - geofabrik.sequence, sequence: geofabrik.newest });
        assert.ok(r.kept > 3000);
        const again = await importOsm(t.db, { country: 'PT', baseUrl: `${server.url}geofabrik/`, http, enricher, cacheDir, follow });
        assert.equal(again.summary, undefined, 'no extract is imported again');
        assert.deepEqual(again.followed, { dataset: 'osm-PT', applied: 0, sequence: geofabrik.newest });
      });

      test('market: the three merged, with places and contact coverage per source and after merging', async () => {
        const summary = await loadMarket(t.db, {
          country: 'PT',
          http,
          enricher,
          sources: {
            osm: { baseUrl: `${server.url}geofabrik/` },
            overture: { baseUrl: `${server.url}overture/` },
            foursquare: { baseUrl: `${server.url}foursquare/` },
          },
          osm: { cacheDir: join(root, `cache-${dialect.name}`), follow: { timeoutMs: 10_000, maxFileBytes: 50 << 20, retryBaseMs: 50 } },
        });
        assert.deepEqual(
          summary.imports.map((i) => i.publisher),
          ['osm', 'overture', 'foursquare'],
        );
        const { osm, overture, foursquare } = summary.bySource;
        assert.equal(overture!.places, expected.overtureNext.size);
        assert.ok(osm!.places > 3000 && foursquare!.places > 0);
        // The Foursquare places of Porto that OpenStreetMap also has are one place each.
        assert.ok(summary.merged.places < osm!.places + overture!.places + foursquare!.places, JSON.stringify(summary.merged));
        for (const c of [osm!, overture!, foursquare!, summary.merged])
          assert.ok(c.phone <= c.places && c.email <= c.places && c.website <= c.places);
      });
    });

  /** `leadatlas ARGS…` to its end without blocking this process, whose event loop serves the mirror. */
  async function runCli(args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
    const child = spawnCli(args, env);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const [status] = (await once(child, 'exit')) as [number | null];
    return { status, stdout, stderr };
  }

  describe('through the command line (SQLite)', () => {
    let t: ReturnType<typeof openTestSqlite>;
    before(async () => {
      t = openTestSqlite();
      await prepareDatabase(t.db);
    });
    after(() => t.dispose());

    test('an import killed with SIGKILL between two parts is resumed without reading the part already in', async () => {
      const args = [
        'import',
        'overture',
        '--country',
        'PT',
        '--release',
        older,
        '--base-url',
        `${server.url}overture/`,
        '--allow-private-networks',
      ];
      const env = { DATABASE_URL: t.url, LOG_LEVEL: 'error' };
      server.hold(olderParts[1]!.path);
      const child = spawnCli(args, env, ['ignore', 'ignore', 'pipe']);
      let stderr = '';
      child.stderr!.on('data', (d) => (stderr += d));
      const exited = once(child, 'exit');
      const partsIn = async () => (await t.db.kysely.selectFrom('import_run_parts').select('part').execute()).map((r) => r.part);
      for (let waited = 0; (await partsIn()).length === 0; waited += 100) {
        assert.ok(waited < 120_000 && child.exitCode === null, `no part written: ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      child.kill('SIGKILL');
      const [, signal] = await exited;
      assert.equal(signal, 'SIGKILL');
      server.release();
      assert.deepEqual(await partsIn(), [`${server.url}${olderParts[0]!.path}`]);

      const from = server.requests.length;
      const again = await runCli(args, env);
      assert.equal(again.status, 0, again.stderr);
      const read = new Set(server.requests.slice(from).map((r) => r.path));
      assert.ok(!read.has(olderParts[0]!.path), 'the part written before the kill is not read again');
      assert.ok(read.has(olderParts[1]!.path));
      const runs = await t.db.kysely.selectFrom('import_runs').select(['id', 'status']).where('dataset', '=', 'overture-PT').execute();
      assert.deepEqual(
        runs.map((r) => r.status),
        ['done'],
        'the killed run was continued, not started again',
      );
      const ids = await t.db.kysely.selectFrom('places').select('source_id').where('seen_run_id', '=', runs[0]!.id).execute();
      assert.deepEqual(new Set(ids.map((r) => r.source_id)), expected.overture);
      assert.match(
        again.stderr,
        /overture 2026-04-15\.0 \(dataset overture-PT\): 2 of 4 files read; kept \d+ \(closed 0\), outside the border \d+/,
      );
    });

    test('leadatlas market PT loads the three from one mirror and prints one summary', async () => {
      const r = await runCli(
        ['market', 'PT', '--base-url', server.url, '--allow-private-networks', '--cache-dir', join(root, 'cache-cli'), '--json'],
        {
          DATABASE_URL: t.url,
          LOG_LEVEL: 'error',
        },
      );
      assert.equal(r.status, 0, r.stderr);
      const summary = JSON.parse(r.stdout) as {
        bySource: Record<string, { places: number }>;
        merged: { places: number };
        imports: Array<{ publisher: string }>;
      };
      assert.deepEqual(
        summary.imports.map((i) => i.publisher),
        ['osm', 'overture', 'foursquare'],
      );
      assert.ok(summary.bySource.osm!.places > 3000 && summary.bySource.overture!.places > 0 && summary.bySource.foursquare!.places > 0);
      assert.ok(summary.merged.places > 0);
    });
  });
});
