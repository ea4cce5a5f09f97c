/**
 * Load test with the limits on, on the 1,000,000-place bench catalog:
 *
 *   npm run bench:load -- [--duration 60] [--connections 100] [--accounts 300] [--abusers 3]
 *
 * `--connections` clients hammer one compiled server (default configuration: rate limits and quotas as
 * shipped) for `--duration` seconds with a mix of distinct type+city searches, full-text searches, small
 * exports and cheap calls. The requests come from `--accounts` ordinary accounts, each of which stays well
 * within its token's budget, and from `--abusers` accounts that send as fast as the server answers them.
 *
 * It prints latency and status counts per kind of request, and checks, failing the run (exit code 1) when
 * one does not hold: no request fails (no 5xx, no socket error, no timeout); no ordinary account is
 * refused; the abusers are refused with 429, each with Retry-After and the RateLimit fields, and no
 * abuser gets more than its budget (the burst plus the refill over the run); the server's peak RSS.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import autocannon from 'autocannon';
import { openDatabase } from '../src/infra/db/database.ts';
import { scopeCosts } from '../src/infra/ratelimit/costs.ts';
import { TokenService } from '../src/modules/auth/tokens.service.ts';
import { argValue } from './lib/args.ts';
import { buildCatalog, typeCityPairs } from './lib/catalog.ts';
import { buildServer, freePort, procStatus, root, serverLog, serverScript, start, stop, waitFor } from './lib/server.ts';

const duration = Number(argValue('--duration', '60'));
const connections = Number(argValue('--connections', '100'));
const accountCount = Number(argValue('--accounts', '300'));
const abuserCount = Number(argValue('--abusers', '3'));
const log = (m: string) => console.log(m);

log(`catalog: 1,000,000 places (cached under var/bench/)`);
const catalog = await buildCatalog({ size: 1_000_000, dir: resolve(root, 'var/bench'), dataDir: resolve(root, '../shared/data'), log });

// ---------------------------------------------------------------- accounts, tokens, workload
const db = openDatabase(catalog.url);
const tokens = new TokenService(db);
const now = new Date().toISOString();
async function account(kind: 'user' | 'abuser', i: number): Promise<{ id: number; authorization: string }> {
  const email = `bench-load-${kind}-${i}-${Date.now()}@example.com`;
  const row = await db.kysely
    .insertInto('accounts')
    .values({
      email,
      email_norm: email,
      password_hash: 'unused: the benchmark authenticates with tokens',
      created_at: now,
      password_changed_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const { token } = await tokens.createToken({
    accountId: Number(row.id),
    name: 'bench-load',
    scopes: ['search', 'export', 'places:read'],
    expiresInDays: 1,
  });
  return { id: Number(row.id), authorization: `Bearer ${token}` };
}
const users = await Promise.all(Array.from({ length: accountCount }, (_, i) => account('user', i)));
const abusers = await Promise.all(Array.from({ length: abuserCount }, (_, i) => account('abuser', i)));
await tokens.close();

// Distinct searches: (city, type) pairs of every size, and words from real names.
const pairs = await typeCityPairs(db, 3000, 5);
const smallPairs = pairs.filter((p) => Number(p.n) >= 20 && Number(p.n) <= 300);
const names = await db.kysely
  .selectFrom('places')
  .select('name')
  .where('source_id', 'not like', '%#r%')
  .orderBy('id')
  .limit(50_000)
  .execute();
const words = [...new Set(names.flatMap((r) => r.name.split(/[^\p{L}\p{N}]+/u)).filter((w) => w.length >= 4 && /^\p{L}+$/u.test(w)))];
await db.close();

type Kind = 'type+city' | 'full-text' | 'export' | 'cheap';
const sorts = ['relevance', 'rating', 'review_count', 'name'];
const typeCityPaths = pairs.map(
  (p, i) =>
    `/api/v2/map/search?${new URLSearchParams({ type: p.type!, city: p.city, country: p.country, per_page: '20', sort: sorts[i % sorts.length]!, ...(i % 3 === 0 ? { has_phone: 'true' } : {}) })}`,
);
const textPaths = words.slice(0, 3000).map((w) => `/v1/search?${new URLSearchParams({ query: w })}`);
// Authenticated cheap calls: /healthz counts against the per-IP limit of callers without a token, and all
// of this load comes from one address.
const cheapPaths = ['/api/v2/countries', '/api/v1/user-api/categories', '/api/v2/categories', '/api/v1/user-api/usage'];
const costOf = (kind: Kind) => (kind === 'export' ? scopeCosts.export : kind === 'cheap' ? scopeCosts['places:read'] : scopeCosts.search);

// ---------------------------------------------------------------- server
log('\ncompiling the server (npm run build) …');
buildServer();
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
// The shipped defaults: rate limits and quotas as a deployment has them.
const app = start(serverScript, {
  DATABASE_URL: catalog.url,
  PORT: String(port),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  IMPORT_DEMO_DATA: 'false',
});
await waitFor(`${base}/healthz`, app);

// One small saved search per ordinary account, for its exports (a search belongs to its account).
const exportPaths: string[] = [];
for (const [i, u] of users.entries()) {
  const p = smallPairs[i % smallPairs.length]!;
  const res = await fetch(
    `${base}/api/v2/map/search?${new URLSearchParams({ type: p.type!, city: p.city, country: p.country, per_page: '1' })}`,
    { headers: { authorization: u.authorization } },
  );
  const found = (await res.json()) as { search_id: string };
  exportPaths.push(`/api/v2/map/export?search_id=${found.search_id}&format=csv`);
}

// ---------------------------------------------------------------- the run
type Who = 'user' | 'abuser';
interface Tally {
  statuses: Map<number, number>;
  latencies: number[];
  refusedWithoutHeaders: number;
}
const tallies = new Map<string, Tally>();
const tally = (key: string) => {
  let t = tallies.get(key);
  if (!t) tallies.set(key, (t = { statuses: new Map(), latencies: [], refusedWithoutHeaders: 0 }));
  return t;
};
/** Units each abuser's requests were allowed, by the route costs. */
const abuserUnits = new Map<number, number>();

