/**
 * Background work measured right (issue 35, item 6): `leadatlas serve` (compiled, one process) answers a
 * distinct type+city mix arriving as a Poisson process at half its saturation (bench/lib/open-loop.ts: each
 * latency from the request's scheduled time), while the work of the background runs beside it in processes of
 * its own at a lower priority, as deployed:
 *
 * - enrichment: `leadatlas enrich --watch` (ENRICH_NICE, default 10) crawling the crawler bench's farm of local
 *   sites (bench/crawler.ts `--mode farm`: real HTTP servers on loopback, a real DNS server);
 * - monitor evaluation: `leadatlas monitors --nice N` over `--monitors` type+city monitors, with a batch of
 *   `--changes` changed places committed every `--batch-seconds` (as a change file's import does).
 *
 * The enricher's first `--enrich-warm-seconds` after its first crawled site are left out of its phase (on start
 * it ties every place of the catalog to its site). Each background phase is measured against a baseline right before it, on the same server and the same mix:
 * enrichment against the load alone; monitor evaluation against the same change batches with no evaluator
 * (the server's index applies the changes either way, so the ratio is what the evaluation adds). The server's
 * own CPU per answered request is printed for each phase. Target: p99 within 1.5× of its baseline, enrichment at
 * ≥ 50 sites/s.
 *
 *   npm run bench:background -- [--size 200000] [--seconds 20] [--rounds 2] [--rate N] [--nice 10]
 *                               [--monitors 5000] [--changes 2000] [--batch-seconds 5] [--enrich-concurrency 64]
 *                               [--enrich-warm-seconds 30]
 *
 * The saturation is measured first: 16 connections in a closed loop for 8 s over the same mix. `--rate` sets the
 * arrival rate instead of half of it.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { copyFileSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../src/infra/db/database.ts';
import * as enrichRepo from '../src/modules/enrichment/enrichment.repository.ts';
import { argValue } from './lib/args.ts';
import { credentials } from './lib/bench-account.ts';
import { buildCatalog, typeCityPairs } from './lib/catalog.ts';
import { farmUrl, siteName } from './lib/farm-sites.ts';
import { changeBatches, makeMonitors } from './lib/monitor-load.ts';
import { openLoop, percentile } from './lib/open-loop.ts';
import { mulberry32 } from './lib/random.ts';
import { buildServer, cpuSeconds, freePort, httpGet, root, start, stop, unlimited, waitFor, waitIdle } from './lib/server.ts';

const size = Number(argValue('--size', '200000'));
const seconds = Number(argValue('--seconds', '20'));
const rounds = Number(argValue('--rounds', '2'));
const nice = argValue('--nice', '10');
const monitorCount = Number(argValue('--monitors', '5000'));
const changes = Number(argValue('--changes', '2000'));
const batchSeconds = Number(argValue('--batch-seconds', '5'));
const enrichConcurrency = argValue('--enrich-concurrency', '64');
const sites = Number(argValue('--sites', '20000'));
const warmSeconds = Number(argValue('--enrich-warm-seconds', '30'));
const log = (m: string) => console.log(m);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

const catalog = await buildCatalog({ size, dir: resolve(root, 'var/bench'), dataDir: resolve(root, '../shared/data'), log });
// The bench writes monitors, changes and sites: into a copy, so the cached catalog stays as built.
const file = resolve(root, `var/bench/background-${process.pid}.db`);
copyFileSync(catalog.path, file);
const url = `sqlite:${file}`;
const db = openDatabase(url);
const random = mulberry32(356);
log(`catalog: ${catalog.rows.toLocaleString('en')} places (a copy at ${file}); ${cpus().length} cores; load ${load()}`);

const monitors = await makeMonitors(db, monitorCount, 10_000, random);
log(
  `${monitorCount.toLocaleString('en')} monitors (${monitors.members.toLocaleString('en')} members) made in ${monitors.seconds.toFixed(1)} s`,
);
const changeBatch = await changeBatches(db, changes, random);

// The mix: distinct type+city searches with the variants of `bench:api --diverse-only`, shuffled.
const variants = ['', '&has_phone=true', '&min_rating=3', '&sort=rating', '&has_website=true'];
const paths = (await typeCityPairs(db, 2000)).flatMap((p) =>
  variants.map((v) => `/api/v2/map/search?${new URLSearchParams({ type: p.type!, city: p.city, country: p.country })}${v}`),
);
for (let i = paths.length - 1; i > 0; i--) {
  const j = Math.floor(random() * (i + 1));
  [paths[i], paths[j]] = [paths[j]!, paths[i]!];
}
log(`mix: ${paths.length.toLocaleString('en')} distinct type+city searches`);

// The farm of the crawler bench, in a process of its own.
const farm: ChildProcess = fork(resolve(root, 'bench/crawler.ts'), ['--mode', 'farm', '--sites', String(sites)], {
  execArgv: ['--import', 'tsx'],
  stdio: 'inherit',
});
const { port: farmPort, dns } = await new Promise<{ port: number; dns: string }>((done, fail) => {
  farm.once('message', (m) => done(m as { port: number; dns: string }));
  farm.once('exit', (code) => fail(new Error(`the farm exited (${code})`)));
});
const enrichEnv = {
  DATABASE_URL: url,
  LOG_LEVEL: 'warn',
  ENRICH_ALLOW_PRIVATE_NETWORKS: 'true',
  ENRICH_DNS_SERVERS: dns,
  ENRICH_HOST_DELAY_MS: '0',
  ENRICH_MAX_PAGES: '3',
  ENRICH_EXTRACT_THREADS: '1',
  ENRICH_CONCURRENCY: enrichConcurrency,
  ENRICH_NICE: nice,
};

buildServer();
const { authorization } = await credentials(url);
const port = await freePort();
const server = start(['bin/leadatlas.js', 'serve'], {
  ...unlimited,
  DATABASE_URL: url,
  PORT: String(port),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  IMPORT_DEMO_DATA: 'false',
  ENRICH_WORKERS: '0',
  MONITOR_EVALUATOR: 'off',
});
await waitFor(`http://127.0.0.1:${port}/healthz`, server);
for (let i = 0; i < 600; i++) {
  const ready = await httpGet(new Agent(), port, '/readyz', {});
  if (ready.status === 200) break;
  await sleep(500);
}
const agent = new Agent({ keepAlive: true, maxSockets: 512 });
const headers = { authorization };
let next = 0;
/** Answers other than 200, by status (0: no answer), since the last phase began. */
let statuses = new Map<number, number>();
const send = async () => {
  const status = await httpGet(agent, port, paths[next++ % paths.length]!, headers).then(
    (r) => r.status,
    () => 0,
  );
  if (status !== 200) statuses.set(status, (statuses.get(status) ?? 0) + 1);
  return status === 200;
};

