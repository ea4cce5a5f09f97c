/**
 * Every core (issue 35, item 5): the index snapshot against a build from the database, and `serve` with one
 * process against two, in the same run on the same catalog.
 *
 *   npm run bench:cluster -- [--size 1000000] [--rounds 2] [--seconds 15] [--connections 50]
 *
 * 1. Snapshot: a `MemorySearchEngine` started on the catalog from the database (which writes the snapshot), then
 *    one started from the snapshot, alternated `--rounds` times; wall time of `start()` for each, the file's size.
 * 2. Processes: the compiled `serve` with WEB_CONCURRENCY=1, then 2, then 1 and 2 again (`--rounds`), each
 *    saturated by autocannon in this process (50 connections, `--seconds`) with distinct type+city searches the
 *    index answers (has_phone, has_website, min_rating, sort=rating variants); answered req/s, and the CPU per
 *    request of the server (every process of it, all threads, from /proc) and of the load generator (this process).
 *    On two cores shared with the load generator (and with other tenants), two server processes cannot reach
 *    twice one's rate: the figures say where the cycles went.
 */
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import autocannon from 'autocannon';
import { openDatabase } from '../src/infra/db/database.ts';
import { createReadPool } from '../src/infra/db/read-pool.ts';
import { TokenService } from '../src/modules/auth/tokens.service.ts';
import { EngineSnapshot } from '../src/modules/search/engine/engine-snapshot.ts';
import { MemorySearchEngine } from '../src/modules/search/engine/search-engine.ts';
import { createReadTasks, readTasksModule } from '../src/modules/search/read-tasks.ts';
import { argValue } from './lib/args.ts';
import { buildCatalog, typeCityPairs } from './lib/catalog.ts';
import { mulberry32 } from './lib/random.ts';
import { buildServer, freePort, root, serverScript, start, stop, unlimited, waitFor } from './lib/server.ts';

const size = Number(argValue('--size', '1000000'));
const rounds = Number(argValue('--rounds', '2'));
const seconds = Number(argValue('--seconds', '15'));
const connections = Number(argValue('--connections', '50'));
const log = (m: string) => console.log(m);
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

const catalog = await buildCatalog({ size, dir: resolve(root, 'var/bench'), dataDir: resolve(root, '../shared/data'), log });
log(`catalog: ${catalog.path}, ${catalog.rows} places; load average ${loadAverage()}`);

// ---------------------------------------------------------------- 1. snapshot against a build from the database
const db = openDatabase(catalog.url);
const snapshotPath = resolve(root, 'var/bench/cluster-bench.search-index');
const quiet = { info() {}, warn: (o: unknown, m: string) => console.warn(m, o) };
const reads = createReadPool({ db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule });
/** What the engine and the snapshot logged, by message: the parts of a start (`ms` of the read, the build, the write). */
async function startEngine(): Promise<{ ms: number; from: string; places: number; parts: Record<string, number> }> {
  let from = '';
  const parts: Record<string, number> = {};
  const log = {
    info: (o: unknown, m: string) => {
      const fields = o as { from?: string; ms?: number };
      if (m === 'search index built') from = fields.from!;
      if (fields.ms !== undefined) parts[m] = fields.ms;
    },
    warn: quiet.warn,
  };
  const engine = new MemorySearchEngine({ db, reads, log, snapshot: new EngineSnapshot(db, snapshotPath, log) }, 3_600_000);
  const started = performance.now();
  await engine.start();
  const ms = performance.now() - started;
  const places = engine.state().engine === 'memory' ? (engine.state() as { places: number }).places : 0;
  await engine.close();
  return { ms, from, places, parts };
}
const startTimes: Record<string, number[]> = { database: [], snapshot: [] };
for (let r = 0; r < rounds; r++) {
  rmSync(snapshotPath, { force: true });
  const built = await startEngine();
  const loaded = await startEngine();
  if (built.from !== 'database' || loaded.from !== 'snapshot')
    throw new Error(`expected a build then a load, got ${built.from}, ${loaded.from}`);
  startTimes.database!.push(built.ms);
  startTimes.snapshot!.push(loaded.ms);
  log(
    `  round ${r + 1}: from the database ${(built.ms / 1000).toFixed(1)} s, from the snapshot ${(loaded.ms / 1000).toFixed(1)} s (${built.places} places; load ${loadAverage()})`,
  );
  log(`    database start: ${JSON.stringify(built.parts)}; snapshot start: ${JSON.stringify(loaded.parts)} (ms)`);
}
const snapshotBytes = statSync(snapshotPath).size;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
log(
  `snapshot: ${(snapshotBytes / 1e6).toFixed(0)} MB (${(snapshotBytes / catalog.rows).toFixed(0)} bytes/place); start from the database median ${(median(startTimes.database!) / 1000).toFixed(1)} s, from the snapshot ${(median(startTimes.snapshot!) / 1000).toFixed(1)} s (${(median(startTimes.database!) / median(startTimes.snapshot!)).toFixed(1)}x faster)`,
);
// Kept: the servers below start from it.
await reads.close();

