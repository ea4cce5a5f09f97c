import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startDnsServer } from '../../../test/helpers/dns-server.ts';
import { createResolver, DnsError, type Resolver } from './resolver.ts';

describe('createResolver against a real DNS server on loopback', () => {
  let server: Awaited<ReturnType<typeof startDnsServer>>;
  let resolver: Resolver;
  before(async () => {
    server = await startDnsServer({
      'www.bakery-example.de': { A: ['127.0.0.2'], AAAA: ['::1'] },
      'bakery-example.de': {
        A: ['127.0.0.3'],
        MX: [
          { exchange: 'mx2.mail-example.de', priority: 20 },
          { exchange: 'mx1.mail-example.de', priority: 10 },
        ],
      },
      'only-v6.example.fr': { AAAA: ['2001:db8::5'] },
    });
    resolver = createResolver({ dnsServers: [server.address], timeoutMs: 2000 });
  });
  after(() => server.close());

  test('answers the A and AAAA addresses a name has, with their families', async () => {
    assert.deepEqual(await resolver.lookup('www.bakery-example.de'), [
      { address: '127.0.0.2', family: 4 },
      { address: '::1', family: 6 },
    ]);
    assert.deepEqual(await resolver.lookup('ONLY-V6.example.fr'), [{ address: '2001:db8::5', family: 6 }]);
  });

  test('answers an IP literal without asking the server', async () => {
    assert.deepEqual(await resolver.lookup('203.0.113.9'), [{ address: '203.0.113.9', family: 4 }]);
    assert.deepEqual(await resolver.lookup('[2001:db8::1]'), [{ address: '2001:db8::1', family: 6 }]);
  });

  test('answers the MX records of a domain with their priorities', async () => {
    const mx = await resolver.resolveMx('bakery-example.de');
    assert.deepEqual(
      mx.sort((a, b) => a.priority - b.priority),
      [
        { exchange: 'mx1.mail-example.de', priority: 10 },
        { exchange: 'mx2.mail-example.de', priority: 20 },
      ],
    );
  });

  test('rejects a name the server does not know with ENOTFOUND, and a name without MX with ENODATA', async () => {
    await assert.rejects(
      resolver.lookup('nowhere.example.org'),
      (e: unknown) => e instanceof DnsError && e.code === 'ENOTFOUND' && /does not exist/.test(e.message),
    );
    await assert.rejects(resolver.resolveMx('www.bakery-example.de'), (e: unknown) => e instanceof DnsError && e.code === 'ENODATA');
  });

  test('asks again when a question is lost, as UDP loses them under load', async () => {
    const { createSocket } = await import('node:dgram');
    const [upstreamHost, upstreamPort] = server.address.split(':');
    // A relay in front of the real server that drops the first question it gets.
    const relay = createSocket('udp4');
    const upstream = createSocket('udp4');
    let questions = 0;
    const clients = new Map<number, { address: string; port: number }>();
    relay.on('message', (message, remote) => {
      if (questions++ === 0) return;
      clients.set(message.readUInt16BE(0), remote);
      upstream.send(message, Number(upstreamPort), upstreamHost);
    });
    upstream.on('message', (message) => {
      const client = clients.get(message.readUInt16BE(0));
      if (client) relay.send(message, client.port, client.address);
    });
    await new Promise<void>((r) => relay.bind(0, '127.0.0.1', r));
    try {
      const lossy = createResolver({ dnsServers: [`127.0.0.1:${relay.address().port}`], timeoutMs: 1400 });
      assert.deepEqual(await lossy.resolveMx('bakery-example.de').then((mx) => mx.length), 2);
      assert.ok(questions >= 2, `the relay saw ${questions} questions`);
    } finally {
      relay.close();
      upstream.close();
    }
  });

  test('gives up on a server that never answers within its timeout', async () => {
    const { createSocket } = await import('node:dgram');
    const silent = createSocket('udp4');
    await new Promise<void>((r) => silent.bind(0, '127.0.0.1', r));
    try {
      const mute = createResolver({ dnsServers: [`127.0.0.1:${silent.address().port}`], timeoutMs: 300 });
      await assert.rejects(mute.lookup('www.bakery-example.de'), (e: unknown) => e instanceof DnsError && e.code === 'ETIMEOUT');
    } finally {
      silent.close();
    }
  });
});
