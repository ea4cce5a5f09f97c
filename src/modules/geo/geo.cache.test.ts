import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dataModule = new URL('./geo.data.ts', import.meta.url).href;

/** Loads the rows in a fresh process (the rows are memoised per process) and returns a digest of them. */
function digestInChildProcess(cacheDir: string): string {
  const script = `
    const { createHash } = await import('node:crypto');
    const { loadCityRows, loadCountryRows } = await import(${JSON.stringify(dataModule)});
    console.log(createHash('sha256').update(JSON.stringify([loadCountryRows(), loadCityRows()])).digest('hex'));`;
  const out = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, LEADATLAS_CACHE_DIR: cacheDir },
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(out.status, 0, out.stderr);
  return out.stdout.trim();
}

test('country and city rows read back from the cache equal the rows read from the packages', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-geo-cache-'));
  try {
    const fromPackages = digestInChildProcess(dir);
    const cached = readdirSync(dir).sort();
    assert.deepEqual(cached.map((f) => f.replace(/-[0-9a-f]{16}\.v8$/, '')), ['cities', 'countries']);
    assert.equal(digestInChildProcess(dir), fromPackages);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an unreadable cache file is ignored and the packages are read instead', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-geo-cache-'));
  try {
    const fromPackages = digestInChildProcess(dir);
    for (const f of readdirSync(dir)) writeFileSync(join(dir, f), 'not a v8 snapshot');
    assert.equal(digestInChildProcess(dir), fromPackages);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
