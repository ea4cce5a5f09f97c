#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with Node's test runner (TypeScript through tsx).
// `npm test -- tokens` runs only the files whose path contains "tokens".
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

function find(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name === 'node_modules' ? [] : find(join(dir, e.name))) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  );
}

const filters = process.argv.slice(2);
const files = ['src', 'test']
  .flatMap((d) => find(d))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
