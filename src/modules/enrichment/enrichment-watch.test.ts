import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { getPriority } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCli, spawnCli } from '../../../test/helpers/cli.ts';
import { copyTestSqlite, type TestSqlite } from '../../../test/helpers/databases.ts';
import { startDnsServer } from '../../../test/helpers/dns-server.ts';
import * as repo from './enrichment.repository.ts';

/**
 * `leadatlas enrich --watch` as a real child process against sites on 127.0.0.3 under real names (named by
 * a DNS server of the test's own): it crawls the queue, waits, takes sites queued later, runs at the nice
 * value asked, and ends on SIGTERM with no site left leased.
 */
describe('leadatlas enrich --watch', () => {
  let t: TestSqlite;
  const names = [
    'baeckerei-mueller.de',
    'trattoria-roma.it',
    'boulangerie-paul.fr',
    'kahvila-helmi.fi',
    'padaria-lisboa.pt',
    'hang-forever.de',
  ];
  const requests = new Map<string, number>();
  let server: Server;
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  let port = 0;
  const url = (name: string) => `http://${name}:${port}/`;

  before(async () => {
    t = await copyTestSqlite('migrated');
    server = createServer((req, res) => {
      const host = (req.headers.host ?? '').replace(/:\d+$/, '');
      requests.set(host, (requests.get(host) ?? 0) + 1);
      if (req.url === '/robots.txt') return res.writeHead(404).end();
      if (host === 'hang-forever.de') return; // its home page never comes: the crawl is under way when SIGTERM comes
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<html><body><h1>${host}</h1><p><a href="mailto:info@${host}">info@${host}</a></p></body></html>`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.3', resolve));
    port = (server.address() as { port: number }).port;
    dns = await startDnsServer(Object.fromEntries(names.map((n) => [n, { A: ['127.0.0.3'] }])));
  });
  after(async () => {
    server.closeAllConnections();
    server.close();
    await dns.close();
    await t.dispose();
  });

  const statuses = async () =>
    t.db.kysely.selectFrom('enrich_sites').select(['site_key', 'status', 'runner', 'outcome']).orderBy('id').execute();

  // Generous: the child starts (loads the CLI, opens the database) at a lower priority than the other test
  // files running beside it, so on a busy machine its first crawl can come many seconds after the spawn.
  async function until<T>(what: string, check: () => Promise<T | undefined>, limitMs = 90_000): Promise<T> {
    const end = Date.now() + limitMs;
    for (;;) {
      const value = await check();
      if (value !== undefined) return value;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await sleep(100);
    }
  }

  test('crawls the queue, takes sites queued later, runs at ENRICH_NICE, and SIGTERM leaves no site leased', async () => {
    await repo.ensureSites(
      t.db,
      names.slice(0, 3).map((n) => ({ key: n, url: url(n), countryCode: 'DE' })),
      new Date().toISOString(),
    );
    const child = spawnCli(
      ['enrich', '--watch'],
      {
        DATABASE_URL: t.url,
        ENRICH_ALLOW_PRIVATE_NETWORKS: 'true',
        ENRICH_DNS_SERVERS: dns.address,
        ENRICH_HOST_DELAY_MS: '0',
        ENRICH_CONCURRENCY: '4',
        ENRICH_NICE: '3',
      },
      ['ignore', 'ignore', 'pipe'],
    );
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      await until('the first three sites', async () => ((await statuses()).every((s) => s.status === 'done') ? true : undefined));
      const nice = readdirSync(`/proc/${child.pid}/task`).map((tid) => getPriority(Number(tid)));
      assert.ok(nice.length > 1 && nice.every((n) => n === 3), `every thread at nice 3: ${nice.join(' ')}`);
      assert.equal(getPriority(0), 0, 'the test process itself unchanged');

      // Queued while the process waits: it takes them at its next look, the hanging one stays in hand.
      await repo.ensureSites(
        t.db,
        names.slice(3).map((n) => ({ key: n, url: url(n), countryCode: 'PT' })),
        new Date().toISOString(),
      );
      await until('the later sites', async () => {
        const rows = await statuses();
        const hanging = rows.find((r) => r.site_key === 'hang-forever.de');
        const rest = rows.filter((r) => r.site_key !== 'hang-forever.de');
        return hanging?.status === 'running' && (requests.get('hang-forever.de') ?? 0) > 1 && rest.every((r) => r.status === 'done')
          ? true
          : undefined;
      });
      child.kill('SIGTERM');
      const [code, signal] = await Promise.race([exited, sleep(10_000).then(() => [null, 'timeout'] as const)]);
      assert.equal(code, 0, `exit 0 on SIGTERM, not ${signal}; stderr: ${stderr}`);
      assert.match(stderr, /SIGTERM, putting the sites in hand back in the queue/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    const rows = await statuses();
    assert.deepEqual(
      rows.filter((r) => r.status === 'running' || r.runner !== null),
      [],
      'no site left leased',
    );
    assert.deepEqual(
      rows.find((r) => r.site_key === 'hang-forever.de'),
      { site_key: 'hang-forever.de', status: 'queued', runner: null, outcome: null },
      'the site cut short is back in the queue, not recorded as failed',
    );
    assert.ok(
      names.slice(0, 5).every((n) => requests.get(n) === 2),
      'each site crawled once (robots.txt and the home page)',
    );
  });

  test('--watch refuses a selection, naming the options', () => {
    const result = runCli(['enrich', '--watch', '--country', 'MC', '--limit', '3'], { DATABASE_URL: t.url, ENRICH_NICE: '0' }, 60_000);
    assert.equal(result.status, 2, result.stderr);
    assert.match(result.stderr, /--watch crawls the whole queue/);
    assert.match(result.stderr, /country: --country is for a single run/);
    assert.match(result.stderr, /limit: --limit is for a single run/);
  });
});
