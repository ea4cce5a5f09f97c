/**
 * API benchmark on a catalog of at least 1,000,000 places resampled from the real data, in one run:
 *
 *   npm run bench:api -- [--size 1000000] [--duration 10] [--connections 50] [--bbox-export] [--diverse-only] [--postgres] [--keep-postgres] [--engines] [--cpu-prof DIR]
 *
 * 1. ceiling: a bare Fastify returning a fixed JSON body (same machine, same load generator);
 * 2. GET /api/v2/map/search?type=…&city=… at 50 connections (p50, p99), target p99 < 25 ms;
 * 3. /v1/search full-text name search, target p99 < 50 ms;
 * 4. cheap requests (GET /healthz) while heavy searches run on other connections, target p99 < 25 ms;
 * 5. a CSV export of a saved search matching every place, and of a world-bbox search made through the
 *    API, each against `sqlite3 -csv` on the same rows and columns: target time < 2x, server peak RSS
 *    (VmHWM, reset before the export) < 250 MB. Exported places become the bench account's leads, so
 *    the figure includes recording them;
 * 6. the searches of 2 and 3 again on a server with its read cache off (every search computed), for reference;
 * 7. the diverse workload: distinct type+city searches (1,500 most populous city and category pairs, each
 *    with one of several filter and sort combinations) and distinct full-text queries (words and two-word
 *    names drawn from the catalog), more distinct requests than a run sends, so the read cache seldom
 *    answers; `/healthz` p99 meanwhile. Same targets as 2-4. `--diverse-only` runs the ceiling and this alone.
 *
 * `--engines`: every figure on each database twice, its server with SEARCH_ENGINE=sql and with
 * SEARCH_ENGINE=memory (the in-memory index of src/modules/search/engine/), side by side.
 * `--cpu-prof DIR`: each server runs under `node --cpu-prof` (its main thread and every read thread write a
 * .cpuprofile into DIR/<run>/ when it stops), and DIR/<run>/phases.json holds when each measured run began
 * and ended on the same monotonic clock, so `bench/cpu-profile.ts` can count a phase's samples alone.
 * `--postgres`: every figure also on PostgreSQL, side by side: the same catalog copied into a schema of
 * the local PostgreSQL (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432/test; lib/postgres-catalog.ts,
 * then ANALYZE), a server on it, the same workloads, and as the export baseline PostgreSQL's own
 * `COPY (SELECT …) TO STDOUT` (psql, CSV) of the same rows and columns. The schema is dropped at the end
 * unless `--keep-postgres`.
 *
 * The default server keeps a read cache (READ_CACHE_ENTRIES): the 40 type+city searches and 200 full-text
 * searches repeat, so after the warm-up run most are answered from it; 6 shows the uncached cost.
 * The app runs as a child process from its compiled build (`node bin/leadatlas.js serve`, built first), as in production; autocannon runs here,
 * on the same 2 cores, for every figure including the ceiling. A measurement whose route is not there
 * (404 from the app) is reported as skipped. The catalog is cached under var/bench/ (see lib/catalog.ts).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { resolve } from 'node:path';
import autocannon from 'autocannon';
import { openDatabase } from '../src/infra/db/database.ts';
import { placeFields } from '../src/modules/places/places.schema.ts';
import { noCriteria } from '../src/modules/search/query/criteria.ts';
import { credentials } from './lib/bench-account.ts';
import { buildCatalog, typeCityPairs } from './lib/catalog.ts';
import { dropSchema, loadCatalogIntoPostgres } from './lib/postgres-catalog.ts';
import { mulberry32 } from './lib/random.ts';
import { buildServer, freePort, procStatus, serverLog, serverScript, start, stop, unlimited, waitFor } from './lib/server.ts';

const root = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const argNumber = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  const value = i >= 0 ? Number(args[i + 1]) : fallback;
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
};
const size = argNumber('--size', 1_000_000);
const duration = argNumber('--duration', 10);
const connections = argNumber('--connections', 50);
const withBboxExport = args.includes('--bbox-export');
const diverseOnly = args.includes('--diverse-only');
const withPostgres = args.includes('--postgres');
const keepPostgres = args.includes('--keep-postgres');
const compareEngines = args.includes('--engines');
const cpuProfDir = args.includes('--cpu-prof') ? resolve(args[args.indexOf('--cpu-prof') + 1] ?? 'var/bench/profiles') : null;
const pgAdminUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const pgSchema = `bench_api_${size}`;
const log = (m: string) => console.log(m);

interface Row {
  /** SQLite or PostgreSQL (the ceiling's figures are measured once, for both). */
  dialect: string;
  figure: string;
  value: string;
  baseline: string;
  ratio: string;
  target: string;
  verdict: string;
}
const rows: Row[] = [];
const skipped: string[] = [];
const failures: string[] = [];
/** Milliseconds; a run in which no request completed has no latency (infinite: every target missed). */
const ms = (n: number) => (Number.isFinite(n) ? `${n.toFixed(1)} ms` : 'none answered');

