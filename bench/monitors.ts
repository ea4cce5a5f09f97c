/**
 * What monitors cost: `--monitors` monitors evaluated after a batch of `--changes` changed places, and the
 * search p99 while they are evaluated against the same searches without evaluation:
 *
 *   npm run bench:monitors -- [--places 200000] [--monitors 10000] [--changes 10000] [--searches 300]
 *
 * The catalog is the resampled benchmark catalog (bench/lib/catalog.ts, cached in var/bench). Monitors are
 * type + city searches (the most common kind of saved search), drawn from the catalog's (category, city)
 * pairs of at most MONITOR_MAX_PLACES places, many accounts. The change batch renames `--changes` random
 * places and closes one in ten (one transaction, as a change file's commit), then `evaluateMonitors` is timed
 * (target: within 60 s). Searches (`searchPlaces`, the read pool of two threads, no read cache) run in
 * turn: first alone (baseline), then while a second batch is evaluated; the p99 ratio is printed (target
 * ≤ 1.2×). Evaluation runs on the server's event loop, as `serve` runs it.
 *
 * With `--process` (and `--nice N`, default 10, the command's own default), a third batch is then evaluated by
 * `leadatlas monitors` in a process of its own (as with MONITOR_EVALUATOR=off), the same searches run
 * meanwhile, and both ratios are printed against the same baseline; the searches alone are measured once more
 * at the end, to show how much the baseline itself moves on a shared host, and the ratios against both
 * baselines together are printed too, as is the ratio against searches alone measured just before the batch with
 * the evaluator process running idle.
 */
import { spawn } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../src/infra/db/database.ts';
import { createReadPool } from '../src/infra/db/read-pool.ts';
import { evaluateMonitors } from '../src/modules/monitors/monitors.evaluator.ts';
import { createReadTasks, readTasksModule } from '../src/modules/search/read-tasks.ts';
import type { MapSearchQuery } from '../src/modules/search/search.schema.ts';
import { searchPlaces } from '../src/modules/search/search.service.ts';
import { createSearch } from '../src/modules/search/search.ts';
import { argValue } from './lib/args.ts';
import { buildCatalog } from './lib/catalog.ts';
import { changeBatches, makeMonitors } from './lib/monitor-load.ts';
import { mulberry32 } from './lib/random.ts';

const size = Number(argValue('--places', '200000'));
const monitorCount = Number(argValue('--monitors', '10000'));
const changes = Number(argValue('--changes', '10000'));
const searchCount = Number(argValue('--searches', '300'));
const separateProcess = process.argv.includes('--process');
const nice = argValue('--nice', '10');
const maxPlaces = 10_000;
const random = mulberry32(25);
const log = (m: string) => console.log(m);

