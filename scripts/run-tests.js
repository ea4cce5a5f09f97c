#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with Node's test runner (TypeScript through tsx).
// `npm test -- tokens` runs only the files whose path contains "tokens".
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compiledBuildEnv } from './dist-digest.js';

function find(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name === 'node_modules' ? [] : find(join(dir, e.name))) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  );
}

// Longest first: the files run TEST_CONCURRENCY at a time in the order given, so a long file started last
// would run alone at the end. Each file's seconds come from `scripts/test-durations.json` (written by
// `node scripts/test-times.js --durations`); a file it does not know yet goes first, as if it were long.
const durationsFile = join(import.meta.dirname, 'test-durations.json');
const durations = existsSync(durationsFile) ? JSON.parse(readFileSync(durationsFile, 'utf8')) : {};
const seconds = (f) => durations[f] ?? Number.POSITIVE_INFINITY;
const filters = process.argv.slice(2);
const files = ['src', 'test']
  .flatMap((d) => find(d))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort()
  .sort((a, b) => seconds(b) - seconds(a));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
// A test that hangs fails after 5 minutes, naming itself; a test file whose process does not exit after its
// tests (a handle left open) stops the whole run after 45 minutes instead of holding CI until its limit.
const testTimeoutMs = 5 * 60_000;
// Three files at a time on the two cores: much of a file's time is spent waiting (child processes, servers,
// PostgreSQL, deadlines under test), and the third file fills those waits. Every file has its own databases,
// ports and Redis prefixes, so files do not depend on each other. TEST_CONCURRENCY=1 runs them one by one.
const concurrency = Number(process.env.TEST_CONCURRENCY ?? 3);
const runTimeoutMs = Number(process.env.TEST_RUN_TIMEOUT_MS ?? 45 * 60_000);
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', `--test-timeout=${testTimeoutMs}`, ...files],
  {
    stdio: 'inherit',
    env: { ...process.env, ...compiledBuildEnv() },
    timeout: runTimeoutMs,
    killSignal: 'SIGKILL',
  },
);
if (result.error?.code === 'ETIMEDOUT') {
  console.error(
    `\nThe tests did not finish within ${runTimeoutMs / 60_000} minutes: the file printed last (or the one after it) hangs, most often on a handle left open after its tests.`,
  );
}
process.exit(result.status ?? 1);
