/**
 * What the trust filters cost the server against `has_email=true` (issue 33: no more than 1.2× has_email, same
 * run), over HTTP, on the bench catalog:
 *
 *   npm run bench:trust-filter-cost -- [path/to/catalog.db] [--pairs 1020] [--no-trust-pass] [--no-build]
 *
 * Default catalog: var/bench/catalog-v1-1000000.db (bench/lib/catalog.ts builds it; copy it, the bench writes to
 * it). The resampled copies were written straight into `places`, so the catalog has no trust summary until the
 * trust pass has run on it: when the pass has not caught up with the catalog, the bench runs it first
 * (`refreshTrust`, what `leadatlas trust` runs), timed, and says so.
 *
 * Then the compiled server (`serve`, memory engine, one process, its background passes off) on a free port, asked
 * `GET /api/v2/map/search` (the search with the contact and trust filters; it saves each search, as every variant
 * does). The
 * mix: the catalog's most common type + city pairs (`typeCityPairs`), each asked once, with one variant (so no
 * answer, and no page's rows, come from a cache), one request at a time, the variants interleaved (every variant
 * sees the same machine) and rotating so that each gets pairs of every size. CPU per request is the server's: the time its threads (the
 * read threads included) spent on a CPU, from /proc/PID/task/TID/schedstat (nanoseconds), before and after each
 * request. Prints each variant's mean, p50 and p95 and its ratio to has_email's mean and p50, with the load.
 */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { prepareDatabase } from '../src/bootstrap.ts';
import { openDatabase } from '../src/infra/db/database.ts';
import { placesVersion } from '../src/modules/places/place-changes.repository.ts';
import { refreshTrust, trustState } from '../src/modules/trust/trust.service.ts';
import { argValue } from './lib/args.ts';
import { credentials } from './lib/bench-account.ts';
import { typeCityPairs } from './lib/catalog.ts';
import { buildServer, freePort, serverScript, start, stop, unlimited, waitFor } from './lib/server.ts';

const path = resolve(
  process.argv[2] && !process.argv[2].startsWith('--')
    ? process.argv[2]
    : resolve(import.meta.dirname, '../var/bench/catalog-v1-1000000.db'),
);
const wantedPairs = Number(argValue('--pairs', '1020'));
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const log = (m: string) => console.log(m);
const url = `sqlite:${path}`;

// ------------------------------------------------------------------ the trust summary on every place
const db = openDatabase(url);
await prepareDatabase(db);
const count = async (where: string) => (db.sqlite!.prepare(`SELECT count(*) AS n FROM places WHERE ${where}`).get() as { n: number }).n;
const state = await trustState(db);
const version = await placesVersion(db);
log(
  `${path}: ${await count('1')} places, ${await count('lead_score IS NOT NULL')} with a lead_score; trust pass at places version ${state?.placesVersion ?? 'none'} of ${version}`,
);
if (!process.argv.includes('--no-trust-pass') && (state === null || state.placesVersion < version)) {
  log(`the trust pass has not caught up with this catalog (the resampled copies were written without it): running it (load ${loadavg()})`);
  const cpu = process.cpuUsage();
  const started = performance.now();
  // A pass's own writes come back through the change log: the next pass reads them (and changes nothing).
  for (let round = 1; round <= 3; round++) {
    const judged = await refreshTrust(db);
    log(`  round ${round}: ${JSON.stringify(judged)}, ${((performance.now() - started) / 1000).toFixed(1)} s wall so far`);
    if (((await trustState(db))?.placesVersion ?? 0) >= (await placesVersion(db))) break;
  }
  const used = process.cpuUsage(cpu);
  log(
    `  trust pass: ${((performance.now() - started) / 1000).toFixed(1)} s wall, ${((used.user + used.system) / 1e6).toFixed(1)} s CPU (load ${loadavg()})`,
  );
}
/** Every value of a status column with its places, the most common first (a filter on a value the catalog lacks answers nothing, and costs nothing). */
const commonest = (column: string) =>
  (
    db
      .sqlite!.prepare(`SELECT ${column} AS v, count(*) AS n FROM places WHERE ${column} IS NOT NULL GROUP BY 1 ORDER BY 2 DESC`)
      .all() as Array<{
      v: string;
      n: number;
    }>
  ).map((r) => `${r.v} ${r.n}`);
const statusCounts = Object.fromEntries(['email_status', 'phone_type', 'website_status'].map((c) => [c, commonest(c)]));
log(
  `statuses: ${JSON.stringify(statusCounts)}; has an email ${await count('email IS NOT NULL')}, lead_score ≥ 0.5 ${await count('lead_score >= 0.5')}`,
);
const top = (column: string, fallback: string) => statusCounts[column]?.[0]?.split(' ')[0] ?? fallback;
const emailStatus = top('email_status', 'valid_domain');
const websiteStatus = top('website_status', 'live');
const pairs = await typeCityPairs(db, wantedPairs);
const since = (db.sqlite!.prepare('SELECT min(updated_at) AS m FROM places').get() as { m: string }).m.slice(0, 10);
const verifiedSince = (
  (db.sqlite!.prepare('SELECT min(verified_at) AS m FROM places WHERE verified_at IS NOT NULL').get() as { m: string | null }).m ?? since
).slice(0, 10);
await db.close();

