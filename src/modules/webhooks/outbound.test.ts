import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { OutboundRefused } from '../../infra/http/outbound-guard.ts';
import { postJson } from './outbound.ts';
import { signPayload } from './signature.ts';
import { retryDelayMs } from './webhooks.service.ts';

describe('postJson: the outbound guard against server-side request forgery', () => {
  let server: Server;
  let port = 0;
  const received: Array<{ url: string; headers: IncomingHttpHeaders; body: string }> = [];
  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ url: req.url ?? '', headers: req.headers, body });
        if (req.url === '/redirect') {
          res.statusCode = 302;
          res.setHeader('location', `http://127.0.0.1:${port}/elsewhere`);
        }
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  const strict = { allowPrivate: false, timeoutMs: 5000 };
  const open = { allowPrivate: true, timeoutMs: 5000 };

  test('refuses loopback by address and by name (the system resolver), sending nothing', async () => {
    const before = received.length;
    for (const url of [
      `http://127.0.0.1:${port}/hook`,
      `http://localhost:${port}/hook`,
      `http://[::1]:${port}/hook`,
      `http://[::ffff:127.0.0.1]:${port}/hook`,
    ]) {
      await assert.rejects(
        postJson(url, '{}', {}, strict),
        (e: unknown) => e instanceof OutboundRefused && /only public addresses/.test((e as Error).message),
        url,
      );
    }
    assert.equal(received.length, before, 'no request reached the receiver');
  });

  test('checks every address a name resolves to: one private among public ones is refused', async () => {
    const resolve = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.7', family: 4 },
    ];
    await assert.rejects(postJson('https://hooks.example.test/x', '{}', {}, { ...strict, resolve }), OutboundRefused);
  });

  test('connects to the address that was checked, not to a second resolution (DNS rebinding)', async () => {
    let lookups = 0;
    const resolve = async () => {
      lookups++;
      return [{ address: '127.0.0.1', family: 4 }];
    };
    // The name exists nowhere but in this resolver: reaching the receiver proves the connection used its answer.
    const status = await postJson(`http://rebind.example.test:${port}/pinned?q=1`, '{"a":1}', { 'x-test': 'yes' }, { ...open, resolve });
    assert.equal(status, 200);
    assert.equal(lookups, 1);
    const last = received.at(-1)!;
    assert.deepEqual(
      [last.url, last.headers.host, last.headers['x-test'], last.headers['content-type'], last.body],
      ['/pinned?q=1', `rebind.example.test:${port}`, 'yes', 'application/json', '{"a":1}'],
    );
  });

  test('does not follow redirects: a 3xx is the answer', async () => {
    const before = received.length;
    assert.equal(await postJson(`http://127.0.0.1:${port}/redirect`, '{}', {}, open), 302);
    assert.equal(received.length, before + 1);
    assert.equal(received.at(-1)!.url, '/redirect');
  });

  test('refuses other schemes and credentials in the URL; a closed port is a network error, not a refusal', async () => {
    await assert.rejects(postJson('ftp://example.com/x', '{}', {}, open), OutboundRefused);
    await assert.rejects(postJson('file:///etc/passwd', '{}', {}, open), OutboundRefused);
    await assert.rejects(postJson(`http://user:pw@127.0.0.1:${port}/`, '{}', {}, open), OutboundRefused);
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
    await assert.rejects(postJson(`http://127.0.0.1:${closedPort}/`, '{}', {}, open), (e: unknown) => !(e instanceof OutboundRefused));
  });
});

describe('signatures and retries', () => {
  test('the signature is the HMAC-SHA256 of "<t>.<body>" in the Stripe layout', () => {
    const body = '{"id":"whd_1"}';
    const expected = createHmac('sha256', 'whsec_k').update(`1700000000.${body}`).digest('hex');
    assert.equal(signPayload('whsec_k', body, 1_700_000_000), `t=1700000000,v1=${expected}`);
  });

  test('the wait doubles with each attempt, within ±20 %, and never passes a day', () => {
    assert.deepEqual(
      [1, 2, 3, 4].map((n) => retryDelayMs(1000, n, 0.5)),
      [1000, 2000, 4000, 8000],
    );
    assert.equal(retryDelayMs(1000, 1, 0), 800);
    assert.equal(retryDelayMs(1000, 1, 1), 1200);
    assert.equal(retryDelayMs(3_600_000, 20, 0.5), 86_400_000);
  });
});
