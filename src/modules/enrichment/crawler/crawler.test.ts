import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createSecureContext } from 'node:tls';
import { createGzip } from 'node:zlib';
import iconv from 'iconv-lite';
import { startDnsServer } from '../../../../test/helpers/dns-server.ts';
import { createResolver } from '../resolver.ts';
import { Crawler, type CrawlerOptions, parseRetryAfter } from './crawler.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface Logged {
  host: string;
  path: string;
  userAgent: string | undefined;
  ifNoneMatch: string | undefined;
  ifModifiedSince: string | undefined;
  startedAt: number;
  endedAt: number | null;
}

const userAgent = 'Mozilla/5.0 (compatible; LeadAtlasBot/1.0; +https://leadatlas.example/bot)';

/**
 * A local web: one HTTP server on 127.0.0.2 answering many real-looking site names (dispatched by Host),
 * named by a DNS server of the test's own, as ENRICH_DNS_SERVERS would in production.
 */
class SiteFarm {
  readonly log: Logged[] = [];
  connections = 0;
  /** Requests in progress per host at this moment, and the most there ever were. */
  private readonly active = new Map<string, number>();
  maxActivePerHost = 0;
  server!: Server;
  port = 0;

  constructor(readonly sites: Record<string, Handler>) {}

  async start(address: string): Promise<this> {
    this.server = createServer((req, res) => {
      const host = (req.headers.host ?? '').replace(/:\d+$/, '');
      const entry: Logged = {
        host,
        path: req.url ?? '',
        userAgent: req.headers['user-agent'],
        ifNoneMatch: req.headers['if-none-match'],
        ifModifiedSince: req.headers['if-modified-since'],
        startedAt: Date.now(),
        endedAt: null,
      };
      this.log.push(entry);
      this.active.set(host, (this.active.get(host) ?? 0) + 1);
      this.maxActivePerHost = Math.max(this.maxActivePerHost, this.active.get(host)!);
      res.on('close', () => {
        entry.endedAt = Date.now();
        this.active.set(host, this.active.get(host)! - 1);
      });
      const site = this.sites[host];
      if (!site) {
        res.statusCode = 404;
        return res.end();
      }
      site(req, res);
    });
    this.server.on('connection', () => this.connections++);
    await new Promise<void>((resolve) => this.server.listen(0, address, resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(host: string, path = '/'): string {
    return `http://${host}:${this.port}${path}`;
  }

  requestsTo(host: string): Logged[] {
    return this.log.filter((l) => l.host === host);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function html(
  res: ServerResponse,
  body: string | Buffer,
  headers: Record<string, string> = { 'content-type': 'text/html; charset=utf-8' },
): void {
  res.writeHead(200, headers);
  res.end(body);
}

/** Routes by path; robots.txt answers 404 (no rules) unless the site gives one. */
function site(routes: Record<string, Handler | string>): Handler {
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const route = routes[path];
    if (typeof route === 'string') return html(res, route);
    if (route) return route(req, res);
    res.statusCode = 404;
    res.end('not found');
  };
}

const bakeryHome = `<!doctype html><html><head><title>Bäckerei Sonnenschein</title></head><body>
  <nav><a href="/">Start</a> <a href="/produkte">Produkte</a> <a href="/blog/2026">Blog</a>
  <a href="/ueber-uns" title="Wer wir sind">Über uns</a> <a href="/team">Unser Team</a>
  <a href="https://www.facebook.com/sonnenschein">Facebook</a> <a href="/kontakt#form">Kontakt</a>
  <a href="http://cdn.baeckerei-sonnenschein.de:PORT/impressum.html">Impressum</a> <a href="/preisliste.pdf">Kontakt (PDF)</a></nav>
  <main><p>Frisches Brot seit 1921, jeden Morgen aus dem Holzofen.</p></main></body></html>`;

const endlessCalendar: Handler = (req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  const month = Number(url.searchParams.get('m') ?? 0);
  const links = Array.from({ length: 300 }, (_, i) => `<a href="/kontakt/${month}-${i}">Kontakt ${i}</a>`).join(' ');
  html(res, `<html><body><p>Veranstaltungen im Monat ${month}</p><a href="/?m=${month + 1}">nächster Monat</a> ${links}</body></html>`);
};

describe('Crawler against a hostile local web', () => {
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  let farm: SiteFarm;
  let crawler: Crawler;
  let options: CrawlerOptions;
  let bigBytesWritten = 0;
  let bombBytesWritten = 0;
  let gzipBomb: Buffer;
  const timers = new Set<NodeJS.Timeout>();

  before(async () => {
    // 64 MiB of zeros, gzipped to about 64 KiB: what a page of 64 KiB may hold once decompressed.
    gzipBomb = await new Promise<Buffer>((resolve) => {
      const gzip = createGzip({ level: 9 });
      const parts: Buffer[] = [];
      gzip.on('data', (c: Buffer) => parts.push(c)).on('end', () => resolve(Buffer.concat(parts)));
      const zeros = Buffer.alloc(1 << 20);
      for (let i = 0; i < 64; i++) gzip.write(zeros);
      gzip.end();
    });
    farm = await new SiteFarm({
      'www.baeckerei-sonnenschein.de': site({
        '/': (_req, res) => html(res, bakeryHome.replace('PORT', String(farm.port))),
        '/kontakt': '<html><body><h1>Kontakt</h1><p>Telefon 030 1234567</p></body></html>',
        '/ueber-uns': '<html><body><h1>Über uns</h1></body></html>',
        '/team': '<html><body><h1>Team</h1></body></html>',
        '/produkte': '<html><body><h1>Produkte</h1></body></html>',
      }),
      'cdn.baeckerei-sonnenschein.de': site({
        '/impressum.html': '<html><body><h1>Impressum</h1><p>info@baeckerei-sonnenschein.de</p></body></html>',
      }),
      'www.sushi-hanami.jp': site({
        '/': '<html><body><p>寿司 花見 — 新鮮なネタを毎日</p><a href="/menu">メニュー</a><a href="/company">会社概要</a><a href="/inquiry">お問い合わせ</a></body></html>',
        '/inquiry': '<html><body>お問い合わせ: 03-1234-5678</body></html>',
        '/company': '<html><body>会社概要</body></html>',
      }),
      'www.conditional-shop.fr': site({
        '/': (req, res) => {
          if (req.headers['if-none-match'] === '"v1"') {
            res.writeHead(304, { etag: '"v1"' });
            return res.end();
          }
          html(res, '<html><body><a href="/mentions-legales">Mentions légales</a></body></html>', {
            'content-type': 'text/html',
            etag: '"v1"',
            'last-modified': 'Tue, 03 Nov 2026 10:00:00 GMT',
          });
        },
        '/mentions-legales': '<html><body>SARL Boulangerie</body></html>',
      }),
      'www.trickle-body.de': site({
        '/': (_req, res) => {
          res.writeHead(200, { 'content-type': 'text/html' });
          const timer = setInterval(() => res.write('<'), 1000);
          timers.add(timer);
          res.on('close', () => clearInterval(timer));
        },
      }),
      'www.trickle-headers.de': site({
        '/': (_req, res) => {
          const timer = setTimeout(() => html(res, '<html></html>'), 60_000);
          timers.add(timer);
          res.on('close', () => clearTimeout(timer));
        },
      }),
      'www.fifty-megabytes.it': site({
        '/': (_req, res) => {
          res.writeHead(200, { 'content-type': 'text/html' });
          const chunk = Buffer.alloc(64 * 1024, 'a');
          let closed = false;
          res.on('close', () => (closed = true));
          const pump = () => {
            while (!closed && bigBytesWritten < 50 * 1024 * 1024) {
              bigBytesWritten += chunk.length;
              if (!res.write(chunk)) return res.once('drain', pump);
            }
            if (!closed) res.end();
          };
          pump();
        },
      }),
      'www.declared-huge.it': site({
        '/': (_req, res) => html(res, '', { 'content-type': 'text/html', 'content-length': String(50 * 1024 * 1024) }),
      }),
      'www.gzip-bomb.es': site({
        '/': (_req, res) => {
          res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip', 'content-length': String(gzipBomb.length) });
          bombBytesWritten += gzipBomb.length;
          res.end(gzipBomb);
        },
      }),
      'www.redirect-loop.nl': site({
        '/': (_req, res) => res.writeHead(302, { location: '/a' }).end(),
        '/a': (_req, res) => res.writeHead(301, { location: '/b' }).end(),
        '/b': (_req, res) => res.writeHead(307, { location: '/a' }).end(),
      }),
      'www.redirect-chain.nl': (req, res) => {
        const n = Number((req.url ?? '/').replace(/\D/g, '') || 0);
        if (req.url === '/robots.txt') return res.writeHead(404).end();
        res.writeHead(302, { location: `/hop${n + 1}` }).end();
      },
      'www.metadata-redirect.com': site({
        '/': (_req, res) => res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/iam/' }).end(),
      }),
      'www.metadata-by-name.com': site({
        '/': (_req, res) => res.writeHead(301, { location: `http://instance-data.cloud-example.com:${farm.port}/` }).end(),
      }),
      'www.file-redirect.com': site({ '/': (_req, res) => res.writeHead(302, { location: 'file:///etc/passwd' }).end() }),
      'www.no-robots-allowed.se': site({
        '/robots.txt': (_req, res) => html(res, 'User-agent: *\nDisallow: /\n', { 'content-type': 'text/plain' }),
        '/': bakeryHome,
      }),
      'www.robots-only-us.se': site({
        '/robots.txt': (_req, res) =>
          html(res, 'User-agent: LeadAtlasBot\nDisallow: /kontakt\n\nUser-agent: *\nAllow: /\n', { 'content-type': 'text/plain' }),
        '/': bakeryHome,
        '/kontakt': '<html><body>Kontakt</body></html>',
        '/ueber-uns': '<html><body>Über uns</body></html>',
      }),
      'www.robots-broken.se': site({ '/robots.txt': (_req, res) => res.writeHead(500).end(), '/': bakeryHome }),
      'www.too-many-requests.pt': site({ '/': (_req, res) => res.writeHead(429, { 'retry-after': '120' }).end() }),
      'www.maintenance.pt': site({
        '/': (_req, res) => res.writeHead(503, { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() }).end(),
      }),
      'www.gone.pt': site({ '/': (_req, res) => res.writeHead(410).end() }),
      'www.endless-calendar.at': endlessCalendar,
      'www.cafe-latin1.fr': site({
        '/': (_req, res) =>
          html(
            res,
            iconv.encode(
              '<html><body><p>Café Müller – Öffnungszeiten: täglich. Prix: 5 € le menu. Nous contacter: « ici ».</p></body></html>',
              'windows-1252',
            ),
            { 'content-type': 'text/html' },
          ),
      }),
      'www.spa-only.io': site({
        '/': '<!doctype html><html><head><title>Studio</title><script src="/static/app.3f9a.js"></script></head><body><div id="root"></div><noscript>You need to enable JavaScript to run this app.</noscript></body></html>',
      }),
      'www.brochure-pdf.de': site({ '/': (_req, res) => html(res, '%PDF-1.7', { 'content-type': 'application/pdf' }) }),
      'www.refresh-start.ch': site({
        '/': '<html><head><meta http-equiv="refresh" content="0; URL=\'/de/index.html\'"></head><body></body></html>',
        '/de/index.html': '<html><body><a href="/de/kontakt.html">Kontakt</a></body></html>',
        '/de/kontakt.html': '<html><body>Kontakt</body></html>',
      }),
      'www.slow-hops.de': (req, res) => {
        const n = Number((req.url ?? '/').replace(/\D/g, '') || 0);
        const timer = setTimeout(
          () => (req.url === '/robots.txt' ? res.writeHead(404).end() : res.writeHead(302, { location: `/hop${n + 1}` }).end()),
          250,
        );
        timers.add(timer);
        res.on('close', () => clearTimeout(timer));
      },
      'www.slow-contact.de': site({
        '/': '<html><body><a href="/kontakt">Kontakt</a><a href="/impressum">Impressum</a><a href="/team">Team</a></body></html>',
        '/kontakt': (_req, res) => {
          const timer = setTimeout(() => html(res, '<html></html>'), 60_000);
          timers.add(timer);
          res.on('close', () => clearTimeout(timer));
        },
        '/impressum': '<html><body>Impressum</body></html>',
      }),
    }).start('127.0.0.2');

    const zone: Record<string, { A: string[] }> = {};
    for (const name of Object.keys(farm.sites)) zone[name] = { A: ['127.0.0.2'] };
    zone['www.nobody-listens.de'] = { A: ['127.0.0.9'] };
    zone['www.loopback-shop.de'] = { A: ['127.0.0.2'] };
    zone['www.intranet-shop.de'] = { A: ['10.20.30.40'] };
    zone['www.mixed-answers.de'] = { A: ['93.184.216.34', '127.0.0.2'] };
    zone['www.metadata-shop.de'] = { A: ['169.254.169.254'] };
    zone['instance-data.cloud-example.com'] = { A: ['169.254.169.254'] };
    dns = await startDnsServer(zone);
    options = {
      userAgent,
      resolver: createResolver({ dnsServers: [dns.address], timeoutMs: 2000 }),
      allowPrivate: true,
      connectTimeoutMs: 1000,
      headersTimeoutMs: 1500,
      bodyTimeoutMs: 1500,
      maxPageBytes: 1024 * 1024,
      maxPagesPerSite: 3,
      maxRedirects: 5,
      perHostDelayMs: 0,
      concurrency: 8,
    };
    crawler = new Crawler(options);
  });

  after(async () => {
    crawler.close();
    for (const t of timers) clearTimeout(t);
    await farm.close();
    await dns.close();
  });

  test('fetches the home page, then the best-named contact pages within the registrable domain, up to the page limit', {
    timeout: 15_000,
  }, async () => {
    const result = await crawler.crawlSite(farm.url('www.baeckerei-sonnenschein.de'));
    assert.equal(result.outcome, 'ok', result.reason ?? '');
    assert.equal(result.reason, null);
    // Kontakt (contact) and the Impressum on a sister host of the same domain beat Über uns and Team; the PDF and Facebook are never candidates.
    assert.deepEqual(
      result.pages.map((p) => new URL(p.url).host.replace(/:\d+$/, '') + new URL(p.url).pathname),
      ['www.baeckerei-sonnenschein.de/', 'www.baeckerei-sonnenschein.de/kontakt', 'cdn.baeckerei-sonnenschein.de/impressum.html'],
    );
    assert.match(result.pages[1]!.html, /030 1234567/);
    assert.ok(result.pages.every((p) => p.status === 200 && !Number.isNaN(Date.parse(p.fetchedAt))));
    const requests = farm.requestsTo('www.baeckerei-sonnenschein.de');
    assert.deepEqual(
      requests.map((r) => r.path),
      ['/robots.txt', '/', '/kontakt'],
    );
    assert.ok(requests.every((r) => r.userAgent === userAgent));
  });

  test('finds contact pages named in Japanese', { timeout: 15_000 }, async () => {
    const result = await crawler.crawlSite(farm.url('www.sushi-hanami.jp'));
    assert.equal(result.outcome, 'ok');
    assert.equal(result.reason, null);
    assert.deepEqual(
      result.pages.map((p) => new URL(p.url).pathname),
      ['/', '/inquiry', '/company'],
    );
  });

  test('sends one request at a time to a host, with the delay between them, even to two crawls of the same site at once', {
    timeout: 15_000,
  }, async () => {
    const polite = new Crawler({ ...options, perHostDelayMs: 150 });
    try {
      const host = 'www.robots-only-us.se';
      const before = farm.log.length;
      farm.maxActivePerHost = 0;
      const [a, b] = await Promise.all([polite.crawlSite(farm.url(host)), polite.crawlSite(farm.url(host))]);
      assert.deepEqual([a.outcome, b.outcome], ['ok', 'ok']);
      const requests = farm.log.slice(before).filter((r) => r.host === host);
      assert.equal(requests.filter((r) => r.path === '/robots.txt').length, 1, 'robots.txt is fetched once and shared');
      assert.equal(farm.maxActivePerHost, 1);
      for (let i = 1; i < requests.length; i++) {
        assert.ok(
          requests[i]!.startedAt - requests[i - 1]!.endedAt! >= 145,
          `request ${i} started ${requests[i]!.startedAt - requests[i - 1]!.endedAt!} ms after the previous one ended`,
        );
      }
    } finally {
      polite.close();
    }
  });

  test('honours a robots.txt group for its own User-Agent token: a disallowed contact page is skipped, the next one is fetched', {
    timeout: 15_000,
  }, async () => {
    const result = await crawler.crawlSite(farm.url('www.robots-only-us.se'));
    assert.equal(result.outcome, 'ok');
    assert.deepEqual(
      result.pages.map((p) => new URL(p.url).pathname),
      ['/', '/ueber-uns'],
    );
    assert.match(result.reason ?? '', /kontakt: robots_disallowed/);
  });

  test('a robots.txt that disallows everything ends the crawl before any page is fetched', { timeout: 15_000 }, async () => {
    const result = await crawler.crawlSite(farm.url('www.no-robots-allowed.se'));
    assert.equal(result.outcome, 'robots_disallowed');
    assert.match(result.reason!, /disallows \/ for LeadAtlasBot/);
    assert.deepEqual(
      farm.requestsTo('www.no-robots-allowed.se').map((r) => r.path),
      ['/robots.txt'],
    );
  });

  test('a robots.txt answering 500 is read as "disallow everything" (RFC 9309)', { timeout: 15_000 }, async () => {
    const result = await crawler.crawlSite(farm.url('www.robots-broken.se'));
    assert.equal(result.outcome, 'robots_disallowed');
    assert.match(result.reason!, /answered 500/);
  });

  test('a re-crawl sends If-None-Match and If-Modified-Since; a 304 is not_modified and keeps the validators', {
    timeout: 15_000,
  }, async () => {
    const first = await crawler.crawlSite(farm.url('www.conditional-shop.fr'));
    assert.equal(first.outcome, 'ok');
    assert.deepEqual([first.etag, first.lastModified], ['"v1"', 'Tue, 03 Nov 2026 10:00:00 GMT']);
    assert.equal(first.pages.length, 2);
    const again = await crawler.crawlSite(farm.url('www.conditional-shop.fr'), { etag: first.etag, lastModified: first.lastModified });
    assert.equal(again.outcome, 'not_modified');
    assert.deepEqual([again.etag, again.lastModified, again.pages.length], ['"v1"', 'Tue, 03 Nov 2026 10:00:00 GMT', 0]);
    const last = farm.requestsTo('www.conditional-shop.fr').at(-1)!;
    assert.deepEqual([last.path, last.ifNoneMatch, last.ifModifiedSince], ['/', '"v1"', 'Tue, 03 Nov 2026 10:00:00 GMT']);
  });

  test('a site trickling its body one byte a second times out on the body deadline', { timeout: 15_000 }, async () => {
    const result = await crawler.crawlSite(farm.url('www.trickle-body.de'));
    assert.equal(result.outcome, 'timeout');
    assert.match(result.reason!, /the whole body did not arrive within 1500 ms/);
  });

  test('a site that never sends its headers times out on the headers deadline', { timeout: 15_000 }, async () => {
    const result = await crawler.crawlSite(farm.url('www.trickle-headers.de'));
    assert.equal(result.outcome, 'timeout');
    assert.match(result.reason!, /no response headers within 1500 ms/);
  });

  test('a 50 MB page stops at the byte cap: too_large, the connection cut before the server could send it all, the heap not grown by it', {
    timeout: 15_000,
  }, async () => {
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const result = await crawler.crawlSite(farm.url('www.fifty-megabytes.it'));
    const heapAfter = process.memoryUsage().heapUsed;
    assert.equal(result.outcome, 'too_large');
    assert.match(result.reason!, /cap of 1048576 bytes/);
    assert.ok(heapAfter - heapBefore < 32 * 1024 * 1024, `the heap grew by ${heapAfter - heapBefore} bytes`);
    await new Promise((r) => setTimeout(r, 100));
    // What the server wrote beyond the cap sat in socket buffers (the kernel's may grow to tens of MB): the bound is the whole page.
    assert.ok(bigBytesWritten < 50 * 1024 * 1024, `the server wrote ${bigBytesWritten} bytes before the connection closed`);
    const declared = await crawler.crawlSite(farm.url('www.declared-huge.it'));
    assert.equal(declared.outcome, 'too_large');
    assert.match(declared.reason!, /the body is 52428800 bytes/);
  });

  test('a gzip bomb stops at the cap counted after decompression, without inflating the rest', { timeout: 15_000 }, async () => {
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const result = await crawler.crawlSite(farm.url('www.gzip-bomb.es'));
    const heapAfter = process.memoryUsage().heapUsed;
    assert.equal(result.outcome, 'too_large');
    assert.match(result.reason!, /once decompressed/);
    assert.ok(bombBytesWritten < 100 * 1024, 'the bomb is small on the wire');
    // Loose: 64 MiB would be inflated without the cap; the page cap is 1 MiB.
    assert.ok(heapAfter - heapBefore < 32 * 1024 * 1024, `the heap grew by ${heapAfter - heapBefore} bytes`);
  });

  test('a redirect loop and a chain longer than five redirects end as too_many_redirects', { timeout: 15_000 }, async () => {
    const loop = await crawler.crawlSite(farm.url('www.redirect-loop.nl'));
    assert.equal(loop.outcome, 'too_many_redirects');
    assert.match(loop.reason!, /redirect loop: .*\/b leads back to .*\/a/);
    const chain = await crawler.crawlSite(farm.url('www.redirect-chain.nl'));
    assert.equal(chain.outcome, 'too_many_redirects');
    assert.match(chain.reason!, /more than 5 redirects/);
    assert.equal(farm.requestsTo('www.redirect-chain.nl').filter((r) => r.path !== '/robots.txt').length, 6);
  });

  test('a redirect to the cloud metadata address, by address or by name, is refused even where private networks are allowed', {
    timeout: 15_000,
  }, async () => {
    const byAddress = await crawler.crawlSite(farm.url('www.metadata-redirect.com'));
    assert.equal(byAddress.outcome, 'refused');
    assert.match(byAddress.reason!, /169\.254\.169\.254, a link-local address/);
    const byName = await crawler.crawlSite(farm.url('www.metadata-by-name.com'));
    assert.equal(byName.outcome, 'refused');
    assert.match(byName.reason!, /instance-data\.cloud-example\.com resolves to 169\.254\.169\.254/);
    const toFile = await crawler.crawlSite(farm.url('www.file-redirect.com'));
    assert.equal(toFile.outcome, 'refused');
    assert.match(toFile.reason!, /scheme file: is not allowed/);
  });

  test('with private networks not allowed, names resolving to loopback, private or link-local addresses are refused before any connection', {
    timeout: 15_000,
  }, async () => {
    const strict = new Crawler({ ...options, allowPrivate: false });
    try {
      const connections = farm.connections;
      const expected: Record<string, RegExp> = {
        'www.loopback-shop.de': /127\.0\.0\.2, a loopback address/,
        'www.intranet-shop.de': /10\.20\.30\.40, a private address/,
        'www.mixed-answers.de': /127\.0\.0\.2, a loopback address/,
        'www.metadata-shop.de': /169\.254\.169\.254, a linkLocal address/,
        '127.0.0.1': /127\.0\.0\.1, a loopback address/,
        '[::1]': /::1, a loopback address/,
      };
      for (const [host, reason] of Object.entries(expected)) {
        const result = await strict.crawlSite(`http://${host}:${farm.port}/`);
        assert.equal(result.outcome, 'refused', host);
        assert.match(result.reason!, reason, host);
      }
      assert.equal(farm.connections, connections, 'no connection reached the farm');
    } finally {
      strict.close();
    }
  });

  test('a 429 or a 503 with Retry-After is rate_limited with the seconds to wait; another error status is http_error', {
    timeout: 15_000,
  }, async () => {
    const limited = await crawler.crawlSite(farm.url('www.too-many-requests.pt'));
    assert.deepEqual([limited.outcome, limited.retryAfterSeconds], ['rate_limited', 120]);
    const maintenance = await crawler.crawlSite(farm.url('www.maintenance.pt'));
    assert.equal(maintenance.outcome, 'rate_limited');
    assert.ok(maintenance.retryAfterSeconds! > 3500 && maintenance.retryAfterSeconds! <= 3600, String(maintenance.retryAfterSeconds));
    const gone = await crawler.crawlSite(farm.url('www.gone.pt'));
    assert.deepEqual([gone.outcome, gone.retryAfterSeconds], ['http_error', null]);
    assert.match(gone.reason!, /answered 410/);
  });

  test('an endless calendar of links costs at most the page limit', { timeout: 15_000 }, async () => {
    const result = await crawler.crawlSite(farm.url('www.endless-calendar.at'));
    assert.equal(result.outcome, 'ok');
    assert.equal(result.pages.length, 3);
    assert.equal(farm.requestsTo('www.endless-calendar.at').length, 1 + 3, 'robots.txt and three pages');
  });

  test('a page in Windows-1252 without any charset declaration is decoded by detection', { timeout: 15_000 }, async () => {
    const result = await crawler.crawlSite(farm.url('www.cafe-latin1.fr'));
    assert.equal(result.outcome, 'ok');
    assert.match(result.pages[0]!.html, /Café Müller – Öffnungszeiten: täglich\. Prix: 5 € le menu\. Nous contacter: « ici »/);
  });

  test('a site that answers only a JavaScript shell is javascript_only, its page kept', { timeout: 15_000 }, async () => {
    const result = await crawler.crawlSite(farm.url('www.spa-only.io'));
    assert.equal(result.outcome, 'javascript_only');
    assert.match(result.reason!, /1 script\(s\), no link and 0 characters of text/);
    assert.equal(result.pages.length, 1);
  });

  test('a home page that is not HTML is not_html, and its body is not read', { timeout: 15_000 }, async () => {
    const result = await crawler.crawlSite(farm.url('www.brochure-pdf.de'));
    assert.equal(result.outcome, 'not_html');
    assert.match(result.reason!, /application\/pdf, not HTML/);
  });

  test('an empty home page with a meta refresh leads to the real one', { timeout: 15_000 }, async () => {
    const result = await crawler.crawlSite(farm.url('www.refresh-start.ch'));
    assert.equal(result.outcome, 'ok');
    assert.deepEqual(
      result.pages.map((p) => new URL(p.url).pathname),
      ['/de/index.html', '/de/kontakt.html'],
    );
  });

  test('a contact page that times out ends the site with the pages so far and the reason', { timeout: 15_000 }, async () => {
    const result = await crawler.crawlSite(farm.url('www.slow-contact.de'));
    assert.equal(result.outcome, 'ok');
    assert.deepEqual(
      result.pages.map((p) => new URL(p.url).pathname),
      ['/'],
    );
    assert.match(result.reason!, /kontakt: timeout/);
    assert.ok(!farm.requestsTo('www.slow-contact.de').some((r) => r.path === '/impressum'), 'a slow host gets no further request');
  });

  test('a site answering every request just inside the deadlines stops once its requests have taken their budget', {
    timeout: 15_000,
  }, async () => {
    // Each hop of the redirect chain takes 250 ms, well under the 1000 ms headers deadline; the budget is 2 × (200 + 1000 + 300) ms.
    const brisk = new Crawler({ ...options, connectTimeoutMs: 200, headersTimeoutMs: 1000, bodyTimeoutMs: 300, maxRedirects: 30 });
    try {
      const result = await brisk.crawlSite(farm.url('www.slow-hops.de'));
      assert.equal(result.outcome, 'timeout');
      assert.match(result.reason!, /its budget of 3000 ms is spent/);
      assert.ok(farm.requestsTo('www.slow-hops.de').length <= 14, `${farm.requestsTo('www.slow-hops.de').length} requests`);
    } finally {
      brisk.close();
    }
  });

  test('names that do not resolve, hosts that do not listen and websites that are no URL end with their own outcomes', {
    timeout: 15_000,
  }, async () => {
    const unknown = await crawler.crawlSite(`http://www.does-not-exist.de:${farm.port}/`);
    assert.equal(unknown.outcome, 'dns_error');
    assert.match(unknown.reason!, /robots\.txt: www\.does-not-exist\.de does not exist$/);
    const closed = await crawler.crawlSite(`http://www.nobody-listens.de:${farm.port}/`);
    assert.equal(closed.outcome, 'unreachable');
    assert.match(closed.reason!, /ECONNREFUSED/);
    for (const website of ['', 'mailto:info@example.com', 'http://', 'ftp://files.example.com/']) {
      assert.equal((await crawler.crawlSite(website)).outcome, 'invalid_url', website);
    }
    // A website without a scheme, as OpenStreetMap often has them, is read as http.
    assert.equal((await crawler.crawlSite(`www.sushi-hanami.jp:${farm.port}`)).outcome, 'ok');
  });

  test('an aborted crawl rejects with the signal reason, and a closed crawler takes no more sites', { timeout: 15_000 }, async () => {
    const controller = new AbortController();
    const pending = crawler.crawlSite(farm.url('www.trickle-body.de'), undefined, controller.signal);
    setTimeout(() => controller.abort(new Error('shutting down')), 100);
    await assert.rejects(pending, /shutting down/);
    const closing = new Crawler(options);
    closing.close();
    await assert.rejects(closing.crawlSite(farm.url('www.sushi-hanami.jp')), /the crawler is closed/);
  });
});

// A throwaway self-signed certificate for www.secure-shop.de (valid until 2126), made for this test only.
const selfSignedKey = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg85XjRq3rB2jJSHPz
L2ssi6mQVEh4Jb2Ju7mouh+M6dGhRANCAAQ9zjul8bOBkAq/5f8A3HyeIEcu4Nbk
EB7faLd1IucdggR3eYAYYHZPKTZYLP3G3l8mVntzkabvKK2O+ARO5mmF
-----END PRIVATE KEY-----`;
const selfSignedCert = `-----BEGIN CERTIFICATE-----
MIIBsDCCAVagAwIBAgIULyenlQ4qjl40ByOxTMn8eIqUZrUwCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSd3d3LnNlY3VyZS1zaG9wLmRlMCAXDTI2MTEyNjE0NTk0N1oY
DzIxMjYxMTAyMTQ1OTQ3WjAdMRswGQYDVQQDDBJ3d3cuc2VjdXJlLXNob3AuZGUw
WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQ9zjul8bOBkAq/5f8A3HyeIEcu4Nbk
EB7faLd1IucdggR3eYAYYHZPKTZYLP3G3l8mVntzkabvKK2O+ARO5mmFo3IwcDAd
BgNVHQ4EFgQULU75DUjcERgoaqIHTUSGHom+QFAwHwYDVR0jBBgwFoAULU75DUjc
ERgoaqIHTUSGHom+QFAwDwYDVR0TAQH/BAUwAwEB/zAdBgNVHREEFjAUghJ3d3cu
c2VjdXJlLXNob3AuZGUwCgYIKoZIzj0EAwIDSAAwRQIhAOCKKeTTbEiMOI0vTcGZ
l3BznjG6bgpNeY1Ujw9pfqiUAiA3umuYnrTraYT/KkJFAO40Rt6xtdT62ZP0tKGl
9vbgJQ==
-----END CERTIFICATE-----`;

describe('Crawler over https', () => {
  test('connects to the pinned address with the site name for SNI, and a certificate that does not verify is unreachable', {
    timeout: 15_000,
  }, async () => {
    const servernames: string[] = [];
    const context = createSecureContext({ key: selfSignedKey, cert: selfSignedCert });
    const server = createHttpsServer(
      { key: selfSignedKey, cert: selfSignedCert, SNICallback: (name, cb) => (servernames.push(name), cb(null, context)) },
      (_req, res) => res.end('<html></html>'),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.2', r));
    const dns = await startDnsServer({ 'www.secure-shop.de': { A: ['127.0.0.2'] } });
    const crawler = new Crawler({
      userAgent,
      resolver: createResolver({ dnsServers: [dns.address], timeoutMs: 2000 }),
      allowPrivate: true,
      connectTimeoutMs: 2000,
      headersTimeoutMs: 2000,
      bodyTimeoutMs: 2000,
      maxPageBytes: 1 << 20,
      maxPagesPerSite: 3,
      maxRedirects: 5,
      perHostDelayMs: 0,
      concurrency: 2,
    });
    try {
      const result = await crawler.crawlSite(`https://www.secure-shop.de:${(server.address() as AddressInfo).port}/`);
      assert.equal(result.outcome, 'unreachable');
      assert.match(result.reason!, /DEPTH_ZERO_SELF_SIGNED_CERT/);
      assert.deepEqual(servernames, ['www.secure-shop.de']);
    } finally {
      crawler.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await dns.close();
    }
  });
});

describe('parseRetryAfter', () => {
  test('reads seconds and HTTP dates, never a negative wait, and nothing from text', () => {
    const now = Date.parse('2026-11-26T12:00:00Z');
    assert.equal(parseRetryAfter('120', now), 120);
    assert.equal(parseRetryAfter('Thu, 26 Nov 2026 12:10:00 GMT', now), 600);
    assert.equal(parseRetryAfter('Thu, 26 Nov 2026 11:00:00 GMT', now), 0);
    assert.equal(parseRetryAfter('soon', now), null);
    assert.equal(parseRetryAfter(undefined, now), null);
  });
});