const variants: Array<[string, Record<string, string>]> = [
  ['has_email=true (baseline)', { has_email: 'true' }],
  [`email_status=${emailStatus}`, { email_status: emailStatus }],
  ['phone_type=mobile', { phone_type: 'mobile' }],
  [`website_status=${websiteStatus}`, { website_status: websiteStatus }],
  ['has_email=true&min_confidence=0.8', { has_email: 'true', min_confidence: '0.8' }],
  ['min_lead_score=0.5', { min_lead_score: '0.5' }],
  [`updated_since=${since}`, { updated_since: since }],
  [`verified_since=${verifiedSince}`, { verified_since: verifiedSince }],
  ['sort=lead_score', { sort: 'lead_score' }],
  ['no filter (reference)', {}],
];

/** CPU time of every thread of `pid`, ns (the first field of each task's schedstat). */
function cpuNs(pid: number): number {
  let total = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return total;
}

async function send(base: string, query: string, authorization: string): Promise<{ status: number; total: number; preparing?: string }> {
  const res = await fetch(`${base}/api/v2/map/search?${query}`, { headers: { authorization } });
  const body = (await res.json()) as { total?: number; preparing?: string };
  return { status: res.status, total: body.total ?? 0, ...(body.preparing ? { preparing: body.preparing } : {}) };
}

// ------------------------------------------------------------------ the server
// `--no-build`: dist/ is already compiled from this tree (the compilation takes minutes on a loaded host).
if (!process.argv.includes('--no-build')) buildServer();
const { authorization } = await credentials(url);
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const server: ChildProcess = start(serverScript, {
  DATABASE_URL: url,
  PORT: String(port),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  IMPORT_DEMO_DATA: 'false',
  SEARCH_ENGINE: 'memory',
  TRUST_POLL_MS: '0',
  OPENING_HOURS_CHECK_MS: '0',
  SEARCH_TIME_BUDGET_MS: '60000',
  ...unlimited,
});
try {
  await waitFor(`${base}/healthz`, server);
  let started = performance.now();
  // The first search waits for the index (built at start).
  for (;;) {
    const first = await send(
      base,
      new URLSearchParams({ type: 'restaurant', has_email: 'true', email_status: 'valid_domain' }).toString(),
      authorization,
    );
    if (first.status === 200) break;
    // The trust pass behind: the server (its pass off) would answer 503 for ever.
    if (performance.now() - started > 900_000 || first.preparing === 'contact_trust' || first.status === 400)
      throw new Error(`the server does not answer searches (${first.status} ${first.preparing ?? ''})`);
    await new Promise((r) => setTimeout(r, 2000));
  }
  // Until the index is built SQL answers: the figures are the engine's.
  for (;;) {
    const ready = (await (await fetch(`${base}/readyz`)).json()) as { search_index?: { status?: string; builtMs?: number | null } };
    if (ready.search_index?.status === 'ready') {
      log(`index ready (built in ${Math.round(ready.search_index.builtMs ?? 0)} ms)`);
      break;
    }
    if (performance.now() - started > 1_800_000) throw new Error(`the index is not ready: ${JSON.stringify(ready)}`);
    await new Promise((r) => setTimeout(r, 2000));
  }
  log(`server ready to search after ${((performance.now() - started) / 1000).toFixed(1)} s (load ${loadavg()})`);
  // Warm-up: the first pairs with every variant, outside the figures.
  const warm = pairs.slice(-20);
  for (const p of warm)
    for (const [, extra] of variants)
      await send(base, new URLSearchParams({ type: p.type!, city: p.city, per_page: '20', ...extra }).toString(), authorization);

  const stats = variants.map(() => ({ cpu: [] as number[], wall: [] as number[], totals: 0, errors: 0 }));
  const measured = pairs.slice(0, -20);
  const loadBefore = loadavg();
  started = performance.now();
  // Pair i goes to one variant only, the variants rotating block by block (pairs run largest first, so each
  // variant gets pairs of every size alike): the first page of a type + city is never asked twice, so no variant
  // finds its rows in the engine's page-row cache because another variant of the same pair read them.
  for (const [i, p] of measured.entries()) {
    const v = (i + Math.floor(i / variants.length)) % variants.length;
    const query = new URLSearchParams({ type: p.type!, city: p.city, per_page: '20', ...variants[v]![1] }).toString();
    const cpu = cpuNs(server.pid!);
    const t0 = performance.now();
    const answer = await send(base, query, authorization);
    const wall = performance.now() - t0;
    const s = stats[v]!;
    s.cpu.push((cpuNs(server.pid!) - cpu) / 1e6);
    s.wall.push(wall);
    s.totals += answer.total;
    if (answer.status !== 200) s.errors++;
  }
  const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? 0;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const baseMean = mean(stats[0]!.cpu);
  const baseP50 = q(stats[0]!.cpu, 0.5);
  log(
    `\n${new Date().toISOString()}: ${measured.length} distinct type+city pairs, one variant each (${Math.floor(measured.length / variants.length)} a variant), one request at a time, ${((performance.now() - started) / 1000).toFixed(0)} s; load ${loadBefore} → ${loadavg()}`,
  );
  log('| variant | requests | matches (mean) | CPU/request mean | p50 | p95 | × has_email (mean) | × has_email (p50) | wall p50 |');
  log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [v, [name]] of variants.entries()) {
    const s = stats[v]!;
    log(
      `| \`${name}\` | ${s.cpu.length}${s.errors ? ` (${s.errors} not 200)` : ''} | ${Math.round(s.totals / s.cpu.length)} | ${mean(s.cpu).toFixed(3)} ms | ${q(s.cpu, 0.5).toFixed(3)} | ${q(s.cpu, 0.95).toFixed(3)} | ${(mean(s.cpu) / baseMean).toFixed(2)} | ${(q(s.cpu, 0.5) / baseP50).toFixed(2)} | ${q(s.wall, 0.5).toFixed(1)} ms |`,
    );
  }
} finally {
  await stop(server);
}
