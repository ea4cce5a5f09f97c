/**
 * Where a server's resident memory goes: the compiled server in a process of its own (bench/lib/memory-probe.mjs),
 * its RSS and V8 heap read at each step of start-up and through a CSV export of every place of the bench
 * catalog, then the same with the read-pool threads off (DB_READ_WORKERS=0) to show what they hold.
 *
 *   npm run bench:memory [-- --size 1000000]
 *
 * The figures complement bench:api's peak RSS (which runs the searches first). RSS counts resident pages of
 * the whole process: every thread's heap, SQLite's page caches, Node and its libraries.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { buildCatalog } from './lib/catalog.ts';

const root = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const sizeAt = args.indexOf('--size');
const size = sizeAt >= 0 ? Number(args[sizeAt + 1]) : 1_000_000;
if (!Number.isInteger(size) || size < 1000) throw new Error('--size must be a whole number of at least 1000');

const catalog = await buildCatalog({ size, dir: resolve(root, 'var/bench'), dataDir: resolve(root, '../shared/data'), log: console.log });
console.log(`catalog: ${catalog.rows} places at ${catalog.path}\ncompiling the server (npm run build) …`);
const build = spawnSync('npm', ['run', 'build'], { cwd: root, encoding: 'utf8' });
if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stdout}${build.stderr}`);

interface Step {
  step: string;
  rss: number;
  heapTotal: number;
  heapUsed: number;
  young: number;
  old: number;
  external: number;
  seconds?: number;
  status?: number;
  megabytes?: number;
}

/** The export of every place (a million rows) is past the default monthly row quota. */
const unlimited = { QUOTA_EXPORT_ROWS_PER_MONTH: '1000000000000' };

function probe(env: Record<string, string>): Step[] {
  const run = spawnSync(process.execPath, ['--expose-gc', resolve(root, 'bench/lib/memory-probe.mjs'), catalog.path], {
    cwd: root,
    env: { ...process.env, ...unlimited, ...env },
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`memory probe failed:\n${run.stderr}`);
  return run.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Step);
}

const pad = (s: string | number, n: number) => String(s).padStart(n);
for (const [label, env] of [
  ['default server (DB_READ_WORKERS=2)', {}],
  ['no read-pool threads (DB_READ_WORKERS=0)', { DB_READ_WORKERS: '0' }],
] as const) {
  const steps = probe(env);
  console.log(`\n${label}: MB (heap figures are the main thread's; RSS is the whole process)`);
  console.log(`${'step'.padEnd(62)}${pad('RSS', 7)}${pad('heap', 7)}${pad('used', 7)}${pad('young', 7)}${pad('old', 7)}`);
  for (const s of steps) {
    console.log(
      `${s.step.padEnd(62)}${pad(s.rss.toFixed(0), 7)}${pad(s.heapTotal.toFixed(0), 7)}${pad(s.heapUsed.toFixed(0), 7)}${pad(s.young.toFixed(0), 7)}${pad(s.old.toFixed(0), 7)}`,
    );
    if (s.status !== undefined) {
      if (s.status !== 200) throw new Error(`the export answered ${s.status}`);
      console.log(`${''.padEnd(4)}export: ${s.megabytes} MB in ${s.seconds} s; the RSS figure is the peak (VmHWM)`);
    }
  }
}
