import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { after, before, describe, test } from 'node:test';
import { startDnsServer } from '../../../test/helpers/dns-server.ts';
import { EmailDomainChecker } from './email-check.ts';

const zone = {
  'baeckerei-huber.de': { MX: [{ exchange: 'mx1.baeckerei-huber.de', priority: 10 }], A: ['203.0.113.10'] },
  'kleine-werkstatt.at': { A: ['203.0.113.20'] },
  'nur-ipv6.ch': { AAAA: ['2001:db8::1'] },
  'ohne-post.fr': { MX: [{ exchange: '.', priority: 0 }], A: ['203.0.113.30'] },
  'leer.it': {},
  'xn--mller-bau-q9a.de': { MX: [{ exchange: 'mx.xn--mller-bau-q9a.de', priority: 10 }] },
};

describe('email domain checks', () => {
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  let silent: Socket;
  let silentAddress: string;

  before(async () => {
    dns = await startDnsServer(zone);
    // A server that never answers: the check must end on its timeout.
    silent = createSocket('udp4');
    await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
    silentAddress = `127.0.0.1:${silent.address().port}`;
  });
  after(async () => {
    await dns.close();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  const checker = (options: ConstructorParameters<typeof EmailDomainChecker>[0] = {}) =>
    new EmailDomainChecker({ dnsServers: [dns.address], timeoutMs: 1_000, ...options });

  test('calls a domain with MX records deliverable', async () => {
    assert.equal(await checker().check('info@baeckerei-huber.de'), 'deliverable_domain');
    assert.equal(await checker().check('Info@BAECKEREI-HUBER.de'), 'deliverable_domain');
  });

  test('asks for an internationalised domain in its punycode form', async () => {
    assert.equal(await checker().check('kontakt@müller-bau.de'), 'deliverable_domain');
  });

  test('falls back to the A or AAAA record of a domain without MX records', async () => {
    assert.equal(await checker().check('office@kleine-werkstatt.at'), 'deliverable_domain');
    assert.equal(await checker().check('office@nur-ipv6.ch'), 'deliverable_domain');
  });

  test('calls a domain that does not exist, has no records or publishes a null MX undeliverable', async () => {
    assert.equal(await checker().check('info@gibt-es-nicht.de'), 'no_mx');
    assert.equal(await checker().check('info@leer.it'), 'no_mx');
    assert.equal(await checker().check('info@ohne-post.fr'), 'no_mx');
  });

  test('answers bad syntax without asking DNS', async () => {
    const offline = new EmailDomainChecker({ dnsServers: [silentAddress], timeoutMs: 200 });
    for (const address of ['not an address', 'a@b', 'two@@baeckerei-huber.de', 'info@baeckerei-huber.notatld', '.dot@baeckerei-huber.de']) {
      assert.equal(await offline.check(address), 'no_mx', address);
    }
    assert.equal(offline.size, 0);
  });

  test('says unknown when the DNS server does not answer in time, and does not remember it', async () => {
    const offline = new EmailDomainChecker({ dnsServers: [silentAddress], timeoutMs: 200 });
    assert.equal(await offline.check('info@baeckerei-huber.de'), 'unknown');
    assert.equal(offline.size, 0);
  });

  test('remembers verdicts per domain, evicting the least recently used beyond its size and expiring them', async () => {
    let clock = 0;
    const server = await startDnsServer(zone);
    const cached = new EmailDomainChecker({
      dnsServers: [server.address],
      timeoutMs: 300,
      cacheEntries: 2,
      cacheTtlMs: 1_000,
      now: () => clock,
    });
    assert.equal(await cached.check('a@baeckerei-huber.de'), 'deliverable_domain');
    assert.equal(await cached.check('b@kleine-werkstatt.at'), 'deliverable_domain');
    assert.equal(await cached.check('c@baeckerei-huber.de'), 'deliverable_domain');
    assert.equal(await cached.check('d@leer.it'), 'no_mx');
    assert.equal(cached.size, 2);
    await server.close();
    // DNS is gone: what is remembered still answers, what was evicted (kleine-werkstatt.at, least recently used) cannot.
    assert.equal(await cached.check('e@baeckerei-huber.de'), 'deliverable_domain');
    assert.equal(await cached.check('f@leer.it'), 'no_mx');
    assert.equal(await cached.check('g@kleine-werkstatt.at'), 'unknown');
    clock = 1_001;
    assert.equal(await cached.check('h@baeckerei-huber.de'), 'unknown');
  });
});
