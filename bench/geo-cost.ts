/**
 * What geography and the name order cost the server per request, answered by the in-memory index (issue 35
 * item 2) and by SQL, against a bare route, in the same run:
 *
 *   npm run bench:geo-cost -- [--size 1000000] [--per-class 200] [--radius 1000]
 *
 * The catalog is bench/lib/catalog.ts's (SQLite, cached in var/bench). Two apps run in process on it, one with
 * `SEARCH_ENGINE=memory` and one with `SEARCH_ENGINE=sql`, each with two read threads, and a bare Fastify route
 * answering a fixed page of 20 places (the JSON of a real page). Requests (`GET` and `POST /api/v2/map/search`, which
 * save the search as every search does) go one at a time through `app.inject`,
 * the classes interleaved, every request with a centre, box or city not asked before (no cache answers):
 * a radius (relevance, which is nearest first), a radius of a type by distance, a bounding box, a drawn polygon
 * (`POST /api/v2/map/search`), a city by name (`sort=name`), and a type + city search as the reference. Per class:
 * the process's CPU time per request (user + system, every thread: the read threads' SQL included), its ratio to
 * the bare route's, and the wall time. Then the index's bytes per place with and without the extensions
 * (coordinates, the k-d tree, the name order) and the time their build adds.
 */
import { resolve } from 'node:path';
import Fastify from 'fastify';
import { sql } from 'kysely';
import { openDatabase } from '../src/infra/db/database.ts';
import { BitmapIndex } from '../src/modules/search/engine/bitmap-index.ts';
import { type PlaceFacts, placeFactsAfter } from '../src/modules/search/engine/engine.repository.ts';
import { columnsOf } from '../src/modules/search/engine/fact-columns.ts';
import { IndexOrders } from '../src/modules/search/engine/geo-search.ts';
import { argValue } from './lib/args.ts';
import { buildCatalog } from './lib/catalog.ts';

const size = Number(argValue('--size', '1000000'));
const perClass = Number(argValue('--per-class', '200'));
const radius = Number(argValue('--radius', '1000'));
const root = resolve(import.meta.dirname, '..');
const log = (m: string) => console.error(m);

const catalog = await buildCatalog({ size, dir: resolve(root, 'var/bench'), dataDir: resolve(root, '../shared/data'), log });
const db = openDatabase(catalog.url);

async function searchingApp(engine: 'memory' | 'sql') {
  const { buildApp } = await import('../src/app.ts');
  const { loadConfig } = await import('../src/config.ts');
  const { createAccountWithToken } = await import('../test/helpers/accounts.ts');
  const app = await buildApp({
    config: loadConfig({
      DATABASE_URL: catalog.url,
      LOG_LEVEL: 'silent',
      DB_READ_WORKERS: '2',
      IMPORT_DEMO_DATA: 'false',
      SEARCH_ENGINE: engine,
      RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000',
      QUOTA_REQUESTS_PER_DAY: '1000000000',
    }),
    db,
  });
  await app.ready();
  const { authorization } = await createAccountWithToken(db, { scopes: ['search'] });
  return { app, authorization };
}

// Distinct centres: places spread over the catalog (every n-th id with coordinates), each asked once per class.
const { rows: centres } = await sql<{ lat: number; lon: number; category: string | null; city: string | null }>`
  SELECT lat, lon, category, city FROM places WHERE lat IS NOT NULL AND closed_at IS NULL AND id % 97 = 0 ORDER BY id LIMIT ${perClass * 3}`.execute(
  db.kysely,
);
const { rows: pairs } = await sql<{ city: string; category: string }>`SELECT city, category FROM places
  WHERE category IS NOT NULL AND city IS NOT NULL AND closed_at IS NULL GROUP BY city, category ORDER BY count(*) DESC LIMIT ${perClass}`.execute(
  db.kysely,
);
const { rows: cities } = await sql<{ city: string }>`SELECT city FROM places WHERE city IS NOT NULL AND closed_at IS NULL
  GROUP BY city ORDER BY count(*) DESC LIMIT ${perClass}`.execute(db.kysely);