const catalog = await buildCatalog({
  size,
  dir: resolve(import.meta.dirname, '../var/bench'),
  dataDir: resolve(import.meta.dirname, '../../shared/data'),
  log,
});
const db = openDatabase(catalog.url);
log(
  `catalog ${catalog.path}: ${catalog.rows.toLocaleString('en')} places; ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
);

// Monitors of earlier runs go: each run starts from none.
const load = await makeMonitors(db, monitorCount, maxPlaces, random);
const { pairs, accounts } = load;
log(
  `${monitorCount.toLocaleString('en')} monitors made from ${pairs.length.toLocaleString('en')} (category, city) pairs (${load.members.toLocaleString('en')} members) in ${load.seconds.toFixed(1)} s`,
);
const changeBatch = await changeBatches(db, changes, random);

let started = performance.now();
await changeBatch();
const changeS = (performance.now() - started) / 1000;
started = performance.now();
const round = await evaluateMonitors(db);
const evaluationS = (performance.now() - started) / 1000;
log(
  `change batch of ${changes.toLocaleString('en')} places: ${changeS.toFixed(1)} s; evaluation of ${round.monitors.toLocaleString('en')} monitors ` +
    `over ${round.changedPlaces.toLocaleString('en')} changed places: ${evaluationS.toFixed(1)} s (target ≤ 60 s), ${round.events.toLocaleString('en')} events`,
);

// Search p99: the same type + city searches, alone and during the evaluation of a second batch.
const reads = createReadPool({ db, workers: 2, tasks: createReadTasks(), tasksModule: readTasksModule });
const deps = createSearch(db, reads);
const queries: MapSearchQuery[] = Array.from({ length: searchCount }, () => {
  const p = pairs[Math.floor(random() * pairs.length)]!;
  return { type: p.category!, city: p.city!, per_page: 25 } as MapSearchQuery;
});
async function latencies(stopWhen?: Promise<unknown>, passes = 1): Promise<number[]> {
  const out: number[] = [];
  let done = false;
  void stopWhen?.then(() => (done = true));
  // Alone: the queries `passes` times. During an evaluation: the queries in turn, again and again, until it
  // ends, so the figures cover the whole round and not only its start.
  for (let i = 0; stopWhen ? !done : i < queries.length * passes; i++) {
    const q = queries[i % queries.length]!;
    const t0 = performance.now();
    await searchPlaces(deps, accounts[0]!, q, null).catch(() => {});
    out.push(performance.now() - t0);
  }
  return out;
}
const p = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};
await latencies(); // warm the threads and the page cache
// Three passes: the p99 of 900 searches, not the third slowest of 300.
const alone = await latencies(undefined, 3);
await changeBatch();
started = performance.now();
const evaluation = evaluateMonitors(db);
const during = await latencies(evaluation);
const second = await evaluation;
const secondS = (performance.now() - started) / 1000;
log(`searches alone: ${alone.length}, p50 ${p(alone, 0.5).toFixed(1)} ms, p99 ${p(alone, 0.99).toFixed(1)} ms`);
log(
  `searches during the evaluation (${second.monitors.toLocaleString('en')} monitors, ${secondS.toFixed(1)} s): ${during.length}, p50 ${p(during, 0.5).toFixed(1)} ms, p99 ${p(during, 0.99).toFixed(1)} ms`,
);
const inProcessRatio = p(during, 0.99) / p(alone, 0.99);
log(`p99 ratio during/alone: ${inProcessRatio.toFixed(2)}× (target ≤ 1.2×)`);

if (separateProcess) {
  // `leadatlas monitors` under tsx, as the tests run the CLI: its start-up (and first, idle round) is over
  // before the batch, as for a service that runs beside the API.
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', resolve(import.meta.dirname, '../src/cli/main.ts'), 'monitors', '--nice', nice],
    { env: { ...process.env, DATABASE_URL: catalog.url, MONITOR_POLL_MS: '200', LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  const rounds: string[] = [];
  let roundDone: (line: string) => void = () => {};
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    for (;;) {
      const nl = stderr.indexOf('\n');
      if (nl < 0) break;
      const line = stderr.slice(0, nl);
      stderr = stderr.slice(nl + 1);
      if (/^monitors: [1-9]\d* evaluated/.test(line)) roundDone(line);
      rounds.push(line);
    }
  });
  const exited = new Promise((done) => child.once('exit', done));
  void exited.then(() => roundDone(`the process ended before a round: ${stderr}`));
  const ready = Date.now() + 60_000;
  while (!rounds.some((l) => l.startsWith('monitors: evaluating every')) && Date.now() < ready) await sleep(100);
  await sleep(1000);
  // A baseline next to the measurement: the evaluator process running, idle (it polls and finds nothing).
  const aloneIdle = await latencies(undefined, 3);
  await changeBatch();
  started = performance.now();
  const evaluated = new Promise<string>((done) => (roundDone = done));
  const separate = await latencies(evaluated);
  const line = await evaluated;
  const separateS = (performance.now() - started) / 1000;
  child.kill('SIGTERM');
  await exited;
  const aloneAgain = await latencies(undefined, 3);
  const pooled = [...alone, ...aloneAgain];
  log(`leadatlas monitors (--nice ${nice}): ${line.replace(/^monitors: /, '')}; ${separateS.toFixed(1)} s from the batch's commit`);
  log(
    `searches during the evaluation in its own process: ${separate.length}, p50 ${p(separate, 0.5).toFixed(1)} ms, p99 ${p(separate, 0.99).toFixed(1)} ms`,
  );
  log(`searches alone again: ${aloneAgain.length}, p50 ${p(aloneAgain, 0.5).toFixed(1)} ms, p99 ${p(aloneAgain, 0.99).toFixed(1)} ms`);
  log(
    `p99 ratio during/alone: in process ${inProcessRatio.toFixed(2)}×, separate process ${(p(separate, 0.99) / p(alone, 0.99)).toFixed(2)}× ` +
      `(target ≤ 1.2×); alone again/alone ${(p(aloneAgain, 0.99) / p(alone, 0.99)).toFixed(2)}×`,
  );
  log(
    `searches alone just before, the evaluator idle: ${aloneIdle.length}, p50 ${p(aloneIdle, 0.5).toFixed(1)} ms, p99 ${p(aloneIdle, 0.99).toFixed(1)} ms; ` +
      `separate process during/that: ${(p(separate, 0.99) / p(aloneIdle, 0.99)).toFixed(2)}×`,
  );
  // Against both baselines together (the searches alone at the start and at the end), less moved by either.
  log(
    `p99 ratio during/alone (both baselines, ${pooled.length} searches, p99 ${p(pooled, 0.99).toFixed(1)} ms): in process ` +
      `${(p(during, 0.99) / p(pooled, 0.99)).toFixed(2)}×, separate process ${(p(separate, 0.99) / p(pooled, 0.99)).toFixed(2)}×`,
  );
}
await reads.close();
await db.close();