let n = 0;
/** The next request: a fifth from the abusers, the rest spread over the ordinary accounts. */
function next(): { who: Who; index: number; kind: Kind; path: string; authorization: string } {
  const k = n++;
  const r = (k * 2654435761) % 100;
  const kind: Kind = r < 45 ? 'type+city' : r < 70 ? 'full-text' : r < 75 ? 'export' : 'cheap';
  const abuser = k % 5 === 0;
  const index = abuser ? ((k / 5) % abusers.length) | 0 : k % users.length;
  const who: Who = abuser ? 'abuser' : 'user';
  const account = abuser ? abusers[index]! : users[index]!;
  const paths = kind === 'type+city' ? typeCityPaths : kind === 'full-text' ? textPaths : kind === 'cheap' ? cheapPaths : null;
  // Abusers export nothing (they own no search); they search instead.
  const path = paths ? paths[k % paths.length]! : abuser ? typeCityPaths[k % typeCityPaths.length]! : exportPaths[index]!;
  return { who, index, kind: kind === 'export' && abuser ? 'type+city' : kind, path, authorization: account.authorization };
}

log(`\nload: ${connections} connections for ${duration} s; ${users.length} ordinary accounts, ${abusers.length} abusers`);
writeFileSync(`/proc/${app.pid}/clear_refs`, '5');
const rssBefore = procStatus(app.pid!, 'VmRSS');
const result = await autocannon({
  url: base,
  connections,
  duration,
  timeout: 30,
  requests: [
    {
      method: 'GET',
      setupRequest: (req, context) => {
        const r = next();
        (context as Record<string, unknown>).current = { ...r, sentAt: performance.now() };
        return { ...req, path: r.path, headers: { authorization: r.authorization } };
      },
      onResponse: (status, _body, context, headers) => {
        const current = (context as { current: ReturnType<typeof next> & { sentAt: number } }).current;
        const t = tally(`${current.who} ${current.kind}`);
        t.statuses.set(status, (t.statuses.get(status) ?? 0) + 1);
        t.latencies.push(performance.now() - current.sentAt);
        const h = headers as Record<string, string | undefined>;
        if (status === 429 && !(h['retry-after'] && h.ratelimit && h['ratelimit-policy'])) t.refusedWithoutHeaders++;
        if (current.who === 'abuser' && status < 400)
          abuserUnits.set(current.index, (abuserUnits.get(current.index) ?? 0) + costOf(current.kind));
      },
    },
  ],
});
const peak = procStatus(app.pid!, 'VmHWM');
await stop(app);

