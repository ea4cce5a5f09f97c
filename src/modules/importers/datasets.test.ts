import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { parse as parseCsv } from 'csv-parse/sync';
import { sql } from 'kysely';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { cliCommand, startCliImport } from '../../../test/helpers/cli.ts';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { loadEnricher } from '../../bootstrap.ts';
import { catalogStats } from '../../cli/commands/stats.ts';
import { datasetOfPath } from './dataset.ts';
import { runImport } from './import.service.ts';

const repoRoot = resolve(import.meta.dirname, '../../..');
const data = resolve(repoRoot, '../shared/data');
const overture = join(data, 'places/overture-places-boulder-3545.ndjson.gz');
const osmNdjson = join(data, 'osm/osm-pois-all.ndjson.gz');

/**
 * IMPORT_TESTS_FULL=1: the whole files below instead of samples of them. The samples are every fourth place of
 * the Boulder file and a sixth of the OSM export: the rules a re-import follows (retire, update, keep ids, bring
 * back) are decided record by record, so a sample of real records proves them as the whole file does.
 */
const full = process.env.IMPORT_TESTS_FULL === '1';

const lines = (gz: string) =>
  gunzipSync(readFileSync(gz))
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');

/** The same dataset's next snapshot: the same file name in another directory. */
function writeSnapshot(dir: string, name: string, body: string[]): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  writeFileSync(path, `${body.join('\n')}\n`);
  return path;
}

test('a dataset is named after its file by default', () => {
  assert.equal(datasetOfPath('/data/porto.osm.pbf'), 'porto');
  assert.equal(datasetOfPath('porto-2020.osm.pbf'), 'porto-2020');
  assert.equal(datasetOfPath('overture-places-boulder-3545.ndjson.gz'), 'overture-places-boulder-3545');
  assert.equal(datasetOfPath('yelp.json'), 'yelp');
  assert.equal(datasetOfPath('Places.CSV'), 'Places');
});

