/**
 * Worst-case latency of hostile searches against ordinary ones, on the bench catalog, through the real app
 * (HTTP handled in process by `inject`, two read threads, the read cache off so every search is computed):
 *
 *   npm run bench:hostile-search -- [--size 1000000] [--runs 3] [--budget 5000]
 *
 * The catalog is bench/lib/catalog.ts's (built on first use under var/bench/, reused after). Each query runs
 * `--runs` times in turn; the figure is the slowest run (the first is the cold one: the per-thread count
 * cache answers the later counts). Prints each query's status, total and worst latency, and its ratio to the
 * median of the ordinary searches of the same run. Figures go to bench/RESULTS.md.
 */
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/infra/db/database.ts';
import { createAccountWithToken } from '../test/helpers/accounts.ts';
import { argValue } from './lib/args.ts';
import { buildCatalog } from './lib/catalog.ts';

const size = Number(argValue('--size', '1000000'));
const runs = Number(argValue('--runs', '3'));
const budget = argValue('--budget', '5000');
const catalog = await buildCatalog({
  size,
  dir: resolve(import.meta.dirname, '../var/bench'),
  dataDir: resolve(import.meta.dirname, '../../shared/data'),
  log: (m) => console.log(m),
});
const db = openDatabase(catalog.url);
const app = await buildApp({
  config: loadConfig({
    DATABASE_URL: catalog.url,
    LOG_LEVEL: 'silent',
    IMPORT_DEMO_DATA: 'false',
    DB_READ_WORKERS: '2',
    READ_CACHE_ENTRIES: '0',
    SEARCH_TIME_BUDGET_MS: budget,
    RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000',
    QUOTA_REQUESTS_PER_DAY: '1000000000',
  }),
  db,
});
const { authorization } = await createAccountWithToken(db, { scopes: ['search'] });

type Query = { label: string; url: string; body?: Record<string, unknown> };
const square = (minLon: number, minLat: number, maxLon: number, maxLat: number) => [
  [minLon, minLat],
  [maxLon, minLat],
  [maxLon, maxLat],
  [minLon, maxLat],
  [minLon, minLat],
];
const map = (q: string): string => `/api/v2/map/search?${q}`;
const world = 'bbox=-180,-90,180,90';
const enc = encodeURIComponent;

const ordinary: Query[] = [
  { label: 'name + city', url: map(`query=Ratskeller&city=${enc('München')}`) },
  { label: 'type + city', url: map(`type=restaurant&city=${enc('München')}`) },
  { label: 'name alone (/v1/search)', url: '/v1/search', body: { query: 'Limoncello' } },
  { label: 'name with a typo + city', url: map(`query=Ratskeler&city=${enc('München')}`) },
  { label: 'type + small bbox', url: map(`type=cafe&bbox=11.50,48.10,11.65,48.18`) },
  {
    label: 'polygon with a hole (Munich centre)',
    url: '/api/v2/map/search',
    body: { polygon: { type: 'Polygon', coordinates: [square(11.555, 48.13, 11.59, 48.15), square(11.57, 48.134, 11.58, 48.141)] } },
  },
];
const hostile: Query[] = [
  { label: 'nonsense word, world bbox', url: map(`query=Qxzvkwplmtr&${world}`) },
  { label: 'short nonsense word (no typo index), world bbox', url: map(`query=Qxzvk&${world}`) },
  { label: 'typo, no city (/v1/search)', url: '/v1/search', body: { query: 'Ratskeler' } },
  { label: 'typo of a common word, no city (/v1/search)', url: '/v1/search', body: { query: 'Restaurqnt' } },
  { label: 'typo of a common word, world bbox', url: map(`query=Restaurqnt&${world}`) },
  { label: '`.-.-.-`', url: map(`query=${enc('.-.-.-')}`) },
  { label: '`%%%_`', url: map(`query=${enc('%%%_')}`) },
  { label: '`\'"`', url: map(`query=${enc(`'"`)}`) },
  { label: '`a b c d e`', url: map(`query=${enc('a b c d e')}`) },
  { label: '`a b c d e`, world bbox', url: map(`query=${enc('a b c d e')}&${world}`) },
  { label: '`a a a a a a a a`', url: map(`query=${enc('a a a a a a a a')}`) },
  { label: '200 × `a`', url: map(`query=${'a'.repeat(200)}`) },
  { label: '100 × `ab`, world bbox', url: map(`query=${'ab'.repeat(100)}&${world}`) },
  { label: '`a`, world bbox, sort=name', url: map(`query=a&${world}&sort=name`) },
  {
    label: 'polygon of the largest span (10°) over Delhi',
    url: '/api/v2/map/search',
    body: { polygon: { type: 'Polygon', coordinates: [square(72, 23, 82, 33)] } },
  },
  {
    label: 'polygon of the largest span (10°) over Delhi, with a nonsense word',
    url: '/api/v2/map/search',
    body: { query: 'Qxzvkwplmtr', polygon: { type: 'Polygon', coordinates: [square(72, 23, 82, 33)] } },
  },
  { label: 'world bbox alone (counts every place)', url: map(world) },
  { label: 'world bbox, sort=name', url: map(`${world}&sort=name`) },
];

async function time(q: Query): Promise<{ worst: number; status: number; total: string }> {
  let worst = 0;
  let status = 0;
  let total = '';
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const res = await app.inject({
      method: q.body ? 'POST' : 'GET',
      url: q.url,
      headers: { authorization },
      ...(q.body ? { payload: q.body } : {}),
    });
    worst = Math.max(worst, performance.now() - started);
    status = res.statusCode;
    const body = res.json() as { total?: number; code?: string; resolved?: { typos?: { tolerated: boolean; reason?: string } } };
    const typos = body.resolved?.typos ? ` typos ${body.resolved.typos.tolerated ? 'tolerated' : body.resolved.typos.reason}` : '';
    total = body.total !== undefined ? `${body.total}${typos}` : (body.code ?? '');
  }
  return { worst, status, total };
}

// Loads the resolvers (taxonomy, place names) before anything is timed, with searches not timed below.
for (const url of [map(`type=bar&city=Berlin`), map(`query=Limoncello&city=${enc('San Francisco')}`)])
  await app.inject({ method: 'GET', url, headers: { authorization } });
console.log(
  `catalog ${catalog.path}: ${catalog.rows} places; ${cpus().length} cores; budget ${budget} ms; ${runs} runs each; ${new Date().toISOString()}`,
);
const base: number[] = [];
const lines: string[] = [];
for (const q of ordinary) {
  const r = await time(q);
  base.push(r.worst);
  lines.push(`| ordinary | ${q.label} | ${r.status} | ${r.total} | ${r.worst.toFixed(1)} |`);
}
const median = [...base].sort((a, b) => a - b)[Math.floor(base.length / 2)]!;
let worstHostile = 0;
for (const q of hostile) {
  const r = await time(q);
  worstHostile = Math.max(worstHostile, r.worst);
  lines.push(`| hostile | ${q.label} | ${r.status} | ${r.total} | ${r.worst.toFixed(1)} (${(r.worst / median).toFixed(1)}×) |`);
}
console.log('| kind | query | status | total / code | worst ms (× ordinary median) |\n|---|---|---|---|---|');
for (const l of lines) console.log(l);
console.log(
  `ordinary median of worst runs ${median.toFixed(1)} ms; worst hostile ${worstHostile.toFixed(1)} ms (${(worstHostile / median).toFixed(1)}×)`,
);
await app.close();
await db.close();