// ---------------------------------------------------------------- catalog and credentials
log(`catalog: ${size} places with coordinates (cached under var/bench/)`);
const catalog = await buildCatalog({ size, dir: resolve(root, 'var/bench'), dataDir: resolve(root, '../shared/data'), log });
log(
  `catalog ${catalog.built ? 'built' : 'reused'} in ${catalog.seconds.toFixed(0)} s: ${catalog.rows} places (${catalog.realRows} imported from the real files) at ${catalog.path}`,
);

const db = openDatabase(catalog.url);
/** The Authorization header of the database whose server is measured now. */
let authorization = '';

// Workload: the (city, type) pairs with the most places, and words from real names.
const pairs = await db.kysely
  .selectFrom('places')
  .innerJoin('cities', 'cities.id', 'places.city_id')
  .innerJoin('categories', 'categories.slug', 'places.category')
  .select(['cities.name as city', 'cities.country_code as country', 'places.category as type', (eb) => eb.fn.countAll<number>().as('n')])
  .groupBy(['cities.name', 'cities.country_code', 'places.category'])
  .orderBy('n', 'desc')
  .limit(40)
  .execute();
const sampleNames = await db.kysely.selectFrom('places').select('name').where('source_id', 'not like', '%#r%').orderBy('id').execute();
const words = [...new Set(sampleNames.flatMap((r) => r.name.split(/[^\p{L}\p{N}]+/u)).filter((w) => w.length >= 5 && /^\p{L}+$/u.test(w)))];
const textQueries = Array.from({ length: 200 }, (_, i) => words[(i * 7919) % words.length]!);
const exportColumns = placeFields;

// The diverse workload: distinct requests, more than a run sends, in a shuffled order (seeded, so two runs
// send the same requests).
const diversePairs = await typeCityPairs(db, 1500);
const variants: Array<Record<string, string>> = [
  {},
  { has_phone: 'true' },
  { has_website: 'true' },
  { min_rating: '4' },
  { sort: 'rating' },
  { sort: 'name' },
  { has_phone: 'true', sort: 'review_count' },
  { per_page: '50' },
  { has_website: 'false', per_page: '10' },
  { min_rating: '3.5', has_phone: 'true' },
];
const random = mulberry32(15);
const diverseTypeCity = shuffle(
  diversePairs.flatMap((p) =>
    variants.map((v) => `/api/v2/map/search?${new URLSearchParams({ type: p.type!, city: p.city, country: p.country, ...v })}`),
  ),
  random,
);
const twoWordNames = [
  ...new Set(sampleNames.map((r) => r.name.split(/\s+/).slice(0, 2).join(' ')).filter((n) => /^[\p{L}'-]{3,} [\p{L}'-]{3,}$/u.test(n))),
];
const diverseText = shuffle(
  [
    ...words.map((q) => `/v1/search?${new URLSearchParams({ query: q })}`),
    ...twoWordNames.map((q) => `/v1/search?${new URLSearchParams({ query: q })}`),
  ],
  random,
);
log(`diverse workload: ${diverseTypeCity.length} distinct type+city searches, ${diverseText.length} distinct full-text queries`);
await db.close();

// ---------------------------------------------------------------- servers
process.on('uncaughtException', (err) => {
  console.error(err);
  process.exit(1);
});

interface Load {
  url: string;
  connections: number;
  paths: string[];
  method?: 'GET' | 'POST';
  body?: (i: number) => string;
}