// ---------------------------------------------------------------- 2. one server process against two
const pairs = await typeCityPairs(db, 1500);
const variants: Array<Record<string, string>> = [
  {},
  { has_phone: 'true' },
  { has_website: 'true' },
  { min_rating: '4' },
  { sort: 'rating' },
  { has_website: 'false', min_rating: '3.5' },
];
const random = mulberry32(35);
const paths = pairs
  .flatMap((p) =>
    variants.map((v) => `/api/v2/map/search?${new URLSearchParams({ type: p.type!, city: p.city, country: p.country, ...v })}`),
  )
  .map((p) => ({ p, k: random() }))
  .sort((a, b) => a.k - b.k)
  .map((x) => x.p);
const now = new Date().toISOString();
const email = `bench-cluster-${Date.now()}@example.com`;
const account = await db.kysely
  .insertInto('accounts')
  .values({ email, email_norm: email, password_hash: 'unused: token only', created_at: now, password_changed_at: now })
  .returning('id')
  .executeTakeFirstOrThrow();
const tokens = new TokenService(db);
const { token } = await tokens.createToken({ accountId: Number(account.id), name: 'bench', scopes: ['search'], expiresInDays: 1 });
await tokens.close();
await db.close();
const authorization = `Bearer ${token}`;
log(`\n${paths.length} distinct type+city searches; compiling the server …`);
buildServer();

/** CPU seconds (user + system, all threads) of a process and its children, from /proc. */
function treeCpuSeconds(pid: number): number {
  const ticks = (p: number) => {
    try {
      const fields = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return Number(fields[11]) + Number(fields[12]);
    } catch {
      return 0;
    }
  };
  const children = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((p) => {
      try {
        return Number(readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) === pid;
      } catch {
        return false;
      }
    });
  return (ticks(pid) + children.reduce((s, c) => s + ticks(c), 0)) / 100;
}

let sent = 0;
async function saturate(base: string, secs: number): Promise<autocannon.Result> {
  return autocannon({
    url: base,
    connections,
    duration: secs,
    headers: { authorization },
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: paths[sent++ % paths.length]! }) }],
  });
}

const runs: Array<{ processes: number; rps: number; serverUs: number; loaderUs: number; p99: number; failed: number; load: string }> = [];
for (let r = 0; r < rounds; r++) {
  for (const processes of [1, 2]) {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const server = start(serverScript, {
      DATABASE_URL: catalog.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      IMPORT_DEMO_DATA: 'false',
      WEB_CONCURRENCY: String(processes),
      READ_CACHE_ENTRIES: '0',
      OPENING_HOURS_CHECK_MS: '0',
      TRUST_POLL_MS: '0',
      SEARCH_INDEX_SNAPSHOT: snapshotPath,
      ...unlimited,
    });
    await waitFor(`${base}/healthz`, server);
    // Every process listening: the cluster hands connections to the processes in turn, and each index has its own build time.
    for (const built = new Set<number>(); built.size < processes; await new Promise((d) => setTimeout(d, 200))) {
      const res = await fetch(`${base}/readyz`, { headers: { connection: 'close' } });
      if (res.ok) built.add(((await res.json()) as { search_index: { builtMs: number } }).search_index.builtMs);
    }
    await saturate(base, 3);
    const cpu0 = treeCpuSeconds(server.pid!);
    const own0 = process.cpuUsage();
    const result = await saturate(base, seconds);
    const serverCpu = treeCpuSeconds(server.pid!) - cpu0;
    const own = process.cpuUsage(own0);
    const answered = result.requests.total;
    const failed = result.non2xx + result.errors + result.timeouts;
    runs.push({
      processes,
      rps: result.requests.average,
      serverUs: (serverCpu / answered) * 1e6,
      loaderUs: (own.user + own.system) / answered,
      p99: result.latency.p99,
      failed,
      load: loadAverage(),
    });
    log(
      `  ${processes} process(es): ${result.requests.average} req/s, p99 ${result.latency.p99} ms, server CPU ${((serverCpu / answered) * 1e6).toFixed(0)} µs/request (${(serverCpu / seconds).toFixed(2)} cores), load generator ${((own.user + own.system) / answered).toFixed(0)} µs/request, ${failed} failed; load ${loadAverage()}`,
    );
    await stop(server);
  }
}
const one = runs.filter((r) => r.processes === 1);
const two = runs.filter((r) => r.processes === 2);
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
log(
  `\nsaturation: 1 process ${mean(one.map((r) => r.rps)).toFixed(0)} req/s, 2 processes ${mean(two.map((r) => r.rps)).toFixed(0)} req/s: ${(mean(two.map((r) => r.rps)) / mean(one.map((r) => r.rps))).toFixed(2)}x (target 1.6x)`,
);
rmSync(snapshotPath, { force: true });
process.exit(0);