interface Phase {
  label: string;
  p50: number;
  p99: number;
  sent: number;
  errors: number;
  cpuUs: number;
  extra: string;
}

async function paced(label: string, rate: number, extra: () => string = () => ''): Promise<Phase> {
  const cpu0 = cpuSeconds(server.pid!);
  statuses = new Map();
  const r = await openLoop(rate, seconds, send, 1 + next);
  const cpu = cpuSeconds(server.pid!) - cpu0;
  return {
    label,
    p50: percentile(r.latenciesMs, 50),
    p99: percentile(r.latenciesMs, 99),
    sent: r.sent,
    errors: r.errors,
    cpuUs: (cpu * 1e6) / Math.max(1, r.sent - r.errors),
    extra: [extra(), ...[...statuses].map(([status, n]) => `${n} × ${status || 'no answer'}`)].filter(Boolean).join(', '),
  };
}

// The start-up's background work (the opening-hours and trust passes over every place) is not a request's.
await waitIdle(server.pid!);
// Warm-up, then the saturation: 16 connections in a closed loop for 8 s.
for (const end = Date.now() + 5000; Date.now() < end; ) await Promise.all(Array.from({ length: 8 }, send));
let answered = 0;
const satEnd = performance.now() + 8000;
await Promise.all(
  Array.from({ length: 16 }, async () => {
    while (performance.now() < satEnd) if (await send()) answered++;
  }),
);
const saturation = answered / 8;
const rate = Number(argValue('--rate', String(Math.max(1, Math.round(saturation / 2)))));
log(
  `saturation: ${saturation.toFixed(0)} req/s (16 connections, closed loop); Poisson arrivals at ${rate}/s, ${seconds} s a phase; load ${load()}`,
);