async function cannon(load: Load, seconds = duration): Promise<autocannon.Result> {
  let i = 0;
  const result = await autocannon({
    url: load.url,
    connections: load.connections,
    duration: seconds,
    headers: { authorization, 'content-type': 'application/json' },
    requests: [
      {
        method: load.method ?? 'GET',
        setupRequest: (req) => {
          const k = i++;
          return { ...req, path: load.paths[k % load.paths.length]!, ...(load.body ? { body: load.body(k) } : {}) };
        },
      },
    ],
  });
  // Not one answer within the run (each took longer, or failed): autocannon reports 0 ms, which is no latency.
  if (result.requests.total === 0) result.latency = { ...result.latency, p50: Infinity, p99: Infinity };
  return result;
}

/** Warm-up, then the measured run. Failed requests are counted and reported next to the figure (an error is fast). */
async function measure(name: string, load: Load): Promise<autocannon.Result | null> {
  const probe = await fetch(`${load.url}${load.paths[0]}`, {
    method: load.method ?? 'GET',
    headers: { authorization, 'content-type': 'application/json' },
    body: load.body?.(0),
  });
  if (probe.status === 404 && (await probe.text()).includes('No route')) {
    skipped.push(`${name}: the route is not there (404)`);
    return null;
  }
  await cannon(load, 2);
  const result = await cannon(load);
  const bad = result.non2xx + result.errors + result.timeouts;
  log(
    `  ${name}: ${result.requests.total} requests, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, ${result.requests.average} req/s, ${bad} failed`,
  );
  if (bad > 0) failures.push(`${name}: ${bad} of ${result.requests.total} requests failed (non-2xx, errors or timeouts; see ${serverLog})`);
  return result;
}

log('\ncompiling the server (npm run build) …');
buildServer();

const ceilingPort = await freePort();
const ceiling = start(['bench/lib/ceiling-server.ts'], { PORT: String(ceilingPort) });
await waitFor(`http://127.0.0.1:${ceilingPort}/`, ceiling);
log('\nceiling (bare Fastify, fixed JSON)');
const ceil = (await measure('ceiling', { url: `http://127.0.0.1:${ceilingPort}`, connections, paths: ['/'] }))!;
await stop(ceiling);

interface Target {
  /** The database, and with `--engines` the search engine its server runs. */
  name: string;
  /** Environment of its server beyond the bench's own (SEARCH_ENGINE with `--engines`). */
  env?: Record<string, string>;
  url: string;
  accountId: number;
  authorization: string;
  /** The database's own export of the same rows and columns as CSV: seconds, lines and bytes. */
  exportBaseline: (select: string) => { seconds: number; lines: number; bytes: number; tool: string };
}

