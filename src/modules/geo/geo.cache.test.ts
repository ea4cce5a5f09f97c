import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { keptCacheCopies } from './geo.data.ts';

const dataModule = new URL('./geo.data.ts', import.meta.url).href;
const gazetteerModule = new URL('./gazetteer.ts', import.meta.url).href;

/** Runs a module script in a fresh process (the rows and the gazetteer are memoised per process) with its own cache folder. */
function runInChildProcess(script: string, cacheDir: string): string {
  const out = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, LEADATLAS_CACHE_DIR: cacheDir },
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(out.status, 0, out.stderr);
  return out.stdout.trim();
}

/** Loads the rows in a fresh process (the rows are memoised per process) and returns a digest of them. */
function digestInChildProcess(cacheDir: string): string {
  const script = `
    const { createHash } = await import('node:crypto');
    const { loadCityRows, loadCountryRows } = await import(${JSON.stringify(dataModule)});
    console.log(createHash('sha256').update(JSON.stringify([loadCountryRows(), loadCityRows()])).digest('hex'));`;
  return runInChildProcess(script, cacheDir);
}

/** Builds or reads back the gazetteer in a fresh process and returns a digest of its answers for a spread of inputs. */
function gazetteerDigestInChildProcess(cacheDir: string): string {
  const script = `
    const { createHash } = await import('node:crypto');
    const { loadGazetteer } = await import(${JSON.stringify(gazetteerModule)});
    const g = loadGazetteer();
    const answers = [];
    let seed = 11;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 3000; i++) {
      const lat = -60 + 130 * rnd(), lon = -180 + 360 * rnd();
      answers.push(g.assignCity({ lat, lon }), g.assignCity({ lat, lon, countryCode: 'US' }));
    }
    for (const name of ['München', 'Paris', 'Glasgow City', 'Mnchen', '80331 München', 'Monaco', 'Springfield']) {
      answers.push(g.resolveCity(name), g.resolveCity(name, 'US'), g.assignCity({ city: name, lat: 48.14, lon: 11.58 }));
    }
    answers.push(g.city(2867714), g.city(1), g.listCountries(), g.resolveCountry('Deutschland'));
    console.log(createHash('sha256').update(JSON.stringify(answers)).digest('hex'));`;
  return runInChildProcess(script, cacheDir);
}

/**
 * The rows read from the packages in a fresh process with an empty cache folder of its own, which that process
 * fills: done once for the file (the folder kept until its end), the reference the cache tests below start from.
 */
let fromPackages: { dir: string; digest: string } | undefined;
function rowsFromPackages(): { dir: string; digest: string } {
  if (fromPackages === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'leadatlas-geo-cache-'));
    fromPackages = { dir, digest: digestInChildProcess(dir) };
  }
  return fromPackages;
}
after(() => {
  if (fromPackages) rmSync(fromPackages.dir, { recursive: true, force: true });
});

test('the gazetteer read back from its cache answers as the one built from the rows', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-geo-cache-'));
  try {
    const built = gazetteerDigestInChildProcess(dir);
    assert.ok(
      readdirSync(dir).some((f) => /^gazetteer-[0-9a-f]{16}\.v8$/.test(f)),
      'the built gazetteer is kept',
    );
    assert.equal(gazetteerDigestInChildProcess(dir), built);
    for (const f of readdirSync(dir)) if (f.startsWith('gazetteer-')) writeFileSync(join(dir, f), 'not a v8 snapshot');
    assert.equal(gazetteerDigestInChildProcess(dir), built, 'a damaged copy is rebuilt');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('country and city rows read back from the cache equal the rows read from the packages', () => {
  const { dir, digest } = rowsFromPackages();
  const cached = readdirSync(dir).sort();
  assert.deepEqual(
    cached.map((f) => f.replace(/-[0-9a-f]{16}\.v8$/, '')),
    ['cities', 'countries'],
  );
  assert.equal(digestInChildProcess(dir), digest);
});

test('an unreadable cache file is ignored and the packages are read instead', () => {
  const { dir: written, digest } = rowsFromPackages();
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-geo-cache-'));
  try {
    // The cache files a process reading the packages writes, by their names, each unreadable.
    for (const f of readdirSync(written)) writeFileSync(join(dir, f), 'not a v8 snapshot');
    assert.ok(readdirSync(dir).length > 0);
    assert.equal(digestInChildProcess(dir), digest);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('keeps only the newest few copies of a cache as new ones are written', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-geo-cache-'));
  try {
    // Copies left behind by earlier package versions or rules, oldest first.
    const stale = [
      'countries-00000000000000a1.v8',
      'countries-00000000000000a2.v8',
      'countries-00000000000000a3.v8',
      'countries-00000000000000a4.v8',
    ];
    stale.forEach((f, i) => {
      writeFileSync(join(dir, f), 'old');
      utimesSync(join(dir, f), 1_000_000 + i, 1_000_000 + i);
    });
    writeFileSync(join(dir, 'cities-00000000000000b1.v8'), 'another cache');
    runInChildProcess(`const { loadCountryRows } = await import(${JSON.stringify(dataModule)}); loadCountryRows();`, dir);
    const countries = readdirSync(dir)
      .filter((f) => f.startsWith('countries-'))
      .sort();
    assert.equal(countries.length, keptCacheCopies);
    assert.ok(countries.includes(stale[3]!) && countries.includes(stale[2]!), `the newest stale copies stay: ${countries.join(' ')}`);
    assert.ok(!countries.includes(stale[0]!) && !countries.includes(stale[1]!), 'the oldest copies go');
    assert.ok(readdirSync(dir).includes('cities-00000000000000b1.v8'), "another cache's copies are not touched");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
