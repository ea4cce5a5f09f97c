/**
 * Throughput and memory of the enrichment crawler against a local farm of sites (issue 22's target: ≥ 50
 * sites/s, peak RSS < 300 MB):
 *
 *   npm run bench:crawler -- [--sites 10000] [--concurrency 256] [--delay 250]
 *
 * A farm process serves `--sites` real-looking names (`baeckerei-17.de`, `trattoria-18.it`…) from 8
 * loopback addresses, each request answered after 50–500 ms (spread evenly, fixed per site and path), and
 * a DNS server of its own names them. Each site has a robots.txt, a home page of about 12 KB linking to
 * Kontakt, Impressum, Über uns and others, and those pages; one site in 50 each disallows everything in
 * robots.txt, answers 404, is a JavaScript shell, or has no DNS name.
 *
 * Three runs, each in a process of its own (so that each peak RSS is its own): the baseline, a bare loop
 * of node:http GETs of the same concurrency fetching robots.txt, the home page and two contact pages of
 * each site (names resolved through the same DNS server, no parsing, no politeness); the crawler with no
 * pause between a host's requests (what the crawler itself costs next to the bare loop); and the crawler
 * with `--delay` ms between a host's requests (how it would run), with V8's defaults and again with the
 * heap's growth limited as `leadatlas serve` limits it (`limitHeapGrowth`).
 *
 *   npm run bench:crawler -- --scenario search [--sites 4000] [--workers 8,64] [--extract-threads 0,1] [--duration 20] [--clients 8]
 *
 * The API's search latency while `serve` enriches in the background, against the same server without
 * enrichment, in one run: an app on the Munich extract (SQLite) listens on loopback; a client process sends
 * `--clients` concurrent searches (type + city, pages of 10–50 rows: 328 distinct requests) for `--duration` s, first with no enrichment,
 * then with the enrichment worker of the same process crawling the farm at each `--workers` count, with the
 * extraction on the main thread (0) and on worker threads (ENRICH_EXTRACT_THREADS), each measurement after a
 * baseline of its own, so that a drifting host shows. Prints p50/p99 and the ratios.
 *
 * With `--process` (`--nice 10`), each `--workers` count also runs as deployed for issue 22's target: the
 * enrichment as `leadatlas enrich --watch` in a child process of its own at that nice value (ENRICH_CONCURRENCY
 * = the count, one extraction thread), the API with ENRICH_WORKERS=0, against a baseline of its own too.
 * Sites/s are counted from the first crawled site on (the child's start-up left out).
 *
 *   npm run bench:crawler -- --scenario kill [--sites 10000] [--concurrency 128]
 *
 * `kill -9` in the middle of a run: a child process runs the pipeline (`EnrichmentRun`, as `leadatlas
 * enrich` does) over `--sites` farm sites queued in an SQLite file, is killed with SIGKILL once 40 % are
 * done, and a second child runs the same selection to the end. The farm counts every request per host, so
 * the bench checks that no site recorded as done before the kill was requested again, and that every site
 * ends done.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import { cpus, loadavg, totalmem } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/infra/db/database.ts';
import { migrateToLatest } from '../src/infra/db/migrate.ts';
import { pinnedLookup } from '../src/infra/http/outbound-guard.ts';
import { limitHeapGrowth } from '../src/infra/memory.ts';
import { Crawler } from '../src/modules/enrichment/crawler/crawler.ts';
import * as enrichRepo from '../src/modules/enrichment/enrichment.repository.ts';
import { EnrichmentRun } from '../src/modules/enrichment/enrichment.service.ts';
import { EnrichmentWorker, enrichmentTools } from '../src/modules/enrichment/enrichment.ts';
import { createResolver } from '../src/modules/enrichment/resolver.ts';
import { createAccountWithToken } from '../test/helpers/accounts.ts';
import { buildTestApp } from '../test/helpers/app.ts';
import { spawnCli } from '../test/helpers/cli.ts';
import { openTestSqlite } from '../test/helpers/databases.ts';
import { startDnsServer } from '../test/helpers/dns-server.ts';
import { osmDir } from '../test/helpers/osm.ts';
import { argValue } from './lib/args.ts';
import { farmUrl, siteName } from './lib/farm-sites.ts';

const sites = Number(argValue('--sites', '10000'));
const concurrency = Number(argValue('--concurrency', '256'));
const delayMs = Number(argValue('--delay', '250'));
const mode = argValue('--mode', 'main');
const scenario = argValue('--scenario', 'throughput');
const niceValue = argValue('--nice', '10');
const addresses = Array.from({ length: 8 }, (_, i) => `127.0.0.${11 + i}`);

type Kind = 'normal' | 'robots' | 'missing' | 'shell' | 'no-dns';
function kindOf(i: number): Kind {
  const k = i % 50;
  return k === 7 ? 'robots' : k === 13 ? 'missing' : k === 21 ? 'shell' : k === 33 ? 'no-dns' : 'normal';
}

function latencyMs(i: number, path: string): number {
  let h = i * 2654435761;
  for (const c of path) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  return 50 + ((h >>> 0) % 451);
}

const filler = 'Frisches Brot und feines Gebäck aus eigener Herstellung, jeden Morgen ab sechs Uhr. '.repeat(120);

function homePage(name: string): string {
  return `<!doctype html><html lang="de"><head><meta charset="utf-8"><title>${name}</title></head><body>
<nav><a href="/">Start</a> <a href="/produkte">Produkte</a> <a href="/ueber-uns">Über uns</a> <a href="/team">Team</a>
<a href="/kontakt">Kontakt</a> <a href="/impressum">Impressum</a> <a href="https://www.instagram.com/${name}">Instagram</a></nav>
<main><h1>${name}</h1><p>${filler}</p></main><footer>© ${name}</footer></body></html>`;
}

async function runFarm(): Promise<void> {
  const requestsPerHost = new Map<string, number>();
  process.on('message', (m) => {
    if (m === 'counts') process.send!(Object.fromEntries(requestsPerHost));
  });
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    requestsPerHost.set(host, (requestsPerHost.get(host) ?? 0) + 1);
    const i = Number(/-(\d+)\./.exec(host)?.[1] ?? -1);
    const path = req.url ?? '/';
    const kind = kindOf(i);
    setTimeout(
      () => {
        if (i < 0 || res.destroyed) return res.destroy();
        if (path === '/robots.txt') {
          if (kind === 'robots') return res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /\n');
          return res.writeHead(404).end();
        }
        if (kind === 'missing') return res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not found</h1>');
        if (kind === 'shell')
          return res
            .writeHead(200, { 'content-type': 'text/html' })
            .end('<html><head><script src="/app.js"></script></head><body><div id="root"></div></body></html>');
        const body =
          path === '/'
            ? homePage(host)
            : `<html><body><h1>${path}</h1><p>${host}, Hauptstraße ${i % 200}, Tel. +49 30 ${1000000 + i}</p><p>${filler.slice(0, 3000)}</p></body></html>`;
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
      },
      latencyMs(i, path),
    );
  };
  const zone: Record<string, { A: string[] }> = {};
  for (let i = 0; i < sites; i++) if (kindOf(i) !== 'no-dns') zone[siteName(i)] = { A: [addresses[i % addresses.length]!] };
  const dns = await startDnsServer(zone);
  let port = 0;
  for (const address of addresses) {
    const server = createServer(handle);
    server.maxConnections = 10_000;
    await new Promise<void>((resolve) => server.listen(port, address, resolve));
    port = (server.address() as { port: number }).port;
  }
  process.send!({ port, dns: dns.address });
}

interface RunResult {
  label: string;
  seconds: number;
  sitesPerSecond: number;
  peakRssMb: number;
  peakHeapMb: number;
  outcomes: Record<string, number>;
  pages: number;
}

/** Runs `crawlOne` over every site with `concurrency` at once, sampling RSS every 50 ms. */
async function timed(label: string, crawlOne: (i: number) => Promise<{ outcome: string; pages: number }>): Promise<RunResult> {
  let peak = process.memoryUsage.rss();
  let peakHeap = 0;
  const sampler = setInterval(() => {
    const usage = process.memoryUsage();
    peak = Math.max(peak, usage.rss);
    peakHeap = Math.max(peakHeap, usage.heapUsed);
  }, 50);
  const outcomes: Record<string, number> = {};
  let pages = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < sites) {
        const result = await crawlOne(next++);
        outcomes[result.outcome] = (outcomes[result.outcome] ?? 0) + 1;
        pages += result.pages;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  return { label, seconds, sitesPerSecond: sites / seconds, peakRssMb: peak / 2 ** 20, peakHeapMb: peakHeap / 2 ** 20, outcomes, pages };
}