// ---------------------------------------------------------------- clean-up
{
  const clean = openDatabase(catalog.url);
  const removed = await clean.kysely.deleteFrom('accounts').where('email', 'like', 'bench-load-%@example.com').executeTakeFirst();
  clean.sqlite?.pragma('wal_checkpoint(TRUNCATE)');
  await clean.close();
  log(`removed ${Number(removed.numDeletedRows)} bench accounts with their searches, exports and leads`);
}

// ---------------------------------------------------------------- report
const pct = (values: number[], p: number) => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
log(
  `\nLeadAtlas load test: ${catalog.rows} places, ${connections} connections, ${duration} s, ${result.requests.total} requests (${result.requests.average} req/s); errors ${result.errors}, timeouts ${result.timeouts}`,
);
log(`${'who / kind'.padEnd(22)} ${'requests'.padStart(9)}  ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)}  statuses`);
for (const [key, t] of [...tallies].sort()) {
  const total = [...t.statuses.values()].reduce((a, b) => a + b, 0);
  const statuses = [...t.statuses]
    .sort((a, b) => a[0] - b[0])
    .map(([s, c]) => `${s}: ${c}`)
    .join(', ');
  log(
    `${key.padEnd(22)} ${String(total).padStart(9)}  ${pct(t.latencies, 50).toFixed(1).padStart(7)} ${pct(t.latencies, 99).toFixed(1).padStart(7)}  ${statuses}`,
  );
}
const failures: string[] = [];
const count = (pred: (status: number, key: string) => boolean) =>
  [...tallies].reduce((sum, [key, t]) => sum + [...t.statuses].filter(([s]) => pred(s, key)).reduce((a, [, c]) => a + c, 0), 0);
const serverErrors = count((s) => s >= 500);
if (serverErrors > 0) failures.push(`${serverErrors} answers were 5xx (see ${serverLog})`);
if (result.errors + result.timeouts > 0) failures.push(`${result.errors} socket errors and ${result.timeouts} timeouts`);
const usersRefused = count((s, key) => key.startsWith('user') && s === 429);
if (usersRefused > 0) failures.push(`${usersRefused} requests of ordinary accounts were refused with 429`);
const usersOther4xx = count((s, key) => key.startsWith('user') && s >= 400 && s < 500 && s !== 429);
if (usersOther4xx > 0) failures.push(`${usersOther4xx} requests of ordinary accounts answered another 4xx`);
const abusersRefused = count((s, key) => key.startsWith('abuser') && s === 429);
if (abusersRefused === 0) failures.push('the abusers were never refused: the limits did not hold');
const missingHeaders = [...tallies.values()].reduce((sum, t) => sum + t.refusedWithoutHeaders, 0);
if (missingHeaders > 0) failures.push(`${missingHeaders} answers 429 lacked Retry-After or the RateLimit fields`);
// The default token rate: 1,200 units a minute, all at once or spread.
const budget = 1200 + (1200 * duration) / 60;
for (const [i, units] of abuserUnits) {
  log(`abuser ${i}: ${units} units allowed of a budget of ${budget} (the burst and the refill over ${duration} s)`);
  if (units > budget * 1.02) failures.push(`abuser ${i} was allowed ${units} units, more than its budget of ${budget}`);
}
log(`server RSS: ${rssBefore.toFixed(0)} MB before the run, peak ${peak.toFixed(0)} MB`);
const cheap = tallies.get('user cheap');
if (cheap) log(`cheap calls of ordinary accounts under load: p99 ${pct(cheap.latencies, 99).toFixed(1)} ms`);
for (const f of failures) log(`FAILED ${f}`);
log(failures.length === 0 ? 'every check held' : `${failures.length} check(s) failed`);
process.exit(failures.length === 0 ? 0 : 1);
