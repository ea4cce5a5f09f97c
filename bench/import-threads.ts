/**
 * Where an import's CPU goes, thread by thread (Linux): runs one import as `leadatlas import` does (the
 * compiled build, reading on a worker thread) into a fresh SQLite file and reads every thread's CPU time
 * from /proc/self/task every 50 ms.
 *
 *   node --import tsx bench/import-threads.ts FILE
 *
 * FILE: any importable file, e.g. the resampled NDJSON that `npm run bench:import -- --keep` leaves.
 * The main thread writes; the busiest other thread is the import worker; the rest are the checkpoint
 * thread of a large import, V8's helper threads (garbage collection) and libuv's.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ImportSummary } from '../src/modules/importers/import.service.ts';
import { compileForBench } from './lib/build.ts';

const file = process.argv[2];
if (!file) throw new Error('usage: node --import tsx bench/import-threads.ts FILE');
const load = compileForBench();
const { openDatabase } = await load<typeof import('../src/infra/db/database.ts')>('infra/db/database.js');
const { prepareDatabase } = await load<typeof import('../src/bootstrap.ts')>('bootstrap.js');
const { runImport } = await load<typeof import('../src/modules/importers/import.service.ts')>('modules/importers/import.service.js');

/** CPU milliseconds (user + system) per thread id; a thread that exits keeps its last reading. */
const start = new Map<string, number>();
const last = new Map<string, number>();
/** Each thread's name (`comm`): V8's helpers are `V8 DefaultWorke…`, libuv's `libuv-worker`, a Worker `node`… */
const names = new Map<string, string>();
function sample(): void {
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // exited between the listing and the read
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks of 10 ms
    if (!start.has(tid)) start.set(tid, ms);
    if (!names.has(tid)) names.set(tid, stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')));
    last.set(tid, ms);
  }
}

const work = mkdtempSync(join(tmpdir(), 'leadatlas-import-threads-'));
const db = openDatabase(`sqlite:${join(work, 'threads.db')}`);
let summary: ImportSummary;
try {
  await prepareDatabase(db);
  sample();
  const timer = setInterval(sample, 50);
  try {
    summary = await runImport(db, null, resolve(file));
  } finally {
    clearInterval(timer);
  }
  sample();
} finally {
  await db.close();
  rmSync(work, { recursive: true, force: true });
}

const places = summary.imported_count + summary.updated_count + summary.unchanged_count;
const used = [...last].map(([tid, ms]) => ({ tid, ms: ms - start.get(tid)! })).filter((t) => t.ms > 0);
const main = used.find((t) => t.tid === String(process.pid));
const others = used.filter((t) => t !== main).sort((a, b) => b.ms - a.ms);
const rows: Array<[string, number]> = [
  ['main thread (the writer)', main?.ms ?? 0],
  ['import worker (busiest other thread)', others[0]?.ms ?? 0],
  ...others.slice(1).map((t, i): [string, number] => [`other thread ${i + 1} (${names.get(t.tid)})`, t.ms]),
];
const total = rows.reduce((sum, [, ms]) => sum + ms, 0);
console.log(`${places} places in ${summary.seconds.toFixed(2)} s: ${Math.round(summary.placesPerSecond)} places/s (${summary.format})`);
for (const [label, ms] of [...rows, ['all threads', total] as [string, number]]) {
  console.log(
    `${label.padEnd(38)} ${String(Math.round(ms)).padStart(7)} ms CPU  ${((ms * 1000) / places).toFixed(2).padStart(6)} µs a place  ${((100 * ms) / (summary.seconds * 1000)).toFixed(0).padStart(4)}% of a core`,
  );
}
