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
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { cpus, loadavg, totalmem } from 'node:os';
import { startDnsServer } from '../test/helpers/dns-server.ts';
import { pinnedLookup } from '../src/infra/http/outbound-guard.ts';
import { limitHeapGrowth } from '../src/infra/memory.ts';
import { Crawler } from '../src/modules/enrichment/crawler/crawler.ts';
import { createResolver } from '../src/modules/enrichment/resolver.ts';
import { argValue } from './lib/args.ts';

const sites = Number(argValue('--sites', '10000'));
const concurrency = Number(argValue('--concurrency', '256'));
const delayMs = Number(argValue('--delay', '250'));
const mode = argValue('--mode', 'main');
const addresses = Array.from({ length: 8 }, (_, i) => `127.0.0.${11 + i}`);
const trades = ['baeckerei', 'trattoria', 'boulangerie', 'taberna', 'kahvila', 'padaria', 'sushi', 'kapsalon'];
const tlds = ['de', 'it', 'fr', 'es', 'fi', 'pt', 'jp', 'nl'];

function siteName(i: number): string {
  return `${trades[i % trades.length]}-${i}.${tlds[(i >> 3) % tlds.length]}`;
}

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
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
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

if (mode === 'farm') await runFarm();
else if (mode === 'main') await main();
else await runPhase();