const q = (params: Record<string, string>) => `/api/v2/map/search?${new URLSearchParams({ per_page: '20', ...params })}`;
const at = (i: number) => centres[i % centres.length]!;
const hexagon = (lat: number, lon: number, d: number) => {
  const ring = Array.from({ length: 6 }, (_, k) => [lon + d * Math.cos((k * Math.PI) / 3), lat + d * Math.sin((k * Math.PI) / 3) * 0.7]);
  return { type: 'Polygon', coordinates: [[...ring, ring[0]!]] };
};
type Request = { method: 'GET' | 'POST'; url: string; body?: unknown };
const classes: Array<[string, (i: number) => Request | null]> = [
  ['radius (nearest first)', (i) => ({ method: 'GET', url: q({ near: `${at(i).lat},${at(i).lon}`, radius: String(radius) }) })],
  [
    'type in radius by distance',
    (i) => {
      const c = at(i + perClass);
      return c.category
        ? { method: 'GET', url: q({ near: `${c.lat},${c.lon}`, radius: String(radius * 5), type: c.category, sort: 'distance' }) }
        : null;
    },
  ],
  [
    'bbox',
    (i) => {
      const c = at(i + 2 * perClass);
      return { method: 'GET', url: q({ bbox: `${c.lon - 0.02},${c.lat - 0.015},${c.lon + 0.02},${c.lat + 0.015}` }) };
    },
  ],
  ['polygon', (i) => ({ method: 'POST', url: '/api/v2/map/search', body: { polygon: hexagon(at(i).lat, at(i).lon, 0.02), per_page: 20 } })],
  ['city by name', (i) => (cities[i] ? { method: 'GET', url: q({ city: cities[i].city, sort: 'name' }) } : null)],
  ['type + city', (i) => (pairs[i] ? { method: 'GET', url: q({ type: pairs[i].category, city: pairs[i].city }) } : null)],
];

const memory = await searchingApp('memory');
const bySql = await searchingApp('sql');
// The bare route: a fixed page of 20 real places, as JSON.
const page = await memory.app.inject({
  method: 'GET',
  url: q({ city: cities[0]!.city }),
  headers: { authorization: memory.authorization },
});
const bare = Fastify({ logger: false });
const body = page.json();
bare.get('/', async () => body);
await bare.ready();

type Stats = { cpu: number[]; wall: number[]; errors: number; totals: number[] };
const stats = new Map<string, Stats>();
const record = async (name: string, run: () => Promise<{ statusCode: number; body: string }>) => {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const res = await run();
  const wall = performance.now() - started;
  const used = process.cpuUsage(cpu);
  let s = stats.get(name);
  if (!s) stats.set(name, (s = { cpu: [], wall: [], errors: 0, totals: [] }));
  if (res.statusCode !== 200) s.errors++;
  else if (name !== 'bare route') s.totals.push(Number((JSON.parse(res.body) as { total?: number }).total ?? 0));
  s.cpu.push((used.user + used.system) / 1000);
  s.wall.push(wall);
};
const ask = (target: typeof memory, r: Request) =>
  target.app.inject({
    method: r.method,
    url: r.url,
    headers: { authorization: target.authorization },
    ...(r.body ? { payload: r.body } : {}),
  });

// A first request of each class outside the figures (the read threads start, the resolvers load).
for (const [, make] of classes) {
  const r = make(perClass - 1);
  if (r) await Promise.all([ask(memory, r), ask(bySql, r)]);
}
for (let i = 0; i < perClass - 1; i++) {
  await record('bare route', () => bare.inject({ method: 'GET', url: '/' }));
  for (const [name, make] of classes) {
    const r = make(i);
    if (!r) continue;
    await record(`${name} · memory`, () => ask(memory, r));
    await record(`${name} · sql`, () => ask(bySql, r));
  }
}

const quantile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(p * values.length))] ?? 0;
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
const bareCpu = mean(stats.get('bare route')!.cpu);
console.log(`${catalog.path}: ${catalog.rows} places; radius ${radius} m; ${new Date().toISOString()}`);
console.log('| class | engine | requests | matches (mean) | CPU/request mean | × bare | p50 | p95 | wall p50 | not 200 |');
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const [name, s] of stats) {
  const [cls, engine = ''] = name.split(' · ');
  console.log(
    `| ${cls} | ${engine} | ${s.cpu.length} | ${Math.round(mean(s.totals))} | ${mean(s.cpu).toFixed(3)} ms | ${(mean(s.cpu) / bareCpu).toFixed(1)}× | ${quantile(s.cpu, 0.5).toFixed(3)} | ${quantile(s.cpu, 0.95).toFixed(3)} | ${quantile(s.wall, 0.5).toFixed(3)} ms | ${s.errors} |`,
  );
}
await Promise.all([memory.app.close(), bySql.app.close(), bare.close()]);

// The extensions' size and build time, on the same catalog's facts.
const batches: PlaceFacts[][] = [];
for (let after = 0; ; ) {
  const batch = await placeFactsAfter(db, after, 50_000);
  if (batch.length === 0) break;
  batches.push(batch);
  after = batch.at(-1)!.id;
}
let started = performance.now();
const facts = columnsOf(batches);
const plain = BitmapIndex.build(0, facts);
const plainMs = performance.now() - started;
const orders = new IndexOrders();
started = performance.now();
const extended = BitmapIndex.build(0, facts, (index) => orders.attach(index));
const extendedMs = performance.now() - started;
const places = plain.size;
console.log(
  `index: ${(plain.bytes() / places).toFixed(1)} bytes/place without the extensions, +${(orders.geo.bytes() / places).toFixed(1)} coordinates and k-d tree, ` +
    `+${((orders.names?.bytesHeld() ?? 0) / places).toFixed(1)} name order; build ${Math.round(plainMs)} ms → ${Math.round(extendedMs)} ms (${places} places)`,
);
plain.dispose();
extended.dispose();
await db.close();
