/**
 * Instructions an NDJSON import executes, thread by thread, for the working tree and for a base commit in
 * the same run, counted by valgrind's callgrind. Seconds on a shared machine move by 20% (and by 2.5×
 * between hours) with other tenants' work; an instruction count does not, so a change of a few percent
 * shows. It does not see memory stalls (cache misses cost time, not instructions): confirm a change with
 * `bench:import` when the machine is quiet.
 *
 *   node --import tsx bench/import-instructions.ts [--lines 40000] [--base HEAD]
 *
 * Each side: its sources compiled (the base in a temporary git worktree), a fresh database prepared
 * without valgrind, then one import of the same NDJSON (bench:import's resampled OSM places) under
 * `valgrind --tool=callgrind --separate-threads=yes`, the two sides in parallel (~50× slower than
 * natively: 40,000 lines take ~6 minutes). Needs valgrind (Debian package valgrind). The same code on both
 * sides at 40,000 lines: the writer's and the worker's counts within 0.3%, V8's helper threads' within ~2.5%
 * (they compile and collect as scheduling falls); at 1,000 lines, where start-up dominates, up to 7%.
 *
 * Environment: BENCH_OSM_DIR (default ../shared/data/osm).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { argValue } from './lib/args.ts';
import { compileTree } from './lib/build.ts';
import { buildNdjson } from './lib/ndjson.ts';

const root = resolve(import.meta.dirname, '..');
const lines = Number(argValue('--lines', '40000'));
if (!Number.isInteger(lines) || lines < 1000) throw new Error('--lines must be a whole number of at least 1000');
const baseRef = argValue('--base', 'HEAD');
if (spawnSync('valgrind', ['--version']).error) throw new Error('valgrind is not installed (Debian package valgrind)');

const osmDir = resolve(process.env.BENCH_OSM_DIR ?? resolve(root, '../shared/data/osm'));
const work = mkdtempSync(join(tmpdir(), 'leadatlas-bench-instructions-'));

function run(command: string, commandArgs: string[], cwd = root): string {
  const r = spawnSync(command, commandArgs, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${command} ${commandArgs.join(' ')} failed:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

interface Side {
  label: string;
  build: string;
  db: string;
  out: string;
}

/** One import under callgrind, its files written to `side.out`-01, -02… (one per thread). */
function count(side: Side, file: string): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(
      'valgrind',
      [
        '--tool=callgrind',
        '--smc-check=all-non-file',
        '--separate-threads=yes',
        `--callgrind-out-file=${side.out}`,
        process.execPath,
        join(root, 'bench/lib/import-once.mjs'),
        side.build,
        side.db,
        file,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('exit', (code) =>
      code === 0 ? done() : fail(new Error(`${side.label}: valgrind exited with ${code}:\n${output.slice(-2000)}`)),
    );
  });
}

/** Instructions per thread, from callgrind's files `<out>-01`, `<out>-02`… (01 is the main thread). */
function threads(out: string): Map<string, number> {
  const dir = resolve(out, '..');
  const prefix = `${out.slice(dir.length + 1)}-`;
  const found = new Map<string, number>();
  for (const name of readdirSync(dir)
    .filter((n) => n.startsWith(prefix))
    .sort()) {
    const totals = /^(?:totals|summary): (\d+)/m.exec(readFileSync(join(dir, name), 'utf8'));
    if (totals) found.set(name.slice(prefix.length), Number(totals[1]));
  }
  return found;
}

/** Writer (main thread), import worker (the busiest other thread), and the rest (V8's helpers, the file digest). */
function split(counts: Map<string, number>): { writer: number; worker: number; others: number } {
  const writer = counts.get('01') ?? 0;
  const rest = [...counts]
    .filter(([id]) => id !== '01')
    .map(([, n]) => n)
    .sort((a, b) => b - a);
  return { writer, worker: rest[0] ?? 0, others: rest.slice(1).reduce((a, b) => a + b, 0) };
}

let baseTree: string | undefined;
try {
  const file = join(work, 'places.ndjson');
  console.log(`building ${lines} NDJSON lines …`);
  await buildNdjson(join(osmDir, 'osm-pois-all.ndjson.gz'), file, lines);

  const baseCommit = run('git', ['rev-parse', '--short', baseRef]).trim();
  baseTree = join(work, 'base');
  run('git', ['worktree', 'add', '--detach', baseTree, baseCommit]);
  symlinkSync(join(root, 'node_modules'), join(baseTree, 'node_modules'));
  console.log(`compiling the working tree and ${baseCommit} …`);
  const sides: Side[] = [
    {
      label: `base ${baseCommit}`,
      build: compileTree(baseTree, 'bench-instructions-build'),
      db: join(work, 'base.db'),
      out: join(work, 'cg-base'),
    },
    { label: 'working tree', build: compileTree(root, 'bench-instructions-build'), db: join(work, 'tree.db'), out: join(work, 'cg-tree') },
  ];
  for (const side of sides) run(process.execPath, [join(root, 'bench/lib/import-once.mjs'), side.build, side.db, '--prepare']);
  console.log(`counting both imports under callgrind, in parallel (~${Math.ceil((lines / 40000) * 6)} min) …`);
  await Promise.all(sides.map((side) => count(side, file)));

  const [base, tree] = sides.map((side) => split(threads(side.out)));
  const per = (n: number) => (n / lines / 1000).toFixed(1);
  const rows: Array<[string, number, number]> = [
    ['writer (main thread)', base!.writer, tree!.writer],
    ['import worker', base!.worker, tree!.worker],
    ['other threads (V8 helpers, file digest)', base!.others, tree!.others],
    ['all threads', base!.writer + base!.worker + base!.others, tree!.writer + tree!.worker + tree!.others],
  ];
  console.log(`\nthousand instructions a place, ${lines} places (callgrind)`);
  console.log(`${'thread'.padEnd(42)} ${sides[0]!.label.padStart(14)} ${'working tree'.padStart(14)}   ratio`);
  for (const [label, b, t] of rows)
    console.log(`${label.padEnd(42)} ${per(b).padStart(14)} ${per(t).padStart(14)}   ${(t / b).toFixed(3)}`);
} finally {
  if (baseTree) spawnSync('git', ['worktree', 'remove', '--force', baseTree], { cwd: root });
  rmSync(work, { recursive: true, force: true });
}