/** Every figure on one database: a server of its own on `target.url`, the workloads, the exports. */
async function suite(target: Target): Promise<void> {
  log(`\n================ ${target.name}`);
  authorization = target.authorization;
  const account = { id: target.accountId };
  const addRow = (r: Omit<Row, 'dialect'>) => rows.push({ dialect: target.name, ...r });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const profDir = cpuProfDir ? resolve(cpuProfDir, target.name.replace(/\W+/g, '-')) : null;
  if (profDir) mkdirSync(profDir, { recursive: true });
  /** When each measured run began and ended (µs, CLOCK_MONOTONIC like V8's profile timestamps), with --cpu-prof. */
  const phases: Array<{ name: string; startUs: number; endUs: number }> = [];
  const phase = async <R>(name: string, run: () => Promise<R>): Promise<R> => {
    const startUs = Number(process.hrtime.bigint() / 1000n);
    const result = await run();
    phases.push({ name, startUs, endUs: Number(process.hrtime.bigint() / 1000n) });
    return result;
  };
  const app = start(
    serverScript,
    {
      DATABASE_URL: target.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      IMPORT_DEMO_DATA: 'false',
      ...unlimited,
      ...target.env,
    },
    profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
  );
  await waitFor(`${base}/healthz`, app);

  const ratioTo = (value: number, baseline: number) => `${(value / baseline).toFixed(2)}x`;
  const verdict = (ok: boolean) => (ok ? 'ok' : 'MISSED');

  // ---------------------------------------------------------------- diverse searches (first: nothing cached yet)
  // A measured run sends each path once at most while there are more paths than requests; the warm-up of
  // `measure` is skipped so it does not fill the cache with the paths the run then sends.
  log('\ndiverse workload (distinct searches, the read cache seldom answers)');
  {
    // Warm-up outside the measured set (per_page=7 is in no measured request): the server loads its
    // resolvers (taxonomy, gazetteer) on the first searches, which is start-up, not the cost of a search.
    await cannon(
      {
        url: base,
        connections,
        paths: pairs.map(
          (p) => `/api/v2/map/search?${new URLSearchParams({ type: p.type!, city: p.city, country: p.country, per_page: '7' })}`,
        ),
      },
      3,
    );
    await cannon(
      {
        url: base,
        connections,
        paths: textQueries.slice(0, 20).map((q) => `/v1/search?${new URLSearchParams({ query: q, per_page: '7' })}`),
      },
      3,
    );
    const sent = { typeCity: 0, text: 0 };
    const once = (paths: string[], key: keyof typeof sent): Load => ({ url: base, connections, paths: paths.slice(sent[key]) });
    const tcd = await phase('type+city, distinct', () => cannon(once(diverseTypeCity, 'typeCity')));
    sent.typeCity += tcd.requests.total;
    reportDiverse('type+city, distinct', tcd, diverseTypeCity.length, 25);
    const ftd = await phase('full text, distinct', () => cannon(once(diverseText, 'text')));
    sent.text += ftd.requests.total;
    reportDiverse('full text, distinct', ftd, diverseText.length, 50);
    const heavy = [...diverseTypeCity.slice(sent.typeCity), ...diverseText.slice(sent.text)];
    const [cheapBusy, heavyRun] = await Promise.all([
      cannon({ url: base, connections: 10, paths: ['/healthz'] }),
      cannon({ url: base, connections: Math.max(1, connections - 10), paths: shuffle(heavy, random) }),
    ]);
    log(
      `  /healthz while ${Math.max(1, connections - 10)} conn. send distinct searches: p99 ${cheapBusy.latency.p99} ms; the searches: p99 ${heavyRun.latency.p99} ms, ${heavyRun.requests.average} req/s`,
    );
    if (cheapBusy.non2xx + cheapBusy.errors + heavyRun.non2xx + heavyRun.errors > 0)
      failures.push(
        `${target.name}: diverse concurrent run: ${cheapBusy.non2xx + cheapBusy.errors} cheap and ${heavyRun.non2xx + heavyRun.errors} searches failed`,
      );
    addRow({
      figure: '/healthz p99 during distinct searches',
      value: ms(cheapBusy.latency.p99),
      baseline: ms(ceil.latency.p99),
      ratio: ratioTo(cheapBusy.latency.p99, ceil.latency.p99),
      target: '< 25 ms',
      verdict: verdict(cheapBusy.latency.p99 < 25),
    });
  }

  function reportDiverse(name: string, r: autocannon.Result, distinct: number, targetMs: number): void {
    const bad = r.non2xx + r.errors + r.timeouts;
    log(
      `  ${name}: ${r.requests.total} requests of ${distinct} distinct, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, ${r.requests.average} req/s, ${bad} failed`,
    );
    if (bad > 0) failures.push(`${target.name}: ${name}: ${bad} of ${r.requests.total} requests failed (see ${serverLog})`);
    if (r.requests.total > distinct)
      log(`  note: the run sent more requests than there are distinct ones; the repeats may come from the cache`);
    addRow({
      figure: `${name} p99 (${connections} conn.)`,
      value: ms(r.latency.p99),
      baseline: ms(ceil.latency.p99),
      ratio: ratioTo(r.latency.p99, ceil.latency.p99),
      target: `< ${targetMs} ms`,
      verdict: verdict(r.latency.p99 < targetMs),
    });
    addRow({
      figure: `${name} throughput`,
      value: `${r.requests.average} req/s`,
      baseline: `${ceil.requests.average} req/s`,
      ratio: ratioTo(r.requests.average, ceil.requests.average),
      target: '',
      verdict: '',
    });
  }

  if (!diverseOnly) {
    // ---------------------------------------------------------------- searches
    log('\ntype + city search');
    const typeCity = pairs.map(
      (p) => `/api/v2/map/search?${new URLSearchParams({ type: p.type!, city: p.city, country: p.country, per_page: '20' })}`,
    );
    const tc = await measure('type+city', { url: base, connections, paths: typeCity });
    if (tc) {
      addRow({
        figure: `type+city search p50 (${connections} conn.)`,
        value: ms(tc.latency.p50),
        baseline: ms(ceil.latency.p50),
        ratio: ratioTo(tc.latency.p50, ceil.latency.p50),
        target: '',
        verdict: '',
      });
      addRow({
        figure: `type+city search p99 (${connections} conn.)`,
        value: ms(tc.latency.p99),
        baseline: ms(ceil.latency.p99),
        ratio: ratioTo(tc.latency.p99, ceil.latency.p99),
        target: '< 25 ms',
        verdict: verdict(tc.latency.p99 < 25),
      });
      addRow({
        figure: 'type+city search throughput',
        value: `${tc.requests.average} req/s`,
        baseline: `${ceil.requests.average} req/s`,
        ratio: ratioTo(tc.requests.average, ceil.requests.average),
        target: '',
        verdict: '',
      });
    }

    log('\n/v1/search full text');
    const fullText = textQueries.map((q) => `/v1/search?${new URLSearchParams({ query: q })}`);
    const ft = await measure('full-text', { url: base, connections, paths: fullText });
    if (ft) {
      addRow({
        figure: `/v1/search full-text p50 (${connections} conn.)`,
        value: ms(ft.latency.p50),
        baseline: ms(ceil.latency.p50),
        ratio: ratioTo(ft.latency.p50, ceil.latency.p50),
        target: '',
        verdict: '',
      });
      addRow({
        figure: `/v1/search full-text p99 (${connections} conn.)`,
        value: ms(ft.latency.p99),
        baseline: ms(ceil.latency.p99),
        ratio: ratioTo(ft.latency.p99, ceil.latency.p99),
        target: '< 50 ms',
        verdict: verdict(ft.latency.p99 < 50),
      });
    }

    log('\ncheap requests alone, then while heavy searches run');
    const cheapLoad: Load = { url: base, connections: 10, paths: ['/healthz'] };
    const cheapAlone = await measure('cheap alone', cheapLoad);
    if (cheapAlone && (tc || ft)) {
      const heavyPaths = [...(ft ? fullText : []), ...(tc ? typeCity : [])];
      const [cheapBusy, heavy] = await Promise.all([
        cannon(cheapLoad),
        cannon({ url: base, connections: Math.max(1, connections - 10), paths: heavyPaths }),
      ]);
      if (cheapBusy.non2xx + cheapBusy.errors + heavy.non2xx + heavy.errors > 0) {
        failures.push(
          `${target.name}: concurrent run: ${cheapBusy.non2xx + cheapBusy.errors} cheap and ${heavy.non2xx + heavy.errors} heavy requests failed`,
        );
      }
      log(
        `  cheap under load: p50 ${cheapBusy.latency.p50} ms, p99 ${cheapBusy.latency.p99} ms; heavy alongside: p99 ${heavy.latency.p99} ms, ${heavy.requests.average} req/s, ${heavy.non2xx + heavy.errors} failed`,
      );
      addRow({
        figure: `cheap p99 while ${Math.max(1, connections - 10)} conn. search`,
        value: ms(cheapBusy.latency.p99),
        baseline: `${ms(cheapAlone.latency.p99)} (alone)`,
        ratio: ratioTo(cheapBusy.latency.p99, cheapAlone.latency.p99),
        target: '< 25 ms',
        verdict: verdict(cheapBusy.latency.p99 < 25),
      });
    } else skipped.push(target.name + ': ' + 'cheap requests while heavy searches run: needs the search routes');

    // ---------------------------------------------------------------- export
    // The API saves a search only with at least one filter; "every place" is stored the way the search side
    // stores one (criteria without filters). A world bbox through the API is measured too: it adds the
    // R*Tree probe per batch, which is the search side's cost.
    log("\nCSV export of every place vs the database's own CSV of the same rows and columns");
    {
      const bench = openDatabase(target.url);
      const everyPlace = `srch_${'b'.repeat(8)}${Date.now()
        .toString(32)
        .slice(-8)
        .padStart(8, 'a')
        .replace(/[^a-z2-7]/g, 'a')}`;
      const noFilter = noCriteria;
      await bench.kysely
        .withTables<{
          searches: {
            public_id: string;
            account_id: number;
            params: string;
            criteria: string;
            resolution: string;
            sort: string;
            total: number;
            created_at: string;
          };
        }>()
        .insertInto('searches')
        .values({
          public_id: everyPlace,
          account_id: Number(account.id),
          params: '{}',
          criteria: JSON.stringify(noFilter),
          resolution: JSON.stringify({ type: null, city: null, country: null }),
          sort: 'name',
          total: 0,
          created_at: new Date().toISOString(),
        })
        .execute();
      await bench.close();
      // Search and export leave closed and retired places out (closed_at set): so does the baseline.
      await exportFigure('every place', everyPlace, 'WHERE closed_at IS NULL');

      const world = withBboxExport
        ? await fetch(`${base}/api/v2/map/search?bbox=-180,-90,180,90&per_page=1`, { headers: { authorization } })
        : null;
      if (world === null)
        skipped.push(
          target.name +
            ': ' +
            'CSV export of a world bbox search (pass --bbox-export): each batch re-reads the whole R*Tree, so it takes minutes at 1M places',
        );
      else if (world.status === 404) skipped.push(target.name + ': ' + 'CSV export of a world bbox search: needs /api/v2/map/search');
      else {
        const found = (await world.json()) as { search_id?: string };
        if (!found.search_id) throw new Error(`the world bbox search failed: ${JSON.stringify(found)}`);
        await exportFigure(
          'world bbox search',
          found.search_id,
          'WHERE closed_at IS NULL AND lat IS NOT NULL AND lon IS NOT NULL AND lon BETWEEN -180 AND 180 AND lat BETWEEN -90 AND 90',
        );
      }
    }

    async function exportFigure(label: string, searchId: string, where: string): Promise<void> {
      const pid = app.pid!;
      // Resets the server's peak RSS (VmHWM) so the figure is the export's, not the searches' before it.
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
      const rssBefore = procStatus(pid, 'VmRSS');
      // The searches before may still hold the database's connections (statements run up to the time
      // budget after their clients gave up): an export that finds none answers 503 at once; wait and retry.
      let t0 = performance.now();
      let answer = await download(`${base}/api/v2/map/export?search_id=${searchId}&format=csv`);
      for (let retry = 1; answer.status === 503 && retry <= 6; retry++) {
        log(`  ${label}: 503 (the database's connections busy), retry ${retry} in 5 s`);
        await new Promise((r) => setTimeout(r, 5000));
        t0 = performance.now();
        answer = await download(`${base}/api/v2/map/export?search_id=${searchId}&format=csv`);
      }
      const { bytes, lines, status } = answer;
      const exportSeconds = (performance.now() - t0) / 1000;
      const peak = procStatus(pid, 'VmHWM');
      // File-backed pages are SQLite's memory map (mmap_size) of the catalog; anonymous ones are heaps and caches.
      const anon = procStatus(pid, 'RssAnon');
      const file = procStatus(pid, 'RssFile');
      if (status !== 200) throw new Error(`export answered ${status}`);
      const rowsExported = lines - 1;
      log(
        `  ${label}: ${rowsExported} rows, ${(bytes / 1e6).toFixed(0)} MB in ${exportSeconds.toFixed(2)} s; server RSS ${rssBefore.toFixed(0)} MB before, peak ${peak.toFixed(0)} MB, after: ${anon.toFixed(0)} MB anonymous + ${file.toFixed(0)} MB file-backed`,
      );

      const select = `SELECT ${exportColumns.map((f) => sqlColumn(f)).join(', ')} FROM places ${where} ORDER BY id`;
      const baseline = target.exportBaseline(select);
      log(`  ${baseline.tool}: ${baseline.lines - 1} rows, ${(baseline.bytes / 1e6).toFixed(0)} MB in ${baseline.seconds.toFixed(2)} s`);
      if (baseline.lines - 1 !== rowsExported)
        log(`  note: ${baseline.tool} selected ${baseline.lines - 1} rows, the export ${rowsExported}`);
      addRow({
        figure: `CSV export, ${label}, ${rowsExported} rows`,
        value: `${exportSeconds.toFixed(2)} s`,
        baseline: `${baseline.seconds.toFixed(2)} s (${baseline.tool})`,
        ratio: ratioTo(exportSeconds, baseline.seconds),
        target: '< 2x',
        verdict: verdict(exportSeconds < 2 * baseline.seconds),
      });
      addRow({
        figure: `  server peak RSS (VmHWM)`,
        value: `${peak.toFixed(0)} MB`,
        baseline: `${rssBefore.toFixed(0)} MB (before)`,
        ratio: ratioTo(peak, rssBefore),
        target: '< 250 MB',
        verdict: verdict(peak < 250),
      });
      addRow({
        figure: `  growth during the export`,
        value: `${(peak - rssBefore).toFixed(0)} MB`,
        baseline: '',
        ratio: '',
        target: '',
        verdict: '',
      });
    }

    await stop(app);

    // ---------------------------------------------------------------- the same searches without the read cache
    // The figures above use the default server, whose read cache answers a repeated search from memory while
    // the catalog is unchanged. These show what every search costs when nothing is cached (all distinct searches).
    log('\nthe same searches with the read cache off (READ_CACHE_ENTRIES=0)');
    {
      const coldPort = await freePort();
      const coldBase = `http://127.0.0.1:${coldPort}`;
      const cold = start(serverScript, {
        DATABASE_URL: target.url,
        PORT: String(coldPort),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        IMPORT_DEMO_DATA: 'false',
        READ_CACHE_ENTRIES: '0',
        ...unlimited,
      });
      await waitFor(`${coldBase}/healthz`, cold);
      for (const [name, paths, warm] of [
        ['type+city', typeCity, tc],
        ['full-text', fullText, ft],
      ] as const) {
        const r = warm ? await measure(`${name}, cache off`, { url: coldBase, connections, paths }) : null;
        if (r && warm) {
          addRow({
            figure: `${name} p99, read cache off (${connections} conn.)`,
            value: ms(r.latency.p99),
            baseline: `${ms(warm.latency.p99)} (cache on)`,
            ratio: ratioTo(r.latency.p99, warm.latency.p99),
            target: '',
            verdict: '',
          });
          addRow({
            figure: `${name} throughput, read cache off`,
            value: `${r.requests.average} req/s`,
            baseline: `${warm.requests.average} req/s (cache on)`,
            ratio: ratioTo(r.requests.average, warm.requests.average),
            target: '',
            verdict: '',
          });
        }
      }
      await stop(cold);
    }
  } else await stop(app);
  if (profDir) writeFileSync(resolve(profDir, 'phases.json'), `${JSON.stringify(phases, null, 2)}\n`);
}

