/**
 * `GET /api/v2/autocomplete` on the bench catalog (issue 35): server CPU per request against a bare Fastify
 * route in the same run, and latency under Poisson arrivals (lib/open-loop.ts: from each request's scheduled
 * time), both with a distinct mix drawn from the catalog:
 *
 *   npm run bench:autocomplete -- [--size 1000000] [--rate 200] [--seconds 30] [--requests 3000] [--postgres]
 *
 * The mix: prefixes (1–6 letters) of a word of a place's name (60 %), of a category's name in one of ten
 * languages (20 %), of a city's name or exonym among the cities with places (20 %); a third of them within the
 * place's country. Each path is sent once at most (the first `--requests` for CPU, the rest for the open loop).
 * CPU is the server process's (every thread: utime + stime of /proc/PID/stat) over requests sent one at a
 * time, divided by the requests. `--postgres`: the same catalog copied into a schema of the local PostgreSQL
 * (BENCH_PG_URL), measured the same way (the database's own CPU is not in the server's figure). First, in
 * process (`--no-in-process` skips it): the build's and a rebuild's time, and the heap it holds.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { openDatabase } from '../src/infra/db/database.ts';
import { migrateToLatest } from '../src/infra/db/migrate.ts';
import { createReadPool } from '../src/infra/db/read-pool.ts';
import { scopes } from '../src/modules/auth/auth.types.ts';
import { TokenService } from '../src/modules/auth/tokens.service.ts';
import { foldQuery } from '../src/modules/search/autocomplete-index.ts';
import { createReadTasks, readTasksModule } from '../src/modules/search/read-tasks.ts';
import { createSearch } from '../src/modules/search/search.ts';
import { argValue } from './lib/args.ts';
import { buildCatalog } from './lib/catalog.ts';
import { openLoop, percentile } from './lib/open-loop.ts';
import { dropSchema, loadCatalogIntoPostgres } from './lib/postgres-catalog.ts';
import { mulberry32 } from './lib/random.ts';
import { buildServer, freePort, procStatus, serverScript, start, stop, unlimited, waitFor } from './lib/server.ts';

const root = resolve(import.meta.dirname, '..');
const size = Number(argValue('--size', '1000000'));
const rate = Number(argValue('--rate', '200'));
const seconds = Number(argValue('--seconds', '30'));
const cpuRequests = Number(argValue('--requests', '3000'));
const withPostgres = process.argv.includes('--postgres');
const inProcess = !process.argv.includes('--no-in-process');
const pgAdminUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const log = (m: string) => console.log(m);

const catalog = await buildCatalog({ size, dir: resolve(root, 'var/bench'), dataDir: resolve(root, '../shared/data'), log });
log(`catalog ${catalog.built ? 'built' : 'reused'}: ${catalog.rows} places at ${catalog.path}`);
buildServer();

/** A bench account with a token: the Authorization header. */
async function authorizationFor(url: string): Promise<string> {
  const db = openDatabase(url);
  try {
    const now = new Date().toISOString();
    const email = `bench-ac-${Date.now()}@example.com`;
    const account = await db.kysely
      .insertInto('accounts')
      .values({
        email,
        email_norm: email,
        password_hash: 'unused: the bench authenticates with a token',
        created_at: now,
        password_changed_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const tokens = new TokenService(db);
    const { token } = await tokens.createToken({ accountId: Number(account.id), name: 'bench', scopes: [...scopes], expiresInDays: 1 });
    await tokens.close();
    return `Bearer ${token}`;
  } finally {
    await db.close();
  }
}

/** The distinct mix of autocomplete paths, the same for the same catalog. */
async function mix(url: string, wanted: number): Promise<string[]> {
  const db = openDatabase(url, { readonly: true });
  const random = mulberry32(35);
  try {
    const maxId = Number(
      (
        await db.kysely
          .selectFrom('places')
          .select((eb) => eb.fn.max('id').as('m'))
          .executeTakeFirstOrThrow()
      ).m,
    );
    const ids = Array.from({ length: wanted }, () => 1 + Math.floor(random() * maxId));
    const places = await db.kysely.selectFrom('places').select(['name', 'country_code']).where('id', 'in', ids).execute();
    const langs = ['en', 'de', 'fr', 'es', 'it', 'pt', 'nl', 'ja', 'ru', 'pl'];
    const categories = await db.kysely
      .selectFrom('category_names')
      .select('name')
      .where('kind', '=', 'name')
      .where('lang', 'in', langs)
      .execute();
    const cities = await db.kysely
      .selectFrom('city_names')
      .innerJoin('cities', 'cities.id', 'city_names.city_id')
      .select(['city_names.name_norm as name', 'cities.country_code'])
      .where('city_names.city_id', 'in', db.kysely.selectFrom('places').select('city_id').distinct().where('city_id', 'is not', null))
      .execute();
    const prefixOf = (text: string) => {
      const words = text.split(/\s+/).filter((w) => w.length > 0);
      const word = words[Math.floor(random() * words.length)] ?? text;
      return [...word].slice(0, 1 + Math.floor(random() * 6)).join('');
    };
    const paths = new Set<string>();
    for (let i = 0; paths.size < wanted && i < wanted * 20; i++) {
      const roll = random();
      const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)]!;
      const [kind, text, country] =
        roll < 0.6
          ? (() => {
              const p = pick(places);
              return ['name', p.name, p.country_code] as const;
            })()
          : roll < 0.8
            ? ['category', pick(categories).name, pick(places).country_code]
            : (() => {
                const c = pick(cities);
                return ['city', c.name, c.country_code] as const;
              })();
      const q = prefixOf(text);
      // A prefix of punctuation alone is refused (400): the mix holds only what a field would send.
      if (foldQuery(q) === '') continue;
      const params = new URLSearchParams({ q, kind });
      if (country && random() < 1 / 3) params.set('country', country);
      paths.add(`/api/v2/autocomplete?${params}`);
    }
    return [...paths];
  } finally {
    await db.close();
  }
}