const doneSites = async () =>
  Number(
    (
      await db.kysely
        .selectFrom('enrich_sites')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'done')
        .executeTakeFirstOrThrow()
    ).n,
  );

async function withEnrichment(round: number): Promise<Phase> {
  const per = Math.floor(sites / rounds);
  // In parts: one INSERT of every site would pass SQLite's limit of bound variables.
  const now = new Date().toISOString();
  for (let from = 0; from < per; from += 150) {
    const ids = Array.from({ length: Math.min(150, per - from) }, (_, k) => round * per + from + k);
    await enrichRepo.ensureSites(
      db,
      ids.map((i) => ({ key: `${siteName(i)}:${farmPort}`, url: farmUrl(i, farmPort), countryCode: 'DE' })),
      now,
    );
  }
  const before = await doneSites();
  const child = start(['bin/leadatlas.js', 'enrich', '--watch'], enrichEnv);
  // Its start-up left out: the measurement begins once it has crawled a site.
  for (const end = Date.now() + 60_000; (await doneSites()) === before && Date.now() < end; ) await sleep(200);
  // And its first minutes' work: on start it ties the catalog's places to their sites (a pass over every place).
  await sleep(warmSeconds * 1000);
  const atStart = await doneSites();
  const t0 = performance.now();
  const phase = await paced(`\`enrich --watch\` at nice ${nice}, concurrency ${enrichConcurrency}`, rate);
  const rateSites = ((await doneSites()) - atStart) / ((performance.now() - t0) / 1000);
  await stop(child);
  phase.extra = [`${rateSites.toFixed(1)} sites/s`, phase.extra].filter(Boolean).join(', ');
  return phase;
}

/** The load with a change batch committed every `batchSeconds` (by this process), with or without the evaluator. */
async function withChanges(evaluator: boolean): Promise<Phase> {
  let child: ChildProcess | undefined;
  if (evaluator) {
    child = start(['bin/leadatlas.js', 'monitors', '--nice', nice], { DATABASE_URL: url, MONITOR_POLL_MS: '200', LOG_LEVEL: 'info' });
    await sleep(3000);
  }
  const logLines = () => readFileSync(resolve(root, 'var/bench/server.log'), 'utf8').split('\n');
  const lines0 = logLines().length;
  let stopBatches = false;
  const batches = (async () => {
    while (!stopBatches) {
      await changeBatch();
      await sleep(batchSeconds * 1000);
    }
  })();
  const phase = await paced(evaluator ? `change batches, \`leadatlas monitors --nice ${nice}\`` : 'change batches, no evaluator', rate);
  stopBatches = true;
  await batches;
  if (child) {
    await stop(child);
    const evaluated = logLines()
      .slice(lines0)
      .filter((l) => /monitors: [1-9]\d* evaluated/.test(l)).length;
    phase.extra = [`${evaluated} evaluation rounds`, phase.extra].filter(Boolean).join(', ');
  }
  return phase;
}

const rows: Array<{ phase: Phase; base?: Phase }> = [];
for (let r = 0; r < rounds; r++) {
  const alone = await paced('alone', rate);
  rows.push({ phase: alone });
  rows.push({ phase: await withEnrichment(r), base: alone });
  const changesAlone = await withChanges(false);
  rows.push({ phase: changesAlone });
  rows.push({ phase: await withChanges(true), base: changesAlone });
  log(`round ${r + 1} done; load ${load()}`);
}

log(`\n| phase | sent | failed | p50 ms | p99 ms | p99 against the baseline before it | server CPU µs/request | |`);
log('|---|---:|---:|---:|---:|---:|---:|---|');
for (const { phase: p, base } of rows)
  log(
    `| ${p.label} | ${p.sent} | ${p.errors} | ${p.p50.toFixed(1)} | ${p.p99.toFixed(1)} | ${base ? `${(p.p99 / base.p99).toFixed(2)}×` : '—'} | ${Math.round(p.cpuUs).toLocaleString('en')} | ${p.extra} |`,
  );
log(`\nload after: ${load()}`);

await stop(server);
farm.kill();
await db.close();
rmSync(file, { force: true });
for (const suffix of ['-wal', '-shm']) rmSync(file + suffix, { force: true });
