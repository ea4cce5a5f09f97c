/**
 * Cost of bearer-token authentication: the same route with and without `config.scope`, measured in
 * one run, alternating so that machine noise hits both. Target: authenticated throughput within 15%.
 *
 *   npm run bench:auth -- [--duration 5] [--connections 10] [--rounds 6]
 *
 * The server runs in this process; autocannon runs as a child process so it does not share the
 * server's event loop.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/infra/db/database.ts';
import { migrateToLatest } from '../src/infra/db/migrate.ts';
import { createAccountWithToken } from '../test/helpers/accounts.ts';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '6' },
  },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const rounds = Number(values.rounds);

const dir = mkdtempSync(join(tmpdir(), 'leadatlas-bench-auth-'));
const url = `sqlite:${join(dir, 'bench.db')}`;
const db = openDatabase(url);
await migrateToLatest(db);
// Limits out of the way (one token, tens of thousands of requests a second); their cost per request stays in the figures.
const unlimited = {
  RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000000',
  RATE_LIMIT_IP_PER_MINUTE: '1000000000000',
  QUOTA_REQUESTS_PER_DAY: '1000000000000',
};
const app = await buildApp({ config: loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent', ...unlimited }), db });
// One handler, two routes: the only difference is the declared scope.
const payload = { id: 'plc_bench', name: 'Bench Café', category: 'cafe', city: 'Lyon', country_code: 'FR', lat: 45.76, lon: 4.83 };
const handler = async () => payload;
app.get('/bench/open', handler);
app.get('/bench/auth', { config: { scope: 'search' } }, handler);
const account = await createAccountWithToken(db, { scopes: ['search'] });
const address = await app.listen({ host: '127.0.0.1', port: 0 });

const autocannon = join(import.meta.dirname, '..', 'node_modules', '.bin', 'autocannon');
const run = promisify(execFile);

interface Sample {
  reqPerSec: number;
  /** Server CPU time (user + system) per request, in microseconds: steadier than req/s on a shared machine. */
  cpuMicrosPerReq: number;
}

async function measure(path: string, headers: string[]): Promise<Sample> {
  const args = [
    '--json',
    '--duration',
    String(duration),
    '--connections',
    String(connections),
    ...headers.flatMap((h) => ['--headers', h]),
    `${address}${path}`,
  ];
  const cpuBefore = process.cpuUsage();
  const { stdout } = await run(autocannon, args, { encoding: 'utf8' });
  const cpu = process.cpuUsage(cpuBefore);
  const result = JSON.parse(stdout) as { requests: { average: number; total: number }; non2xx: number; errors: number };
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${path}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return { reqPerSec: result.requests.average, cpuMicrosPerReq: (cpu.user + cpu.system) / result.requests.total };
}

const measureOpen = () => measure('/bench/open', []);
const measureAuth = () => measure('/bench/auth', [`authorization=${account.authorization}`]);

await measureOpen(); // warm-up: JIT, connection set-up
await measureAuth();
const open: Sample[] = [];
const auth: Sample[] = [];
for (let r = 0; r < rounds; r++) {
  // Alternate which goes first, so a load change on the machine does not always favour one.
  if (r % 2 === 0) {
    open.push(await measureOpen());
    auth.push(await measureAuth());
  } else {
    auth.push(await measureAuth());
    open.push(await measureOpen());
  }
}
await app.close();
await db.close();
rmSync(dir, { recursive: true, force: true });

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? (s[(s.length - 1) / 2] as number) : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
};
const openRps = sum(open.map((x) => x.reqPerSec)) / rounds;
const authRps = sum(auth.map((x) => x.reqPerSec)) / rounds;
const ratio = authRps / openRps;
const pairRatios = auth.map((a, i) => a.reqPerSec / (open[i]?.reqPerSec ?? Number.NaN));
const openCpu = median(open.map((x) => x.cpuMicrosPerReq));
const authCpu = median(auth.map((x) => x.cpuMicrosPerReq));
const fmt = (xs: Sample[]) => xs.map((x) => Math.round(x.reqPerSec)).join(', ');
console.log(`without auth: ${Math.round(openRps)} req/s  (rounds: ${fmt(open)}), server CPU ${openCpu.toFixed(1)} µs/req (median)`);
console.log(`with token:   ${Math.round(authRps)} req/s  (rounds: ${fmt(auth)}), server CPU ${authCpu.toFixed(1)} µs/req (median)`);
console.log(
  `throughput ratio: ${(ratio * 100).toFixed(1)}% (median of round pairs ${(median(pairRatios) * 100).toFixed(1)}%), target ≥ 85%: ${ratio >= 0.85 ? 'PASS' : 'FAIL'}`,
);
console.log(`CPU per request with token: +${(authCpu - openCpu).toFixed(1)} µs (${((authCpu / openCpu - 1) * 100).toFixed(1)}% more)`);
console.log(
  `(${duration}s × ${rounds} rounds per route, ${connections} connections, Node ${process.version}, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')})`,
);
