import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkAddresses, isPublicAddress, OutboundRefused, parseOutboundUrl } from './outbound-guard.ts';

describe('isPublicAddress (ipaddr.js ranges)', () => {
  test('refuses every non-public range, IPv4 and IPv6, and the IPv6 forms carrying an IPv4 address', () => {
    const refused = {
      '127.0.0.1': 'loopback',
      '10.1.2.3': 'private',
      '172.16.0.1': 'private',
      '192.168.1.1': 'private',
      '169.254.169.254': 'linkLocal',
      '100.64.0.1': 'carrierGradeNat',
      '0.0.0.0': 'unspecified',
      '255.255.255.255': 'broadcast',
      '224.0.0.1': 'multicast',
      '192.0.2.1': 'reserved',
      '::1': 'loopback',
      '::': 'unspecified',
      'fe80::1': 'linkLocal',
      'fd00::1': 'uniqueLocal',
      'ff02::1': 'multicast',
      '64:ff9b::a00:1': 'rfc6052',
      '2002:7f00:1::': '6to4',
      '2001:db8::1': 'reserved',
    };
    for (const [address, range] of Object.entries(refused)) assert.deepEqual(isPublicAddress(address), { public: false, range }, address);
    // An IPv4-mapped IPv6 address is judged as the IPv4 address it carries.
    assert.deepEqual(isPublicAddress('::ffff:127.0.0.1'), { public: false, range: 'loopback' });
    assert.deepEqual(isPublicAddress('::ffff:8.8.8.8'), { public: true, range: 'unicast' });
    for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) assert.equal(isPublicAddress(address).public, true, address);
    assert.equal(isPublicAddress('not an address').public, false);
  });
});

describe('checkAddresses and parseOutboundUrl', () => {
  test('refuses a host when any of its addresses is not public, unless private networks are allowed', () => {
    assert.throws(
      () => checkAddresses('shop.example', [{ address: '93.184.216.34' }, { address: '169.254.169.254' }], false),
      (e: unknown) => e instanceof OutboundRefused && /169\.254\.169\.254, a linkLocal address/.test((e as Error).message),
    );
    assert.doesNotThrow(() => checkAddresses('shop.example', [{ address: '93.184.216.34' }], false));
    assert.doesNotThrow(() => checkAddresses('shop.example', [{ address: '127.0.0.1' }], true));
  });

  test('accepts http and https URLs only, without credentials', () => {
    assert.equal(parseOutboundUrl('https://shop.example/kontakt').hostname, 'shop.example');
    for (const url of ['ftp://shop.example/', 'file:///etc/passwd', 'javascript:alert(1)', 'http://u:p@shop.example/', 'not a url']) {
      assert.throws(() => parseOutboundUrl(url), OutboundRefused, url);
    }
  });
});
