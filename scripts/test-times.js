#!/usr/bin/env node
// Where the test suite's time goes: runs each matching test file in a `node --test` process of its own and
// prints each file's wall time and the CPU time (user + sys) of its whole process tree, slowest first, with
// the load average while it ran. On a shared machine wall time follows the load; CPU time much less so.
//
//   node scripts/test-times.js [FILTER…] [--json OUT.json]
//       TEST_CONCURRENCY files at a time (default 2, as run-tests.js)
//   node scripts/test-times.js --durations
//       every file, and each one's wall time written to scripts/test-durations.json, the order in which
//       run-tests.js starts them (longest first); run it on a quiet machine after adding a slow test file
//   node scripts/test-times.js [FILTER…] --against ../other-worktree [--json OUT.json]
//       each file here and the same file in the other checkout (say, main before a change) at the same time,
//       TEST_PAIRS pairs at a time (default 1), so that both sides of each figure ran under the same load
//
// CPU is read through GNU time (/usr/bin/time, Debian's `time` package); without it only wall time is shown.
// The CPU of the PostgreSQL and Redis servers is not in a file's figure.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compiledBuildEnv } from './dist-digest.js';

function find(root, dir) {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? e.name === 'node_modules'
        ? []
        : find(root, join(dir, e.name))
      : e.name.endsWith('.test.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(name);
  return at >= 0 ? args.splice(at, 2)[1] : undefined;
};
const jsonOut = option('--json');
const writeDurations = args.includes('--durations');
if (writeDurations) args.splice(args.indexOf('--durations'), 1);
const against = option('--against');
const testFiles = (root) =>
  ['src', 'test']
    .flatMap((d) => find(root, d))
    .filter((f) => args.length === 0 || args.some((x) => f.includes(x)))
    .sort();
const files = testFiles('.');
const concurrency = Number(process.env.TEST_CONCURRENCY ?? 2);
const pairs = Number(process.env.TEST_PAIRS ?? 1);
// A test that hangs fails after this long (run-tests.js: 5 minutes); longer on a machine loaded by others.
const testTimeoutMs = Number(process.env.TEST_TIMEOUT_MS ?? 300_000);
const gnuTime = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
let runs = 0;

function runOne(root, file) {
  const rusage = join(tmpdir(), `leadatlas-test-times-${process.pid}-${runs++}`);
  const node = [process.execPath, '--import', 'tsx', '--test', '--test-reporter=dot', `--test-timeout=${testTimeoutMs}`, file];
  const [cmd, ...argv] = gnuTime ? [gnuTime, '-q', '-o', rusage, '-f', '%U %S %M', ...node] : node;
  const started = performance.now();
  const loadBefore = loadavg()[0];
  return new Promise((done) => {
    const env = root === '.' ? { ...process.env, ...compiledBuildEnv() } : process.env;
    const child = spawn(cmd, argv, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('exit', (code) => {
      const wall = (performance.now() - started) / 1000;
      let cpu = Number.NaN;
      let maxRssMb = Number.NaN;
      if (gnuTime && existsSync(rusage)) {
        const [user, sys, rssKb] = readFileSync(rusage, 'utf8').trim().split('\n').at(-1).split(' ').map(Number);
        cpu = user + sys;
        maxRssMb = rssKb / 1024;
        rmSync(rusage, { force: true });
      }
      done({ file, code, wall, cpu, maxRssMb, load: (loadBefore + loadavg()[0]) / 2, output });
    });
  });
}

const f1 = (n) => (Number.isNaN(n) ? '–' : n.toFixed(1));
const startLoad = load();
const started = performance.now();
const results = [];

if (against) {
  const root = resolve(against);
  const there = new Set(testFiles(root));
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(pairs, files.length) }, async () => {
      while (next < files.length) {
        const file = files[next++];
        const [here, other] = await Promise.all([runOne('.', file), there.has(file) ? runOne(root, file) : undefined]);
        results.push({ ...here, against: other });
        process.stderr.write(
          `${here.code === 0 && (other?.code ?? 0) === 0 ? 'ok  ' : 'FAIL'} ${file}: ${f1(other?.wall ?? Number.NaN)} → ${f1(here.wall)} s wall, ${f1(other?.cpu ?? Number.NaN)} → ${f1(here.cpu)} s CPU\n`,
        );
      }
    }),
  );
} else {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, files.length) }, async () => {
      while (next < files.length) {
        const r = await runOne('.', files[next++]);
        results.push(r);
        process.stderr.write(
          `${r.code === 0 ? 'ok  ' : 'FAIL'} ${f1(r.wall).padStart(6)} s wall ${f1(r.cpu).padStart(6)} s CPU  ${r.file}\n`,
        );
      }
    }),
  );
}
const total = (performance.now() - started) / 1000;
const sum = (list, key) => list.reduce((s, r) => s + (r?.[key] ?? 0), 0);

if (against) {
  results.sort((a, b) => (b.against?.wall ?? b.wall) - (a.against?.wall ?? a.wall));
  console.log(`| file | wall s (${against} → here) | CPU s (${against} → here) | load (1 min) |\n| --- | ---: | ---: | ---: |`);
  for (const r of results)
    console.log(
      `| ${r.file}${r.code === 0 && (r.against?.code ?? 0) === 0 ? '' : ' (FAILED)'} | ${f1(r.against?.wall ?? Number.NaN)} → ${f1(r.wall)} | ${f1(r.against?.cpu ?? Number.NaN)} → ${f1(r.cpu)} | ${r.load.toFixed(1)} |`,
    );
  const others = results.map((r) => r.against).filter(Boolean);
  console.log(
    `\n${results.length} files, each beside its copy in ${against}: wall ${sum(others, 'wall').toFixed(0)} → ${sum(results, 'wall').toFixed(0)} s, CPU ${sum(others, 'cpu').toFixed(0)} → ${sum(results, 'cpu').toFixed(0)} s (sums over files); ${total.toFixed(0)} s in all; load ${startLoad} at the start, ${load()} at the end`,
  );
} else {
  results.sort((a, b) => b.wall - a.wall);
  console.log(`| file | wall s | CPU s | max RSS MB | load (1 min) |\n| --- | ---: | ---: | ---: | ---: |`);
  for (const r of results)
    console.log(
      `| ${r.file}${r.code === 0 ? '' : ' (FAILED)'} | ${f1(r.wall)} | ${f1(r.cpu)} | ${r.maxRssMb.toFixed(0)} | ${r.load.toFixed(1)} |`,
    );
  console.log(
    `\n${results.length} files, ${concurrency} at a time: ${total.toFixed(0)} s wall, ${sum(results, 'cpu').toFixed(0)} s CPU (sum over files); load ${startLoad} at the start, ${load()} at the end`,
  );
}
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ total, startLoad, endLoad: load(), results }, null, 2));
if (writeDurations && !against) {
  const byFile = Object.fromEntries(results.map((r) => [r.file, Math.round(r.wall * 10) / 10]).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(join(import.meta.dirname, 'test-durations.json'), `${JSON.stringify(byFile, null, 2)}\n`);
}
for (const r of results.flatMap((x) => [x, x.against]).filter((x) => x && x.code !== 0))
  console.error(`\n--- ${r.file} failed:\n${r.output.slice(-4000)}`);
process.exit(results.some((r) => r.code !== 0 || (r.against && r.against.code !== 0)) ? 1 : 0);