/** utime + stime of a process, every thread, in microseconds. */
function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
}

async function send(base: string, path: string, authorization: string): Promise<boolean> {
  const res = await fetch(`${base}${path}`, { headers: { authorization } });
  await res.arrayBuffer();
  return res.status === 200;
}

/** CPU per request of the server `child` over `paths` sent one at a time (µs). */
async function cpuPerRequest(child: ChildProcess, base: string, paths: string[], authorization: string): Promise<number> {
  const before = cpuMicros(child.pid!);
  for (const path of paths) if (!(await send(base, path, authorization))) throw new Error(`${path} failed`);
  return (cpuMicros(child.pid!) - before) / paths.length;
}

const latencies = (r: Awaited<ReturnType<typeof openLoop>>) => {
  const p = (q: number) => percentile(r.latenciesMs, q).toFixed(2);
  return `${r.sent} requests, ${r.errors} errors: p50 ${p(50)} ms, p90 ${p(90)} ms, p99 ${p(99)} ms, max ${p(100)} ms`;
};

// ---------------------------------------------------------------- in process: build time and memory
if (inProcess) {
  const db = openDatabase(catalog.url);
  await migrateToLatest(db);
  const search = createSearch(db, createReadPool({ db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule }));
  const held = () => {
    globalThis.gc?.();
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  const before = held();
  let started = performance.now();
  await search.autocomplete.refresh();
  const firstMs = performance.now() - started;
  const bytes = held() - before;
  started = performance.now();
  await search.autocomplete.refresh({ force: true });
  const rebuildMs = performance.now() - started;
  const s = search.autocomplete.stats();
  log(
    `in process: first build ${(firstMs / 1000).toFixed(1)} s (with the taxonomy's names), a rebuild ${(rebuildMs / 1000).toFixed(1)} s; ` +
      `${s.names} distinct names, ${s.keys} keys, ${s.cities} cities; heap held ${(bytes / 1e6).toFixed(0)} MB ` +
      `(${(bytes / catalog.rows).toFixed(0)} bytes a place; the typed arrays and keys alone ${(s.bytes / 1e6).toFixed(0)} MB)` +
      (globalThis.gc ? '' : ' (run with --expose-gc for exact heap figures)'),
  );
  await search.reads.close();
  await db.close();
}

// ---------------------------------------------------------------- the bare route (the same load generator)
const ceilingPort = await freePort();
const ceiling = start(['bench/lib/ceiling-server.ts'], { PORT: String(ceilingPort) });
const ceilingBase = `http://127.0.0.1:${ceilingPort}`;
await waitFor(`${ceilingBase}/`, ceiling);
for (let i = 0; i < 500; i++) await send(ceilingBase, '/', '');
const bareCpu = await cpuPerRequest(
  ceiling,
  ceilingBase,
  Array.from({ length: cpuRequests }, () => '/'),
  '',
);
const bareLoad = await openLoop(rate, seconds, (i) => send(ceilingBase, `/?i=${i}`, ''));
await stop(ceiling);
log(`bare route: CPU ${bareCpu.toFixed(0)} µs a request; Poisson ${rate}/s for ${seconds} s: ${latencies(bareLoad)}`);

// ---------------------------------------------------------------- autocomplete on each database
const targets: Array<{ name: string; url: string; drop?: () => Promise<void> }> = [{ name: 'SQLite', url: catalog.url }];
if (withPostgres) {
  const schema = 'bench_autocomplete';
  const loaded = await loadCatalogIntoPostgres(catalog.path, pgAdminUrl, schema, log);
  targets.push({ name: 'PostgreSQL', url: loaded.url, drop: () => dropSchema(pgAdminUrl, schema) });
}
const paths = await mix(catalog.url, cpuRequests + Math.ceil(rate * seconds * 1.5) + 500);
log(`mix: ${paths.length} distinct paths`);

for (const target of targets) {
  const authorization = await authorizationFor(target.url);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const app = start(serverScript, {
    DATABASE_URL: target.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    IMPORT_DEMO_DATA: 'false',
    TRUST_POLL_MS: '0',
    OPENING_HOURS_CHECK_MS: '0',
    ...unlimited,
  });
  try {
    await waitFor(`${base}/healthz`, app);
    const rssBefore = procStatus(app.pid!, 'VmRSS');
    const firstStarted = performance.now();
    // The first autocomplete waits for the build if the one started at listen is not done.
    await send(base, '/api/v2/autocomplete?q=a', authorization);
    const firstMs = performance.now() - firstStarted;
    const rssAfter = procStatus(app.pid!, 'VmRSS');
    const warm = paths.slice(-500);
    for (const path of warm) await send(base, path, authorization);
    const cpu = await cpuPerRequest(app, base, paths.slice(0, cpuRequests), authorization);
    const rest = paths.slice(cpuRequests, -500);
    const load = await openLoop(rate, seconds, (i) => send(base, rest[i % rest.length]!, authorization));
    const health = await openLoop(rate, seconds, () => send(base, '/healthz', ''));
    log(
      `\n${target.name}, ${catalog.rows} places: first answer after ${(firstMs / 1000).toFixed(1)} s (the build), RSS ${rssBefore.toFixed(0)} → ${rssAfter.toFixed(0)} MB`,
    );
    log(`  CPU ${cpu.toFixed(0)} µs a request (${(cpu / bareCpu).toFixed(1)}× the bare route's ${bareCpu.toFixed(0)} µs)`);
    log(`  Poisson ${rate}/s for ${seconds} s: ${latencies(load)} (target p99 < 5 ms)`);
    log(`  /healthz of the same server, the same arrivals: ${latencies(health)}`);
  } finally {
    await stop(app);
    await target.drop?.();
  }
}
