/**
 * Full text through the search engine's index (issue 35, item 1), over HTTP: server CPU per answered request
 * (all threads, from /proc) and latency under Poisson arrivals (bench/lib/open-loop.ts: each latency from the
 * request's scheduled time), against a bare Fastify route answering a fixed JSON body in the same run with the
 * same load generator. Three servers on the same catalog, one after the other: the bare route, the server with
 * `SEARCH_ENGINE=memory` (text in the index), and with `SEARCH_ENGINE=sql` (text by SQLite FTS5, as before).
 * The mix: distinct `/v1/search?query=` requests (words of five letters or more from the catalog's real names,
 * and their two-word name starts, as `bench:api --diverse-only` makes them), each sent once; and distinct
 * type+city searches for comparison. The index's bytes per place: `bench:search-engine`.
 *
 *   npm run bench:text-load -- [--size 1000000] [--rate 200] [--seconds 20]
 */
import { readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { resolve } from 'node:path';
import { openDatabase } from '../src/infra/db/database.ts';
import { argValue } from './lib/args.ts';
import { credentials } from './lib/bench-account.ts';
import { buildCatalog, typeCityPairs } from './lib/catalog.ts';
import { openLoop, percentile } from './lib/open-loop.ts';
import { mulberry32 } from './lib/random.ts';
import { buildServer, cpuSeconds, freePort, httpGet, root, start, stop, unlimited, waitFor, waitIdle } from './lib/server.ts';

const size = Number(argValue('--size', '1000000'));
const rate = Number(argValue('--rate', '200'));
const seconds = Number(argValue('--seconds', '20'));
const log = (m: string) => console.log(m);

const catalog = await buildCatalog({ size, dir: resolve(root, 'var/bench'), dataDir: resolve(root, '../shared/data'), log });
log(`catalog: ${catalog.rows} places at ${catalog.path}`);
const db = openDatabase(catalog.url);
const sampleNames = await db.kysely.selectFrom('places').select('name').where('source_id', 'not like', '%#r%').orderBy('id').execute();
const pairs = await typeCityPairs(db, 1500);
await db.close();

function shuffle<T>(xs: T[], random: () => number): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}
const random = mulberry32(35);
const words = [...new Set(sampleNames.flatMap((r) => r.name.split(/[^\p{L}\p{N}]+/u)).filter((w) => w.length >= 5 && /^\p{L}+$/u.test(w)))];
const twoWordNames = [
  ...new Set(sampleNames.map((r) => r.name.split(/\s+/).slice(0, 2).join(' ')).filter((n) => /^[\p{L}'-]{3,} [\p{L}'-]{3,}$/u.test(n))),
];
const text = shuffle([...words, ...twoWordNames], random).map((q) => `/v1/search?${new URLSearchParams({ query: q })}`);
const typeCity = shuffle(
  pairs.map((p) => `/api/v2/map/search?${new URLSearchParams({ type: p.type!, city: p.city, country: p.country })}`),
  random,
);
log(`mix: ${text.length} distinct full-text queries, ${typeCity.length} distinct type+city searches`);

const agent = new Agent({ keepAlive: true, maxSockets: 256 });
let authorization = '';
const get = (port: number, path: string) => httpGet(agent, port, path, { authorization });

interface Figure {
  cpuUs: number;
  p50: number;
  p99: number;
  sent: number;
  errors: number;
}

/** An open-loop run over `paths` (each sent once while they last), with the server's CPU over the run. */
async function paced(pid: number, port: number, paths: string[], from: number, secs = seconds): Promise<Figure> {
  const cpu0 = cpuSeconds(pid);
  const result = await openLoop(rate, secs, async (i) => (await get(port, paths[(from + i) % paths.length]!)).status === 200, from + 1);
  const cpu = cpuSeconds(pid) - cpu0;
  return {
    cpuUs: (cpu * 1e6) / Math.max(1, result.sent - result.errors),
    p50: percentile(result.latenciesMs, 50),
    p99: percentile(result.latenciesMs, 99),
    sent: result.sent,
    errors: result.errors,
  };
}

const show = (name: string, f: Figure, bare: Figure | null) =>
  log(
    `  ${name.padEnd(28)} CPU ${Math.round(f.cpuUs).toLocaleString('en')} µs/request${bare ? ` (${(f.cpuUs / bare.cpuUs).toFixed(1)}× the bare route)` : ''}; ` +
      `Poisson ${rate}/s for ${seconds} s: p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms; ${f.sent} sent, ${f.errors} failed`,
  );

buildServer();
log(`\n${new Date().toISOString()} load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
const ceilingPort = await freePort();
const ceiling = start(['bench/lib/ceiling-server.ts'], { PORT: String(ceilingPort) });
await waitFor(`http://127.0.0.1:${ceilingPort}/`, ceiling);
await paced(ceiling.pid!, ceilingPort, ['/'], 0, 3);
const bare = await paced(ceiling.pid!, ceilingPort, ['/'], 0);
await stop(ceiling);
show('bare route (fixed JSON)', bare, null);

let sentText = 0;
let sentTypeCity = 0;
for (const engine of ['memory', 'sql'] as const) {
  ({ authorization } = await credentials(catalog.url));
  const port = await freePort();
  const app = start(['bin/leadatlas.js', 'serve'], {
    DATABASE_URL: catalog.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    IMPORT_DEMO_DATA: 'false',
    SEARCH_ENGINE: engine,
    ...unlimited,
  });
  // The index is built before the server listens: at 1M places on a loaded host, longer than `waitFor`'s two minutes.
  for (let tries = 0; ; tries++) {
    try {
      await waitFor(`http://127.0.0.1:${port}/healthz`, app);
      break;
    } catch (error) {
      if (tries >= 10 || app.exitCode !== null) throw error;
    }
  }
  const builtAt = performance.now();
  let index: Record<string, unknown> = {};
  for (;;) {
    index = (JSON.parse((await get(port, '/readyz')).body) as { search_index?: Record<string, unknown> }).search_index ?? {};
    if (index.status !== 'building') break;
    await new Promise((r) => setTimeout(r, 500));
  }
  log(`\nSEARCH_ENGINE=${engine}: /readyz ${JSON.stringify(index)} (${Math.round(performance.now() - builtAt)} ms after /healthz)`);
  // The start-up's background work (the opening-hours and trust passes over every place) is not a request's:
  // wait until the idle server spends under 5 % of a core (at most ten minutes).
  await waitIdle(app.pid!);

  // Warm-up on requests the measured runs do not send (the mixes are long enough: each run takes the next ones).
  await paced(app.pid!, port, text.slice(-1000), 0, 5);
  const t = await paced(app.pid!, port, text, sentText);
  sentText += t.sent;
  show('full text, distinct', t, bare);
  const c = await paced(app.pid!, port, typeCity, sentTypeCity);
  sentTypeCity += c.sent;
  show('type+city, distinct', c, bare);
  await stop(app);
}
agent.destroy();
