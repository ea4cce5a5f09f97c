import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';

/** Which client address a request is counted under (per-IP limits, logs), with and without TRUST_PROXY. */
async function clientAddress(trustProxy: string | undefined, remoteAddress: string): Promise<string> {
  const t = await buildTestApp({ env: trustProxy ? { TRUST_PROXY: trustProxy } : {} });
  try {
    t.app.get('/_probe/ip', async (request) => ({ ip: request.ip }));
    const res = await t.app.inject({ url: '/_probe/ip', remoteAddress, headers: { 'x-forwarded-for': '203.0.113.9' } });
    return (res.json() as { ip: string }).ip;
  } finally {
    await t.close();
  }
}

test('without TRUST_PROXY a client cannot choose its address with X-Forwarded-For', async () => {
  assert.equal(await clientAddress(undefined, '198.51.100.7'), '198.51.100.7');
});

test('behind a proxy listed in TRUST_PROXY the client address is the one the proxy forwards, and only from that proxy', async () => {
  assert.equal(await clientAddress('10.0.0.0/8', '10.1.2.3'), '203.0.113.9');
  assert.equal(await clientAddress('10.0.0.0/8', '198.51.100.7'), '198.51.100.7');
});
