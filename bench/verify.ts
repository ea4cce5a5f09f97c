/**
 * `leadatlas verify` against a local web (issue 33's target: ≥ 100 sites/s on 10,000 sites):
 *
 *   npm run bench:verify -- [--sites 10000] [--concurrency 32,256] [--delay 1000]
 *
 * The crawler bench's farm (bench/crawler.ts `--mode farm`: `--sites` real-looking names on 8 loopback
 * addresses, a DNS server of its own naming them, each answer after 50–500 ms; one site in 50 each forbids
 * everything in robots.txt, answers 404, is a JavaScript shell, or has no DNS name). An SQLite catalog gets one
 * place per site (its website the farm URL, an email at the site's domain), the site crawled and its status
 * (`live`) and the email domain's (`valid_domain`) last checked 60 days ago, and the trust pass run once: every
 * website and email domain is due.
 *
 * Then, in this process, what `leadatlas verify` runs (`verifyCommand`: the home page through the crawler, with
 * its robots.txt, outbound guard and `--delay` ms between two requests to one host; the domains through DNS; the
 * places judged anew), once per `--concurrency`, each on a fresh copy of the catalog. Baseline in the same run: a
 * bare loop of node:http GETs (robots.txt and the home page of each site, names resolved through the same DNS
 * server, no pause, no parsing) at the same concurrency: what the farm's latency alone allows. Prints sites/s,
 * CPU (user + system of this process; the farm is another) per site, and where the time went.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/infra/db/database.ts';
import { migrateToLatest } from '../src/infra/db/migrate.ts';
import { pinnedLookup } from '../src/infra/http/outbound-guard.ts';
import { createResolver } from '../src/modules/enrichment/resolver.ts';
import { verifyCommand } from '../src/modules/enrichment/verify.cli.ts';
import { refreshTrust } from '../src/modules/trust/trust.service.ts';
import { testPlaceRecord, writePlaces } from '../test/helpers/places.ts';
import { argValue } from './lib/args.ts';

const sites = Number(argValue('--sites', '10000'));
const concurrencies = argValue('--concurrency', '32,256').split(',').map(Number);
const delayMs = Number(argValue('--delay', '1000'));
const trades = ['baeckerei', 'trattoria', 'boulangerie', 'taberna', 'kahvila', 'padaria', 'sushi', 'kapsalon'];
const tlds = ['de', 'it', 'fr', 'es', 'fi', 'pt', 'jp', 'nl'];
/** bench/crawler.ts's names of the farm's sites. */
const siteName = (i: number) => `${trades[i % trades.length]}-${i}.${tlds[(i >> 3) % tlds.length]}`;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

function nextMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise((done, reject) => {
    child.once('message', (m) => done(m as T));
    child.once('exit', (code) => reject(new Error(`the farm exited (${code}) before answering`)));
  });
}

const farm = fork(resolve(import.meta.dirname, 'crawler.ts'), ['--mode', 'farm', '--sites', String(sites)], {
  execArgv: ['--import', 'tsx'],
  stdio: 'inherit',
});
process.on('exit', () => farm.kill());
const { port, dns } = await nextMessage<{ port: number; dns: string }>(farm);
console.log(
  `farm: ${sites.toLocaleString('en')} sites, port ${port}, DNS ${dns}; ${cpus().length} × ${cpus()[0]?.model}, Node ${process.version}`,
);

