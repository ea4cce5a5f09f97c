// The compiled server in this process, as `leadatlas serve` runs it (dist/), with its memory read at each
// step of start-up and sampled every 100 ms through a CSV export of every place (downloaded by curl, a
// separate process). Run by bench/memory.ts, which builds the catalog and compiles first; prints JSON lines.
//   node --expose-gc bench/lib/memory-probe.mjs CATALOG_PATH
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';

const [catalog] = process.argv.slice(2);
process.env.DATABASE_URL = `sqlite:${catalog}`;
process.env.LOG_LEVEL = 'warn';
process.env.IMPORT_DEMO_DATA = 'false';
const dist = new URL('../../dist/', import.meta.url);
const load = (path) => import(new URL(path, dist).href);
const mb = (bytes) => Math.round((bytes / 1048576) * 10) / 10;
const procMb = (key) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
function sample() {
  const u = process.memoryUsage();
  const space = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size]));
  return {
    rss: procMb('VmRSS'),
    heapTotal: mb(u.heapTotal),
    heapUsed: mb(u.heapUsed),
    young: mb(space.new_space),
    old: mb(space.old_space),
    external: mb(u.external),
  };
}
const emit = (step, values) => console.log(JSON.stringify({ step, ...values }));
const settle = async (ms = 2000) => {
  await new Promise((r) => setTimeout(r, ms));
  globalThis.gc?.();
};

emit('node started', sample());
const { loadConfig } = await load('config.js');
const { openDatabase } = await load('infra/db/database.js');
const { prepareDatabase } = await load('bootstrap.js');
const { buildApp } = await load('app.js');
const { limitHeapGrowth } = await load('infra/memory.js');
const { TokenService } = await load('modules/auth/tokens.service.js');
await settle(0);
emit('server modules loaded', sample());
const config = loadConfig();
const db = openDatabase(config.DATABASE_URL);
await prepareDatabase(db);
limitHeapGrowth();
const app = await buildApp({ config, db });
await app.listen({ host: '127.0.0.1', port: 0 });
const port = app.server.address().port;
await settle();
emit(`listening, ${config.DB_READ_WORKERS} read threads started, resolvers made`, sample());

const email = `bench-memory-${Date.now()}@example.com`;
const now = new Date().toISOString();
const account = await db.kysely
  .insertInto('accounts')
  .values({ email, email_norm: email, password_hash: 'unused', created_at: now, password_changed_at: now })
  .returning('id')
  .executeTakeFirstOrThrow();
const tokens = new TokenService(db);
const { token } = await tokens.createToken({
  accountId: Number(account.id),
  name: 'memory',
  scopes: ['search', 'export', 'places:read'],
  expiresInDays: 1,
});
await tokens.close();
const searchId = `srch_${'m'.repeat(8)}${Date.now()
  .toString(32)
  .slice(-8)
  .padStart(8, 'a')
  .replace(/[^a-z2-7]/g, 'a')}`;
const noFilter = {
  categories: null,
  cityId: null,
  countryCode: null,
  text: null,
  minRating: null,
  hasPhone: null,
  hasWebsite: null,
  hasEmail: null,
  near: null,
  bbox: null,
};
await db.kysely
  .insertInto('searches')
  .values({
    public_id: searchId,
    account_id: Number(account.id),
    params: '{}',
    criteria: JSON.stringify(noFilter),
    resolution: JSON.stringify({ type: null, city: null, country: null }),
    sort: 'name',
    total: 0,
    created_at: now,
  })
  .execute();
await settle();
const before = sample();
emit('before the export', before);

writeFileSync('/proc/self/clear_refs', '5');
const peak = { ...before };
const timer = setInterval(() => {
  for (const [k, v] of Object.entries(sample())) peak[k] = Math.max(peak[k], v);
}, 100);
const t0 = performance.now();
const curl = spawn(
  'curl',
  [
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code} %{size_download}',
    '-H',
    `authorization: Bearer ${token}`,
    `http://127.0.0.1:${port}/api/v2/map/export?search_id=${searchId}&format=csv`,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
let out = '';
curl.stdout.on('data', (d) => (out += d));
await new Promise((r) => curl.on('exit', r));
clearInterval(timer);
const [status, bytes] = out.split(' ').map(Number);
emit('export peak (sampled every 100 ms)', {
  ...peak,
  rss: procMb('VmHWM'),
  seconds: Math.round(performance.now() - t0) / 1000,
  status,
  megabytes: mb(bytes),
});
emit('after the export', sample());
globalThis.gc?.();
emit('after a full collection', sample());
// Its leads and searches go with the account.
await db.kysely.deleteFrom('accounts').where('id', '=', Number(account.id)).execute();
await app.close();
await db.close();
