/**
 * What `GET /api/v2/lookup` costs the server against a type + city search, in the same run (issue 38: a lookup
 * must cost no more CPU than a type + city search):
 *
 *   npm run bench:lookup-cost -- [path/to/catalog.db] [--per-class 300]
 *
 * Default catalog: var/lookup-quality/catalog.db (bench/lookup-set.ts builds it). The app runs in process with its
 * in-memory engine and two read threads; requests go through `app.inject` one at a time, the classes interleaved
 * (a lookup by phone, by domain, by address, a `/v1/search?type=&city=`), each request with a value not asked
 * before (no answer comes from a cache). Per class: the process's CPU time (user + system, every thread: the read
 * threads' SQL included) per request, and its wall time, mean and p50/p95.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { prepareDatabase } from '../src/bootstrap.ts';
import { openDatabase } from '../src/infra/db/database.ts';
import { argValue } from './lib/args.ts';
import { searchingApp } from './lib/lookup-set.ts';

const path = resolve(
  process.argv[2] && !process.argv[2].startsWith('--') ? process.argv[2] : resolve(import.meta.dirname, '../var/lookup-quality/catalog.db'),
);
const perClass = Number(argValue('--per-class', '300'));
if (!existsSync(path)) throw new Error(`${path} does not exist: build it with bench/lookup-set.ts first`);
const db = openDatabase(`sqlite:${path}`);
await prepareDatabase(db);
const { app, authorization } = await searchingApp(db, path);

const distinct = <T>(values: T[]) => [...new Set(values)].slice(0, perClass);
const rows = await db.kysely
  .selectFrom('places')
  .select(['phone_e164', 'website_domain', 'street', 'housenumber', 'city'])
  .where('closed_at', 'is', null)
  .orderBy('id')
  .execute();
const pairs = await db.kysely
  .selectFrom('places')
  .select(['city', 'category', (eb) => eb.fn.countAll<number>().as('n')])
  .where('category', 'is not', null)
  .where('city', 'is not', null)
  .groupBy(['city', 'category'])
  .orderBy('n', 'desc')
  .limit(perClass)
  .execute();

const classes: Array<[string, string[]]> = [
  ['lookup by phone', distinct(rows.flatMap((r) => (r.phone_e164 ? [`/api/v2/lookup?phone=${encodeURIComponent(r.phone_e164)}`] : [])))],
  [
    'lookup by domain',
    distinct(rows.flatMap((r) => (r.website_domain ? [`/api/v2/lookup?domain=${encodeURIComponent(r.website_domain)}`] : []))),
  ],
  [
    'lookup by address',
    distinct(
      rows.flatMap((r) =>
        r.street && r.housenumber && r.city
          ? [`/api/v2/lookup?address=${encodeURIComponent(`${r.street} ${r.housenumber}, ${r.city}`)}`]
          : [],
      ),
    ),
  ],
  ['type + city search', pairs.map((p) => `/v1/search?${new URLSearchParams({ type: p.category!, city: p.city!, per_page: '20' })}`)],
];

// One request of each class in turn, so that every class sees the same machine.
const stats = classes.map(() => ({ cpu: [] as number[], wall: [] as number[], errors: 0 }));
const longest = Math.max(...classes.map(([, urls]) => urls.length));
// A first request of each class outside the figures: the read threads start, the resolvers load.
for (const [, urls] of classes) if (urls[0]) await app.inject({ method: 'GET', url: urls[0], headers: { authorization } });
for (let i = 1; i < longest; i++) {
  for (let c = 0; c < classes.length; c++) {
    const url = classes[c]![1][i];
    if (url === undefined) continue;
    const cpu = process.cpuUsage();
    const started = performance.now();
    const res = await app.inject({ method: 'GET', url, headers: { authorization } });
    const wall = performance.now() - started;
    const used = process.cpuUsage(cpu);
    const s = stats[c]!;
    if (res.statusCode !== 200) s.errors++;
    s.cpu.push((used.user + used.system) / 1000);
    s.wall.push(wall);
  }
}

const q = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(p * values.length))] ?? 0;
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
console.log(`${path}: ${rows.length} open places; ${new Date().toISOString()}`);
for (let c = 0; c < classes.length; c++) {
  const s = stats[c]!;
  console.log(
    `${classes[c]![0].padEnd(20)} ${String(s.cpu.length).padStart(4)} requests  CPU/request mean ${mean(s.cpu).toFixed(3)} ms  p50 ${q(s.cpu, 0.5).toFixed(3)}  p95 ${q(s.cpu, 0.95).toFixed(3)}` +
      `   wall mean ${mean(s.wall).toFixed(3)} ms  p50 ${q(s.wall, 0.5).toFixed(3)}${s.errors ? `  (${s.errors} not 200)` : ''}`,
  );
}
await app.close();
await db.close();