/** A shell pipeline's seconds and the `wc -lc` of its output. */
function timedCsv(tool: string, command: string): { seconds: number; lines: number; bytes: number; tool: string } {
  const t1 = performance.now();
  // pipefail: a failing tool (a column it does not know) is an error, not an empty output.
  const run = spawnSync('bash', ['-o', 'pipefail', '-c', `${command} | wc -lc`], { encoding: 'utf8' });
  const seconds = (performance.now() - t1) / 1000;
  if (run.status !== 0) throw new Error(`${tool} failed: ${run.stderr}`);
  const [lines, bytes] = run.stdout.trim().split(/\s+/).map(Number);
  return { seconds, lines: lines!, bytes: bytes!, tool };
}

// ---------------------------------------------------------------- the databases
const targets: Target[] = [
  {
    name: 'SQLite',
    url: catalog.url,
    ...(await credentials(catalog.url)),
    exportBaseline: (select) => timedCsv('sqlite3 -csv', `sqlite3 -readonly -csv -header '${catalog.path}' "${select}"`),
  },
];
if (withPostgres) {
  log(`\ncopying the catalog into PostgreSQL (schema ${pgSchema}) …`);
  const loaded = await loadCatalogIntoPostgres(catalog.path, pgAdminUrl, pgSchema, log);
  log(`  loaded and analysed in ${loaded.seconds.toFixed(0)} s`);
  targets.push({
    name: 'PostgreSQL',
    url: loaded.url,
    ...(await credentials(loaded.url)),
    exportBaseline: (select) =>
      timedCsv(
        'COPY TO STDOUT',
        `psql '${pgAdminUrl}' -X -q -c "SET search_path = ${pgSchema}" -c "COPY (${select}) TO STDOUT WITH (FORMAT csv, HEADER)"`,
      ),
  });
}
// With --engines, each database twice: the SQL search path, then the in-memory index, on the same catalog.
const runs = compareEngines
  ? targets.flatMap((t) =>
      (['sql', 'memory'] as const).map((engine) => ({ ...t, name: `${t.name} ${engine}`, env: { SEARCH_ENGINE: engine } })),
    )
  : targets;