async function runPhase(): Promise<void> {
  const port = Number(argValue('--port', '0'));
  const resolver = createResolver({ dnsServers: [argValue('--dns', '')], timeoutMs: 5000 });
  let result: RunResult;
  if (mode === 'baseline') {
    const get = (host: string, path: string, address: string) =>
      new Promise<number>((resolve) => {
        const req = request({ host, port, path, agent: false, lookup: pinnedLookup({ address, family: 4 }) }, (res) => {
          res.on('data', () => {});
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', () => resolve(0));
        });
        req.on('error', () => resolve(0));
        req.end();
      });
    result = await timed('baseline: bare node:http loop', async (i) => {
      const host = siteName(i);
      let address: string;
      try {
        address = (await resolver.lookup(host))[0]!.address;
      } catch {
        return { outcome: 'dns_error', pages: 0 };
      }
      let pages = 0;
      for (const path of ['/robots.txt', '/', '/kontakt', '/impressum'])
        if ((await get(host, path, address)) === 200 && path !== '/robots.txt') pages++;
      return { outcome: pages > 0 ? 'ok' : 'http_error', pages };
    });
  } else {
    const perHostDelayMs = Number(argValue('--host-delay', '0'));
    const limitHeap = process.argv.includes('--limit-heap');
    if (limitHeap) limitHeapGrowth();
    const crawler = new Crawler({
      userAgent: 'Mozilla/5.0 (compatible; LeadAtlasBot/1.0; +https://leadatlas.example/bot)',
      resolver,
      allowPrivate: true,
      connectTimeoutMs: 5000,
      headersTimeoutMs: 10_000,
      bodyTimeoutMs: 20_000,
      maxPageBytes: 2 * 1024 * 1024,
      maxPagesPerSite: 3,
      maxRedirects: 5,
      perHostDelayMs,
      concurrency,
    });
    result = await timed(
      `crawler, ${perHostDelayMs} ms between a host's requests${limitHeap ? ', heap growth limited as in `serve`' : ''}`,
      async (i) => {
        const crawl = await crawler.crawlSite(`http://${siteName(i)}:${port}/`);
        return { outcome: crawl.outcome, pages: crawl.pages.length };
      },
    );
    crawler.close();
  }
  process.send!(result);
}