// ------------------------------------------------------------------ the catalog, every site and domain due
const dir = mkdtempSync(join(tmpdir(), 'leadatlas-verify-'));
const template = join(dir, 'template.db');
{
  const started = performance.now();
  const db = openDatabase(`sqlite:${template}`);
  await migrateToLatest(db);
  const longAgo = new Date(Date.now() - 60 * 86_400_000).toISOString();
  for (let from = 0; from < sites; from += 1000) {
    const ids = Array.from({ length: Math.min(1000, sites - from) }, (_, k) => from + k);
    await writePlaces(
      db,
      ids.map((i) =>
        testPlaceRecord('verify', String(i), {
          website: `http://${siteName(i)}:${port}/`,
          email: `info@${siteName(i)}`,
          country_code: 'DE',
        }),
      ),
    );
  }
  const places = await db.kysely.selectFrom('places').select(['id', 'website']).execute();
  await db.kysely.transaction().execute(async (trx) => {
    for (const p of places) {
      const site = await trx
        .insertInto('enrich_sites')
        .values({
          site_key: new URL(p.website!).host,
          url: p.website!,
          country_code: 'DE',
          status: 'done',
          due_at: '2099-01-01T00:00:00.000Z',
          crawled_at: longAgo,
          outcome: 'ok',
          site_status: 'live',
          status_checked_at: longAgo,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      await trx
        .updateTable('places')
        .set({ enrich_site_id: Number(site.id), enrich_basis: p.website })
        .where('id', '=', Number(p.id))
        .execute();
    }
    for (let i = 0; i < sites; i += 500)
      await trx
        .insertInto('email_domains')
        .values(
          Array.from({ length: Math.min(500, sites - i) }, (_, k) => ({
            domain: siteName(i + k),
            status: 'valid_domain',
            checked_at: longAgo,
          })),
        )
        .execute();
  });
  await refreshTrust(db);
  await db.close();
  console.log(
    `catalog: ${places.length} places, sites and email domains due, judged once (${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );
}

// ------------------------------------------------------------------ baseline: a bare node:http loop
async function baseline(concurrency: number): Promise<{ perSecond: number; cpuMsPerSite: number }> {
  const resolver = createResolver({ dnsServers: [dns], timeoutMs: 5000 });
  const get = (host: string, path: string, address: string) =>
    new Promise<number>((done) => {
      const req = request({ host, port, path, agent: false, lookup: pinnedLookup({ address, family: 4 }) }, (res) => {
        res.on('data', () => {});
        res.on('end', () => done(res.statusCode ?? 0));
        res.on('error', () => done(0));
      });
      req.on('error', () => done(0));
      req.end();
    });
  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < sites) {
        const host = siteName(next++);
        let address: string;
        try {
          address = (await resolver.lookup(host))[0]!.address;
        } catch {
          continue;
        }
        for (const path of ['/robots.txt', '/']) await get(host, path, address);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return { perSecond: sites / seconds, cpuMsPerSite: (used.user + used.system) / 1000 / sites };
}

// ------------------------------------------------------------------ `leadatlas verify`
async function verify(concurrency: number): Promise<{ perSecond: number; cpuMsPerSite: number; line: string }> {
  const path = join(dir, `verify-${concurrency}.db`);
  copyFileSync(template, path);
  const url = `sqlite:${path}`;
  const db = openDatabase(url);
  const config = loadConfig({
    DATABASE_URL: url,
    LOG_LEVEL: 'silent',
    ENRICH_ALLOW_PRIVATE_NETWORKS: 'true',
    ENRICH_DNS_SERVERS: dns,
    ENRICH_HOST_DELAY_MS: String(delayMs),
  });
  let line = '';
  const cpu = process.cpuUsage();
  const started = performance.now();
  const summary = await verifyCommand(db, config, { concurrency }, (l) => {
    line = l;
  });
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const statuses = await db.kysely
    .selectFrom('places')
    .select(['website_status', (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy('website_status')
    .execute();
  await db.close();
  rmSync(path, { force: true });
  if (summary.sites !== sites) throw new Error(`verify checked ${summary.sites} of ${sites} websites`);
  return {
    perSecond: sites / seconds,
    cpuMsPerSite: (used.user + used.system) / 1000 / sites,
    line: `${line}; places' website_status after: ${statuses.map((s) => `${s.website_status} ${s.n}`).join(', ')}`,
  };
}

console.log(`\n${new Date().toISOString()}, ${delayMs} ms between two requests to one host; load ${load()}`);
console.log('| run | concurrency | sites/s | CPU ms/site | load after |\n|---|---:|---:|---:|---|');
const lines: string[] = [];
for (const concurrency of concurrencies) {
  const b = await baseline(concurrency);
  console.log(
    `| bare node:http loop (robots.txt + home) | ${concurrency} | ${b.perSecond.toFixed(1)} | ${b.cpuMsPerSite.toFixed(2)} | ${load()} |`,
  );
  const v = await verify(concurrency);
  console.log(`| leadatlas verify | ${concurrency} | ${v.perSecond.toFixed(1)} | ${v.cpuMsPerSite.toFixed(2)} | ${load()} |`);
  lines.push(`concurrency ${concurrency}: ${v.line}`);
}
for (const l of lines) console.log(l);
farm.kill();
rmSync(dir, { recursive: true, force: true });
