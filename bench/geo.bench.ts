/**
 * Gazetteer and reference-data timings: `node --import tsx bench/geo.bench.ts [sqlite|postgres]`
 * (a fresh SQLite file, or a fresh schema on TEST_POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/test).
 * Prints the first sync, a no-op sync, the gazetteer load and the per-call cost of what every imported place calls.
 */

import { migrateToLatest } from '../src/infra/db/migrate.ts';
import { loadCityRows, loadCountryRows } from '../src/modules/geo/geo.data.ts';
import { loadGazetteer, normalisePhone, syncGeo } from '../src/modules/geo/geo.ts';
import { openTestPostgres, openTestSqlite } from '../test/helpers/databases.ts';

const target = process.argv[2] ?? 'sqlite';
if (target !== 'sqlite' && target !== 'postgres') throw new Error(`usage: geo.bench.ts [sqlite|postgres], got ${target}`);
const t = target === 'postgres' ? await openTestPostgres() : openTestSqlite();
const db = t.db;

async function timed<T>(label: string, run: () => Promise<T> | T): Promise<T> {
  const start = performance.now();
  const cpu = process.cpuUsage();
  const result = await run();
  const used = process.cpuUsage(cpu);
  // CPU time next to wall time: on a shared machine the wall time mostly measures the neighbours.
  console.log(
    `${label}: ${(performance.now() - start).toFixed(0)} ms wall, ${((used.user + used.system) / 1000).toFixed(0)} ms CPU in this process`,
  );
  return result;
}

function perCall(label: string, n: number, run: (i: number) => unknown): void {
  const start = performance.now();
  for (let i = 0; i < n; i++) run(i);
  console.log(`${label}: ${(((performance.now() - start) * 1000) / n).toFixed(2)} µs/call`);
}

try {
  await migrateToLatest(db);
  await timed('read packages (countries, cities, alternate names)', () => [loadCountryRows().length, loadCityRows().length]);
  const first = await timed(`first sync (${db.dialect})`, () => syncGeo(db));
  console.log(`  ${first.rows} rows, changed=${first.changed}`);
  const again = await timed('no-op sync', () => syncGeo(db));
  console.log(`  changed=${again.changed}`);
  const g = await timed('gazetteer index build (packages already read)', () => loadGazetteer());

  // Deterministic pseudo-random points over Bavaria and over the whole globe.
  let seed = 42;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const bavaria = Array.from({ length: 100_000 }, () => [47.5 + 2 * rnd(), 9.5 + 3.5 * rnd()] as const);
  const world = Array.from({ length: 100_000 }, () => [-60 + 130 * rnd(), -180 + 360 * rnd()] as const);
  perCall('assignCity nearest (Bavaria)', bavaria.length, (i) => g.assignCity({ lat: bavaria[i]![0], lon: bavaria[i]![1] }));
  perCall('assignCity nearest (world)', world.length, (i) => g.assignCity({ lat: world[i]![0], lon: world[i]![1] }));
  perCall('assignCity address', 100_000, () => g.assignCity({ city: 'München', countryCode: 'DE', lat: 48.14, lon: 11.58 }));
  perCall('countryCode', 100_000, () => g.countryCode('Deutschland'));
  perCall('normalisePhone', 20_000, () => normalisePhone('+49 (0) 89 21 99 89 0', 'DE'));
  perCall('resolveCity unknown name (fuzzy)', 20, () => g.resolveCity('Mnchen'));
} finally {
  await t.dispose();
}