function child(args: string[]): ChildProcess {
  return fork(import.meta.filename, args, { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
}

function nextMessage<T>(process: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    process.once('message', (m) => resolve(m as T));
    process.once('exit', (code) => reject(new Error(`the child exited (${code}) before answering`)));
  });
}

async function main(): Promise<void> {
  const farm = child(['--mode', 'farm', '--sites', String(sites)]);
  const { port, dns } = await nextMessage<{ port: number; dns: string }>(farm);
  console.log(
    `farm: ${sites.toLocaleString('en')} sites on ${addresses.length} loopback addresses, port ${port}, DNS ${dns}; concurrency ${concurrency}`,
  );
  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const runs: RunResult[] = [];
  const phases = [
    ['--mode', 'baseline'],
    ['--mode', 'crawler', '--host-delay', '0'],
    ['--mode', 'crawler', '--host-delay', String(delayMs)],
    ['--mode', 'crawler', '--host-delay', String(delayMs), '--limit-heap'],
  ];
  for (const args of phases) {
    const phase = child([...args, '--sites', String(sites), '--concurrency', String(concurrency), '--port', String(port), '--dns', dns]);
    runs.push(await nextMessage<RunResult>(phase));
    await new Promise((resolve) => phase.once('exit', resolve));
  }
  farm.kill();
  console.log('\n| run | sites/s | wall s | peak RSS MB | peak heap used MB | pages | outcomes |\n|---|---:|---:|---:|---:|---:|---|');
  for (const r of runs) {
    const outcomes = Object.entries(r.outcomes)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    console.log(
      `| ${r.label} | ${r.sitesPerSecond.toFixed(1)} | ${r.seconds.toFixed(1)} | ${r.peakRssMb.toFixed(0)} | ${r.peakHeapMb.toFixed(0)} | ${r.pages} | ${outcomes} |`,
    );
  }
  console.log(
    `\nload after: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
}

const machineLine = () =>
  `machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`;

async function startFarm(): Promise<{ farm: ChildProcess; port: number; dns: string }> {
  const farm = child(['--mode', 'farm', '--sites', String(sites)]);
  const { port, dns } = await nextMessage<{ port: number; dns: string }>(farm);
  return { farm, port, dns };
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The search client (a process of its own, so that the server's event loop is not the client's): latencies in ms. */
async function runSearchClient(): Promise<void> {
  const base = argValue('--base', '');
  const authorization = argValue('--auth', '');
  const seconds = Number(argValue('--duration', '20'));
  const clients = Number(argValue('--clients', '8'));
  const types = ['cafe', 'restaurant', 'bar', 'pharmacy', 'bakery', 'hairdresser', 'supermarket', 'hotel'];
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        const type = types[n++ % types.length]!;
        const started = performance.now();
        const res = await fetch(`${base}/api/v2/map/search?type=${type}&city=Munich&per_page=${10 + (n % 41)}`, {
          headers: { authorization },
        });
        await res.arrayBuffer();
        if (res.status !== 200) errors++;
        latencies.push(performance.now() - started);
      }
    }),
  );
  process.send!({ latencies, errors });
}

async function measureSearch(base: string, authorization: string): Promise<{ p50: number; p99: number; requests: number; errors: number }> {
  const client = child([
    '--mode',
    'search-client',
    '--base',
    base,
    '--auth',
    authorization,
    '--duration',
    argValue('--duration', '20'),
    '--clients',
    argValue('--clients', '8'),
  ]);
  const { latencies, errors } = await nextMessage<{ latencies: number[]; errors: number }>(client);
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), requests: latencies.length, errors };
}

async function searchScenario(): Promise<void> {
  const { farm, port, dns } = await startFarm();
  const workerCounts = argValue('--workers', '8,64')
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  const threadCounts = argValue('--extract-threads', '0,1').split(',').map(Number);
  const separate = process.argv.includes('--process');
  const rounds = workerCounts.flatMap((workers) => [
    ...threadCounts.map((threads) => ({ workers, threads, separate: false })),
    ...(separate ? [{ workers, threads: 1, separate: true }] : []),
  ]);
  console.log(machineLine());
  const t = await buildTestApp({
    files: [`${osmDir}/munich-center-2020.osm.pbf`],
    env: {
      RATE_LIMIT_TOKEN_PER_MINUTE: '10000000',
      QUOTA_REQUESTS_PER_DAY: '1000000000',
      ENRICH_ALLOW_PRIVATE_NETWORKS: 'true',
      ENRICH_DNS_SERVERS: dns,
      ENRICH_HOST_DELAY_MS: String(delayMs),
      ENRICH_MAX_PAGES: '3',
    },
  });
  const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
  const account = await createAccountWithToken(t.db);
  const rows: string[] = [];
  let next = 0;
  const crawled = async () =>
    Number(
      (
        await t.db.kysely
          .selectFrom('enrich_sites')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('status', '=', 'done')
          .where('url', 'like', 'http://%:' + port + '/')
          .executeTakeFirstOrThrow()
      ).n,
    );
  await measureSearch(address, account.authorization); // warm-up: caches, the type resolver, JIT
  for (const { workers, threads, separate } of rounds) {
    const base = await measureSearch(address, account.authorization);
    // Fresh farm sites for this round, so that the worker has a full queue for the whole measurement.
    const batch = Array.from({ length: Math.min(sites - next, sites) }, (_, k) => next + k).slice(0, Math.floor(sites / rounds.length));
    next += batch.length;
    await enrichRepo.ensureSites(
      t.db,
      batch.map((i) => ({ key: `${siteName(i)}:${port}`, url: farmUrl(i, port), countryCode: 'DE' })),
      new Date().toISOString(),
    );
    const before = await crawled();
    const env = {
      DATABASE_URL: t.url,
      LOG_LEVEL: 'silent',
      ENRICH_EXTRACT_THREADS: String(threads),
      ENRICH_ALLOW_PRIVATE_NETWORKS: 'true',
      ENRICH_DNS_SERVERS: dns,
      ENRICH_HOST_DELAY_MS: String(delayMs),
      ENRICH_MAX_PAGES: '3',
    };
    let stop: () => Promise<void>;
    if (separate) {
      // As deployed: `leadatlas enrich --watch` in a process of its own at nice 10, the API with ENRICH_WORKERS=0.
      const enrich = spawnCli(['enrich', '--watch'], { ...env, ENRICH_CONCURRENCY: String(workers), ENRICH_NICE: niceValue }, 'ignore');
      const exited = new Promise((resolve) => enrich.once('exit', resolve));
      for (const end = Date.now() + 30_000; (await crawled()) === before && Date.now() < end; ) await sleep(200);
      stop = async () => {
        enrich.kill('SIGTERM');
        await exited;
      };
    } else {
      const config = loadConfig({ ...env, ENRICH_WORKERS: String(workers) });
      const worker = new EnrichmentWorker({ db: t.db, config, log: t.app.log });
      worker.start();
      stop = () => worker.close();
    }
    await sleep(1000);
    const started = performance.now();
    const atStart = await crawled();
    const loaded = await measureSearch(address, account.authorization);
    const sitesPerSecond = ((await crawled()) - atStart) / ((performance.now() - started) / 1000);
    await stop();
    const line = (label: string, m: typeof base, extra: string) =>
      `| ${label} | ${m.requests} | ${m.errors} | ${m.p50.toFixed(1)} | ${m.p99.toFixed(1)} | ${extra} |`;
    rows.push(line('no enrichment', base, '—'));
    rows.push(
      line(
        separate
          ? `enrichment as \`leadatlas enrich --watch\` at nice ${niceValue}, concurrency ${workers}, serve with ENRICH_WORKERS=0`
          : `enrichment in serve, ${workers} workers, extraction ${threads ? `on ${threads} thread(s)` : 'on the main thread'}`,
        loaded,
        `${(loaded.p99 / base.p99).toFixed(2)}× p99, ${sitesPerSecond.toFixed(1)} sites/s`,
      ),
    );
  }
  console.log('\n| run | searches | errors | p50 ms | p99 ms | against the baseline before it |\n|---|---:|---:|---:|---:|---|');
  for (const r of rows) console.log(r);
  console.log(
    `\nload after: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  await t.close();
  farm.kill();
}

/** One run of the pipeline over every farm site of the SQLite file (the kill scenario's child). */
async function runEnrich(): Promise<void> {
  const url = argValue('--db', '');
  const db = openDatabase(url);
  const config = loadConfig({
    DATABASE_URL: url,
    LOG_LEVEL: 'silent',
    ENRICH_ALLOW_PRIVATE_NETWORKS: 'true',
    ENRICH_DNS_SERVERS: argValue('--dns', ''),
    ENRICH_HOST_DELAY_MS: String(delayMs),
    ENRICH_MAX_PAGES: '3',
    ENRICH_LEASE: '5',
  });
  const tools = enrichmentTools(db, config);
  const ids = (await db.kysely.selectFrom('enrich_sites').select('id').execute()).map((r) => Number(r.id));
  const started = performance.now();
  const summary = await new EnrichmentRun(tools.pipeline).run({ siteIds: ids, concurrency });
  process.send!({ sites: summary.sites, seconds: (performance.now() - started) / 1000 });
  tools.close();
  await db.close();
}

async function killScenario(): Promise<void> {
  const { farm, port, dns } = await startFarm();
  console.log(machineLine());
  const t = openTestSqlite();
  await migrateToLatest(t.db);
  for (let i = 0; i < sites; i += 1000)
    await enrichRepo.ensureSites(
      t.db,
      Array.from({ length: Math.min(1000, sites - i) }, (_, k) => ({
        key: `${siteName(i + k)}:${port}`,
        url: farmUrl(i + k, port),
        countryCode: 'DE',
      })),
      new Date().toISOString(),
    );
  const doneSites = async () =>
    (await t.db.kysely.selectFrom('enrich_sites').select('url').where('status', '=', 'done').execute()).map((r) => new URL(r.url).hostname);
  const args = ['--mode', 'enrich-run', '--db', t.url, '--dns', dns, '--sites', String(sites), '--concurrency', String(concurrency)];
  const first = child(args);
  const started = performance.now();
  for (;;) {
    await sleep(200);
    if ((await doneSites()).length >= sites * 0.4) break;
  }
  first.kill('SIGKILL');
  await new Promise((r) => first.once('exit', r));
  const killedAt = (performance.now() - started) / 1000;
  const finished = new Set(await doneSites());
  const running = Number(
    (
      await t.db.kysely
        .selectFrom('enrich_sites')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'running')
        .executeTakeFirstOrThrow()
    ).n,
  );
  farm.send('counts');
  const before = await nextMessage<Record<string, number>>(farm);
  const second = child(args);
  const result = await nextMessage<{ sites: number; seconds: number }>(second);
  farm.send('counts');
  const afterKill = await nextMessage<Record<string, number>>(farm);
  const refetched = [...finished].filter((h) => (afterKill[h] ?? 0) !== (before[h] ?? 0));
  const all = await doneSites();
  console.log(
    `\nkilled with SIGKILL after ${killedAt.toFixed(1)} s: ${finished.size} sites done, ${running} running (their leases held by the dead process)`,
  );
  console.log(
    `restart: ${result.sites} sites crawled in ${result.seconds.toFixed(1)} s (${(result.sites / result.seconds).toFixed(1)} sites/s, the dead leases' ${5} s included)`,
  );
  console.log(
    `finished sites requested again after the kill: ${refetched.length}${refetched.length ? ` (${refetched.slice(0, 5).join(', ')}…)` : ''}`,
  );
  console.log(`sites done at the end: ${all.length} of ${sites}`);
  await t.dispose();
  farm.kill();
  if (refetched.length > 0 || all.length !== sites) process.exitCode = 1;
}

if (mode === 'farm') await runFarm();
else if (mode === 'search-client') await runSearchClient();
else if (mode === 'enrich-run') await runEnrich();
else if (mode === 'main' && scenario === 'search') await searchScenario();
else if (mode === 'main' && scenario === 'kill') await killScenario();
else if (mode === 'main') await main();
else await runPhase();
