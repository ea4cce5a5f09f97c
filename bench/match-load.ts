// Speed of POST /api/v2/match (issue 32): CPU per call of 100 records, and latency under Poisson arrivals
// (bench/lib/open-loop.ts: each latency from the request's scheduled time). The catalog is the labelled set's
// (bench/data/match-labelled.ndjson): the 8 OpenStreetMap extracts of ../shared/data less the held-out
// businesses, about 16,000 places; the records are the set's, 100 a call, cycling.
// Run: node --import tsx bench/match-load.ts [--rate 2] [--seconds 30] [--calls 30]
import { createAccountWithToken } from '../test/helpers/accounts.ts';
import { buildTestApp } from '../test/helpers/app.ts';
import { loadLabelledSet, writeCatalog } from '../test/helpers/match-labelled-set.ts';
import { openLoop, percentile } from './lib/open-loop.ts';

const argv = process.argv.slice(2);
const num = (name: string, fallback: number): number => {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
};
const rate = num('--rate', 2);
const seconds = num('--seconds', 30);
const calls = num('--calls', 30);

const extracts = [
  'munich-center-2020',
  'porto-2020',
  'london-center-2020',
  'helsinki-center-2019',
  'monaco-2026',
  'liechtenstein-2024',
  'malta-2018',
  'andorra-2026',
];
const set = loadLabelledSet(extracts);
const t = await buildTestApp({ files: [writeCatalog(set, extracts)], env: { RATE_LIMIT_TOKEN_PER_MINUTE: '1000000' } });
try {
  const places = await t.db.kysely
    .selectFrom('places')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
  const account = await createAccountWithToken(t.db, { scopes: ['match'] });
  const bodies: string[] = [];
  for (let i = 0; i + 100 <= set.length; i += 100) {
    bodies.push(JSON.stringify({ records: set.slice(i, i + 100).map((r) => ({ ref: r.ref, ...r.record })) }));
  }
  const call = async (i: number): Promise<boolean> => {
    const res = await fetch(`${address}/api/v2/match`, {
      method: 'POST',
      headers: { authorization: account.authorization, 'content-type': 'application/json' },
      body: bodies[i % bodies.length],
    });
    await res.arrayBuffer();
    return res.status === 200;
  };
  // Warm-up: every body once (the resolver's caches, the statements).
  for (let i = 0; i < bodies.length; i++) await call(i);

  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  for (let i = 0; i < calls; i++) if (!(await call(i))) throw new Error('a call failed');
  const cpu = process.cpuUsage(cpu0);
  const cpuPerCall = (cpu.user + cpu.system) / 1000 / calls;
  const wallPerCall = (performance.now() - wall0) / calls;
  console.log(`catalog: ${Number(places.n)} places; ${bodies.length} distinct bodies of 100 records`);
  console.log(
    `one call at a time, ${calls} calls: CPU ${cpuPerCall.toFixed(0)} ms a call (server and client in one process), wall ${wallPerCall.toFixed(0)} ms`,
  );

  const load = await openLoop(rate, seconds, call);
  const p = (q: number) => percentile(load.latenciesMs, q).toFixed(0);
  console.log(
    `open loop, Poisson arrivals at ${rate}/s for ${seconds} s: ${load.sent} calls, ${load.errors} errors; ` +
      `latency from the scheduled time p50 ${p(50)} ms, p90 ${p(90)} ms, p99 ${p(99)} ms, max ${p(100)} ms`,
  );
} finally {
  await t.close();
}