try {
  for (const target of runs) await suite(target);
} finally {
  if (withPostgres && !keepPostgres) await dropSchema(pgAdminUrl, pgSchema);
}

// ---------------------------------------------------------------- clean-up
// The bench accounts own a million leads per export run: remove them (this run's and any left by an
// interrupted one; leads, searches, exports and tokens go with them), so the cached catalog stays the same size.
{
  const clean = openDatabase(catalog.url);
  const removed = await clean.kysely.deleteFrom('accounts').where('email', 'like', 'bench-%@example.com').executeTakeFirst();
  clean.sqlite?.pragma('wal_checkpoint(TRUNCATE)');
  await clean.close();
  log(`\nremoved ${Number(removed.numDeletedRows)} bench account(s) with their leads and searches`);
}

// ---------------------------------------------------------------- report
log(`\nLeadAtlas API benchmark: ${catalog.rows} places, ${connections} connections, ${duration} s per run, autocannon on the same machine`);
const header: Row = {
  dialect: 'database',
  figure: 'figure',
  value: 'value',
  baseline: 'baseline',
  ratio: 'ratio',
  target: 'target',
  verdict: '',
};
const width = (k: keyof Row) => Math.max(...[header, ...rows].map((r) => r[k].length));
for (const r of [header, ...rows]) {
  log(
    `${r.dialect.padEnd(width('dialect'))}  ${r.figure.padEnd(width('figure'))}  ${r.value.padStart(width('value'))}  ${r.baseline.padEnd(width('baseline'))}  ${r.ratio.padStart(width('ratio'))}  ${r.target.padEnd(width('target'))}  ${r.verdict}`,
  );
}
if (runs.length > 1) {
  // Side by side: each figure on each database (the n-th figure of a name on each, in the order measured).
  log('\nside by side');
  const names = [...new Set(rows.map((r) => r.figure))];
  const table = [['figure', 'target', ...runs.map((t) => t.name)]];
  for (const figure of names) {
    const cells = runs.map((t) => {
      const r = rows.find((x) => x.figure === figure && x.dialect === t.name);
      return r ? `${r.value}${r.verdict ? ` ${r.verdict}` : ''}` : '—';
    });
    table.push([figure, rows.find((x) => x.figure === figure)!.target, ...cells]);
  }
  const w = table[0]!.map((_, c) => Math.max(...table.map((r) => r[c]!.length)));
  for (const r of table) log(r.map((v, c) => (c === 0 || c === 1 ? v.padEnd(w[c]!) : v.padStart(w[c]!))).join('  '));
}
for (const s of skipped) log(`SKIPPED ${s}`);
for (const f of failures) log(`FAILED REQUESTS ${f}`);

/** Streams a response to nowhere, counting bytes and lines. */
function download(url: string): Promise<{ status: number; bytes: number; lines: number }> {
  return new Promise((done, fail) => {
    const req = request(url, { headers: { authorization } }, (res) => {
      let bytes = 0;
      let lines = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      });
      res.on('end', () => done({ status: res.statusCode ?? 0, bytes, lines }));
      res.on('error', fail);
      res.on('close', () => {
        if (!res.complete) fail(new Error(`${url}: the response ended early after ${bytes} bytes`));
      });
    });
    req.on('error', fail);
    req.end();
  });
}

/** The SQL expression the database's own CSV prints for a public field (same values as the export, without the JSON decoding). */
function sqlColumn(field: string): string {
  const names: Record<string, string> = { id: 'public_id', country: 'country_code', status: "coalesce(closed_reason, 'open')" };
  return `${names[field] ?? field} AS ${field}`;
}

function shuffle<T>(items: T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