for (const database of ['sqlite', 'postgres'] as const) {
  describe(`re-importing an edited snapshot of the Overture Boulder file (${database})`, () => {
    let t: TestApp;
    let dir: string;
    let account: TestAccount;
    const original = lines(overture).filter((_, i) => full || i % 4 === 0);
    const ids = original.map((l) => (JSON.parse(l) as { id: string }).id);
    // The edit: every 25th place gone, one phone changed, one place the source now says is closed.
    const dropped = new Set(ids.filter((_, i) => i % 25 === 7));
    const phoneChanged = ids[10]!;
    const nowClosed = ids[11]!;
    const untouched = ids[12]!;
    const box = '-180,-90,180,90';
    let before1: Map<string, { id: number; public_id: string; first_seen_at: string; updated_at: string }>;
    let firstSearchId: string;

    const get = <T>(url: string) =>
      t.app.inject({ method: 'GET', url, headers: { authorization: account.authorization } }).then((r) => {
        assert.equal(r.statusCode, 200, r.body);
        return r;
      });
    const search = async (extra = '') =>
      (await get(`/api/v2/map/search?bbox=${box}&per_page=100&fields=id,status,closed_at${extra}`)).json<{
        search_id: string;
        total: number;
      }>();
    const exportJson = async (searchId: string) =>
      (await get(`/api/v2/map/export?search_id=${searchId}&format=json`)).json<Array<Record<string, unknown>>>();
    const rowsBySourceId = async () => {
      const rows = await t.db.kysely
        .selectFrom('places')
        .select(['id', 'public_id', 'source_id', 'first_seen_at', 'updated_at', 'closed_at', 'closed_reason', 'phone'])
        .where('source', '=', 'overture')
        .execute();
      return new Map(rows.map((r) => [r.source_id, { ...r, id: Number(r.id) }]));
    };

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'leadatlas-datasets-'));
      const first = writeSnapshot(join(dir, 'v1'), 'boulder.ndjson', original);
      t = await buildTestApp({ dialect: database, files: [first] });
      account = await createAccountWithToken(t.db, { scopes: ['search', 'export', 'places:read'] });
      before1 = await rowsBySourceId();
      assert.equal(before1.size, original.length);
      const s = await search();
      assert.equal(s.total, original.length, 'every place of the file is open and in the box');
      firstSearchId = s.search_id;
      // The account exports every place: all of them become its leads.
      assert.equal((await exportJson(firstSearchId)).length, original.length);

      // The timestamps are ISO strings: let the clock move on so that an update is visibly later.
      await new Promise((r) => setTimeout(r, 20));
      const edited = original
        .filter((l) => !dropped.has((JSON.parse(l) as { id: string }).id))
        .map((l) => {
          const o = JSON.parse(l) as { id: string; phones?: string[]; operating_status?: string };
          if (o.id === phoneChanged) o.phones = ['+13035550123'];
          if (o.id === nowClosed) o.operating_status = 'permanently_closed';
          return JSON.stringify(o);
        });
      const second = writeSnapshot(join(dir, 'v2'), 'boulder.ndjson', edited);
      const summary = await runImport(t.db, loadEnricher(), second);
      assert.equal(summary.dataset, 'boulder');
      assert.equal(summary.retired_count, dropped.size);
      assert.equal(summary.updated_count, 2);
      assert.equal(summary.unchanged_count, edited.length - 2);
      const run = await t.db.kysely
        .selectFrom('import_runs')
        .select(['retired_count', 'status', 'dataset'])
        .where('id', '=', summary.runId)
        .executeTakeFirstOrThrow();
      assert.deepEqual(
        { ...run, retired_count: Number(run.retired_count) },
        { retired_count: dropped.size, status: 'done', dataset: 'boulder' },
      );
    });
    after(async () => {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test('vanished places are retired with a date, the rest keep their ids and first_seen_at', async () => {
      const rows = await rowsBySourceId();
      assert.equal(rows.size, original.length, 'nothing is deleted');
      for (const [sourceId, row] of rows) {
        const was = before1.get(sourceId)!;
        assert.equal(row.id, was.id);
        assert.equal(row.public_id, was.public_id);
        assert.equal(row.first_seen_at, was.first_seen_at);
        if (dropped.has(sourceId)) {
          assert.equal(row.closed_reason, 'retired', sourceId);
          assert.ok(row.closed_at !== null && row.closed_at > was.updated_at, `${sourceId} closed at ${row.closed_at}`);
        } else if (sourceId === nowClosed) {
          assert.equal(row.closed_reason, 'closed');
          assert.ok(row.closed_at !== null && row.closed_at > was.updated_at);
        } else {
          assert.equal(row.closed_reason, null, sourceId);
          assert.equal(row.closed_at, null);
        }
      }
      const changed = rows.get(phoneChanged)!;
      assert.equal(changed.phone, '+13035550123');
      assert.ok(changed.updated_at > before1.get(phoneChanged)!.updated_at, 'a changed place has a newer updated_at');
      assert.equal(rows.get(untouched)!.updated_at, before1.get(untouched)!.updated_at, 'an unchanged place keeps its updated_at');

      const stats = await catalogStats(t.db);
      assert.deepEqual(
        new Map(stats.byStatus.map((r) => [r.status, r.places])),
        new Map([
          ['open', original.length - dropped.size - 1],
          ['retired', dropped.size],
          ['closed', 1],
        ]),
      );
      assert.deepEqual([stats.imports[0]!.dataset, stats.imports[0]!.retired], ['boulder', dropped.size]);
    });

    test('search and export leave the retired and closed places out at once; include_closed=true brings them back', async () => {
      const open = original.length - dropped.size - 1;
      const s = await search();
      assert.equal(s.total, open);
      const gone = new Set([...dropped, nowClosed].map((id) => before1.get(id)!.public_id));
      const exported = await exportJson(s.search_id);
      assert.equal(exported.length, open);
      assert.ok(exported.every((p) => !gone.has(String(p.id)) && p.status === 'open' && p.closed_at === null));
      // The search saved before the re-import exports what is open now.
      assert.equal((await exportJson(firstSearchId)).length, open);
      // CSV carries the new columns.
      const csv = parseCsv((await get(`/api/v2/map/export?search_id=${s.search_id}&format=csv`)).body.replace(/^\uFEFF/, ''), {
        columns: true,
      }) as Array<Record<string, string>>;
      assert.equal(csv.length, open);
      assert.ok(
        csv.every(
          (r) => r.status === 'open' && r.closed_at === '' && r.source === 'overture' && r.first_seen_at !== '' && r.updated_at !== '',
        ),
      );

      const all = await search('&include_closed=true');
      assert.equal(all.total, original.length);
      const withClosed = await exportJson(all.search_id);
      const byId = new Map(withClosed.map((p) => [String(p.id), p]));
      for (const id of dropped) assert.equal(byId.get(before1.get(id)!.public_id)?.status, 'retired');
      assert.equal(byId.get(before1.get(nowClosed)!.public_id)?.status, 'closed');

      // /v1/search: by name, the same rule.
      const name = (JSON.parse(original[ids.indexOf([...dropped][0]!)]!) as { names: { primary: string } }).names.primary;
      const v1 = (extra: string) =>
        get(`/v1/search?query=${encodeURIComponent(name)}&per_page=100${extra}`).then((r) =>
          r.json<{ data: Array<{ id: string }> }>().data.map((p) => p.id),
        );
      const retiredId = before1.get([...dropped][0]!)!.public_id;
      assert.ok(!(await v1('')).includes(retiredId));
      assert.ok((await v1('&include_closed=true')).includes(retiredId));
    });

    test("the account's exported leads still show the retired and closed places, with status and date", async () => {
      const leads: Array<Record<string, unknown>> = [];
      for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
        const page: { data: Array<Record<string, unknown>>; next_cursor: string | null } = (
          await get(`/api/v1/user-api/places?per_page=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
        ).json();
        leads.push(...page.data);
        cursor = page.next_cursor;
      }
      assert.equal(leads.length, original.length);
      const byId = new Map(leads.map((l) => [String(l.id), l]));
      for (const id of dropped) {
        const lead = byId.get(before1.get(id)!.public_id)!;
        assert.equal(lead.status, 'retired');
        assert.match(String(lead.closed_at), /^\d{4}-\d\d-\d\dT/);
        assert.equal(typeof lead.name, 'string');
      }
      assert.equal(byId.get(before1.get(nowClosed)!.public_id)!.status, 'closed');
      assert.equal(byId.get(before1.get(untouched)!.public_id)!.status, 'open');
    });

    test('a place back in the next snapshot is open again, under the same id', async () => {
      const back = writeSnapshot(join(dir, 'v3'), 'boulder.ndjson', original);
      const summary = await runImport(t.db, loadEnricher(), back);
      assert.equal(summary.retired_count, 0);
      assert.equal(summary.updated_count, dropped.size + 2);
      const rows = await rowsBySourceId();
      for (const id of dropped) {
        assert.equal(rows.get(id)!.closed_reason, null);
        assert.equal(rows.get(id)!.id, before1.get(id)!.id);
      }
      assert.equal((await search()).total, original.length);
    });
  });
}

for (const dialect of dialects) {
  describe(`a re-import killed with SIGKILL (${dialect.name})`, () => {
    let t: TestDatabase & { url: string };
    let dir: string;
    after(async () => {
      await t?.dispose();
      rmSync(dir, { recursive: true, force: true });
    });

    test('retires nothing; running it again retires exactly the places the snapshot lost', async () => {
      t = await dialect.open('prepared');
      const k = t.db.kysely;
      dir = mkdtempSync(join(tmpdir(), 'leadatlas-datasets-kill-'));
      // A sixth of the file (a third with IMPORT_TESTS_FULL=1): enough for an import to be killed midway (at
      // a sixth of it, in batches of ten), and three imports a dialect stay short.
      const original = lines(osmNdjson).slice(0, full ? 12_000 : 6_000);
      const first = await runImport(t.db, loadEnricher(), writeSnapshot(join(dir, 'v1'), 'pois.ndjson', original));
      assert.equal(first.dataset, 'pois');
      const osmPlaces = async () =>
        (await k.selectFrom('places').select(['source_id', 'id']).where('source', '=', 'osm').execute()).map(
          (r) => [r.source_id, Number(r.id)] as const,
        );
      const placesBefore = new Map(await osmPlaces());
      // Every 20th line gone; only those that were places (named POIs) can be retired.
      const droppedLines = new Set(original.filter((_, i) => i % 20 === 3));
      const expected = [...droppedLines]
        .map((l) => (JSON.parse(l) as { id: string }).id)
        .filter((id) => placesBefore.has(id))
        .sort();
      assert.ok(expected.length > 100, `${expected.length} places dropped`);
      const edited = writeSnapshot(
        join(dir, 'v2'),
        'pois.ndjson',
        original.filter((l) => !droppedLines.has(l)),
      );

      const { child, exited, stderr } = startCliImport(edited, t.url);
      const progress = async () =>
        Number(
          (
            await k
              .selectFrom('import_runs')
              .select(sql<number>`unchanged_count + updated_count + imported_count`.as('n'))
              .where('status', '=', 'running')
              .where('path', '=', edited)
              .orderBy('id', 'desc')
              .limit(1)
              .executeTakeFirst()
          )?.n ?? 0,
        );
      const deadline = Date.now() + 120_000;
      let seen = 0;
      while (Date.now() < deadline && child.exitCode === null) {
        await new Promise((r) => setTimeout(r, 10));
        seen = await progress();
        if (seen >= original.length / 6) break;
      }
      child.kill('SIGKILL');
      const [code, signal] = await exited;
      assert.equal(signal, 'SIGKILL', `the import ended on its own (code ${code}): ${stderr()}`);
      assert.ok(seen > 0 && seen < placesBefore.size, `${seen} places seen at the kill`);

      if (t.db.sqlite)
        assert.equal((t.db.sqlite.pragma('integrity_check') as Array<{ integrity_check: string }>)[0]!.integrity_check, 'ok');
      const retiredIds = async () =>
        (await k.selectFrom('places').select('source_id').where('closed_reason', '=', 'retired').orderBy('source_id').execute()).map(
          (r) => r.source_id,
        );
      assert.deepEqual(await retiredIds(), [], 'an interrupted import retires nothing');
      assert.equal((await osmPlaces()).length, placesBefore.size, 'and loses nothing');

      const again = await runImport(t.db, loadEnricher(), edited);
      assert.equal(again.dataset, 'pois');
      assert.equal(again.retired_count, expected.length);
      // Ordered in JavaScript: the two databases' collations may order ids differently.
      assert.deepEqual((await retiredIds()).sort(), expected);
      // Every other place is where it was, under the same id.
      const retired = new Set(expected);
      const kept = (await osmPlaces()).filter(([sourceId]) => !retired.has(sourceId));
      assert.equal(kept.length, placesBefore.size - expected.length);
      for (const [sourceId, id] of kept) assert.equal(id, placesBefore.get(sourceId));
      const interrupted = await k
        .selectFrom('import_runs')
        .select(['status', 'error', 'retired_count'])
        .where('path', '=', edited)
        .orderBy('id')
        .execute();
      assert.deepEqual(interrupted, [
        { status: 'failed', error: 'interrupted', retired_count: 0 },
        { status: 'done', error: null, retired_count: expected.length },
      ]);

      // The CLI names the dataset and what it retired: the original file again brings every place back.
      const cli = spawnSync(...cliCommand(['import', join(dir, 'v1', 'pois.ndjson')]), {
        cwd: repoRoot,
        env: { ...process.env, DATABASE_URL: t.url, LOG_LEVEL: 'error' },
        encoding: 'utf8',
      });
      assert.equal(cli.status, 0, cli.stderr);
      assert.match(
        cli.stderr,
        new RegExp(
          `pois\\.ndjson \\(osm-ndjson, dataset pois\\): .*updated ${expected.length}, unchanged ${placesBefore.size - expected.length}, retired 0,`,
        ),
      );
      const refused = spawnSync(...cliCommand(['import', '--dataset', 'pois', edited, edited]), {
        cwd: repoRoot,
        env: { ...process.env, DATABASE_URL: t.url, LOG_LEVEL: 'error' },
        encoding: 'utf8',
      });
      assert.notEqual(refused.status, 0);
      assert.match(refused.stderr, /named twice/);
    });
  });
}

describe('places their source says are closed (Yelp Open Dataset, SQLite)', () => {
  let t: TestApp;
  let account: TestAccount;
  let dir: string;
  // Every fourth business of the sample (all of it with IMPORT_TESTS_FULL=1): a place's status comes from its own
  // record, and a fourth still holds hundreds of closed businesses, in many US cities.
  const sample = lines(join(data, 'ratings/yelp-open-dataset-business-sample5000.ndjson.gz')).filter((_, i) => full || i % 4 === 0);
  const records = sample.map((l) => JSON.parse(l) as { business_id: string; is_open: number; name: string; city: string });
  const closedCount = records.filter((r) => r.is_open === 0).length;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'leadatlas-datasets-yelp-'));
    t = await buildTestApp({ files: [writeSnapshot(dir, 'yelp-open.ndjson', sample)] });
    account = await createAccountWithToken(t.db, { scopes: ['search'] });
  });
  after(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('are imported closed and left out of search unless include_closed=true', async () => {
    assert.ok(closedCount > 100, `${closedCount} closed businesses in the file`);
    const stored = await t.db.kysely
      .selectFrom('places')
      .select(['source_id', 'closed_reason', 'closed_at'])
      .where('source', '=', 'yelp')
      .execute();
    const closedIds = new Set(records.filter((r) => r.is_open === 0).map((r) => r.business_id));
    assert.equal(stored.filter((r) => r.closed_reason === 'closed').length, closedCount);
    for (const r of stored) assert.equal(r.closed_reason === 'closed' && r.closed_at !== null, closedIds.has(r.source_id), r.source_id);

    const country = async (extra: string) => {
      const r = await t.app.inject({
        method: 'GET',
        url: `/api/v2/map/search?country=US&per_page=100${extra}`,
        headers: { authorization: account.authorization },
      });
      assert.equal(r.statusCode, 200, r.body);
      return r.json<{ total: number; data: Array<{ status: string }> }>();
    };
    const openOnly = await country('');
    const all = await country('&include_closed=true');
    const usClosed = await t.db.kysely
      .selectFrom('places')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('country_code', '=', 'US')
      .where('closed_reason', '=', 'closed')
      .executeTakeFirstOrThrow();
    assert.ok(Number(usClosed.n) > 0);
    assert.equal(all.total - openOnly.total, Number(usClosed.n));
    assert.ok(openOnly.data.every((p) => p.status === 'open'));

    // A closed business searched by its name: found only when asked for.
    const closed = records.find(
      (r) => r.is_open === 0 && /^[A-Za-z ]{8,}$/.test(r.name) && records.filter((o) => o.name === r.name).length === 1,
    )!;
    const byName = async (extra: string) => {
      const r = await t.app.inject({
        method: 'POST',
        url: '/v1/search',
        headers: { authorization: account.authorization },
        payload: extra ? { query: closed.name, include_closed: true } : { query: closed.name },
      });
      assert.equal(r.statusCode, 200, r.body);
      return r.json<{ data: Array<{ name: string; status: string }> }>().data.filter((p) => p.name === closed.name);
    };
    assert.deepEqual(await byName(''), []);
    assert.deepEqual(
      (await byName('yes')).map((p) => p.status),
      ['closed'],
    );

    const bad = await t.app.inject({
      method: 'GET',
      url: '/api/v2/map/search?country=US&include_closed=maybe',
      headers: { authorization: account.authorization },
    });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.headers['content-type'] as string, /problem\+json/);
    assert.match(bad.body, /include_closed/);
  });
});
