import assert from 'node:assert/strict';
import { type AddressInfo, connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { createAccountWithToken, type TestAccount } from '../../test/helpers/accounts.ts';
import { copyTestSqlite, type TestDatabase } from '../../test/helpers/databases.ts';
import { type App, buildApp } from '../app.ts';
import { loadConfig } from '../config.ts';
import { maxUrlLength } from './errors.ts';

let t: TestDatabase;
let app: App;
let user: TestAccount;
let origin: { host: string; port: number };

before(async () => {
  t = await copyTestSqlite('migrated');
  app = await buildApp({
    config: loadConfig({ DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent', IMPORT_DEMO_DATA: 'false', DB_READ_WORKERS: '0' }),
    db: t.db,
  });
  // A route added by any module, with a plain number in its query: the finite rule applies without opting in.
  app.get(
    '/api/v1/_probe/numbers',
    { schema: { querystring: Type.Object({ n: Type.Optional(Type.Number({ minimum: 0, maximum: 10 })) }) } },
    async (request) => request.query,
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  origin = { host: '127.0.0.1', port: (app.server.address() as AddressInfo).port };
  user = await createAccountWithToken(t.db);
});

after(async () => {
  await app.close();
  await t.dispose();
});

/** Sends bytes as they are over a real socket (no client library to fix them up) and returns the raw answer. */
function rawRequest(text: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(origin.port, origin.host, () => socket.end(text));
    let out = '';
    socket.on('data', (d: Buffer) => (out += d.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', ...rest] = out.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
  });
}

function assertProblem(res: { statusCode?: number; status?: number; headers: Record<string, unknown> }, status: number): void {
  assert.equal(res.statusCode ?? res.status, status);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.match(String(res.headers['content-security-policy']), /default-src 'none'/);
}

describe('numbers in requests', () => {
  const get = (url: string) => app.inject({ url, headers: { authorization: user.authorization } });

  for (const value of ['Infinity', '-Infinity', '1e400', '-1e400']) {
    test(`per_page=${value} answers 400 naming the field and its range on the leads route and /v1/search`, async () => {
      for (const url of [`/api/v1/user-api/places?per_page=${value}`, `/v1/search?query=cafe&per_page=${value}`]) {
        const res = await get(url);
        assertProblem(res, 400);
        const body = res.json();
        assert.equal(body.errors[0].field, 'querystring.per_page', url);
        assert.deepEqual(body.errors[0].allowed, { minimum: 1, maximum: 100 });
        assert.match(body.errors[0].message, /finite number between 1 and 100/);
      }
    });
  }

  test('page=Infinity on the leads route answers 400, not 500', async () => {
    const res = await get('/api/v1/user-api/places?page=Infinity');
    assertProblem(res, 400);
    assert.equal(res.json().errors[0].field, 'querystring.page');
  });

  test('min_rating=Infinity and radius=Infinity are refused instead of dropping the filter', async () => {
    for (const url of [
      '/api/v1/user-api/places?min_rating=Infinity',
      '/api/v2/map/search?query=cafe&min_rating=Infinity',
      '/api/v2/map/search?near=43.7,7.4&radius=Infinity',
    ]) {
      const res = await get(url);
      assertProblem(res, 400);
      assert.match(res.json().errors[0].field, /^querystring\.(min_rating|radius)$/, url);
    }
  });

  test('bbox=,,, is refused instead of being read as a box at 0,0', async () => {
    const res = await get('/api/v2/map/search?bbox=,,,');
    assertProblem(res, 400);
    assert.equal(res.json().errors[0].field, 'querystring.bbox');
  });

  test('a JSON body with 1e400 answers 400 with the range', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/search',
      headers: { authorization: user.authorization, 'content-type': 'application/json' },
      payload: '{"query":"cafe","per_page":1e400}',
    });
    assertProblem(res, 400);
    assert.equal(res.json().errors[0].field, 'body.per_page');
  });

  test('applies to a route that declares a plain number, and leaves finite values alone', async () => {
    assertProblem(await app.inject('/api/v1/_probe/numbers?n=Infinity'), 400);
    const ok = await app.inject('/api/v1/_probe/numbers?n=2.5');
    assert.deepEqual(ok.json(), { n: 2.5 });
  });
});

describe('errors of the HTTP layer are problem documents with the security headers', () => {
  test('a URL that does not percent-decode answers 400', async () => {
    const res = await rawRequest('GET /api/%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assertProblem(res, 400);
    const body = JSON.parse(res.body);
    assert.equal(body.errors[0].field, 'url');
    assert.match(body.request_id, /^req_/);
  });

  test('headers over the server limit answer 431', async () => {
    const res = await rawRequest(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\nConnection: close\r\n\r\n`);
    assertProblem(res, 431);
    assert.equal(JSON.parse(res.body).code, 'header_fields_too_large');
  });

  test('a request line that is not HTTP answers 400', async () => {
    const res = await rawRequest('HELLO\r\n\r\n');
    assertProblem(res, 400);
    assert.equal(JSON.parse(res.body).status, 400);
  });

  test(`a URL longer than ${maxUrlLength} characters answers 414`, async () => {
    const res = await rawRequest(`GET /v1/search?query=${'a'.repeat(maxUrlLength)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    assertProblem(res, 414);
    assert.equal(JSON.parse(res.body).code, 'uri_too_long');
  });

  test('a 414 on a route with a scope is charged to the address and carries the RateLimit fields', async () => {
    // Refused before authentication: the token is not looked at, the client's address pays.
    const res = await app.inject({
      url: `/api/v2/map/search?type=${'x'.repeat(maxUrlLength)}`,
      headers: { authorization: user.authorization },
    });
    assertProblem(res, 414);
    assert.ok(res.headers.ratelimit && res.headers['ratelimit-policy'], JSON.stringify(res.headers));
    assert.match(String(res.headers['ratelimit-policy']), /ip/);
  });

  test('a JSON body over the body limit answers 413', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/search',
      headers: { authorization: user.authorization, 'content-type': 'application/json' },
      payload: `{"query":"${'a'.repeat(1_100_000)}"}`,
    });
    assertProblem(res, 413);
    assert.equal(res.json().code, 'payload_too_large');
  });

  test('an unsupported media type answers 415', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/search',
      headers: { authorization: user.authorization, 'content-type': 'text/csv' },
      payload: 'query,city',
    });
    assertProblem(res, 415);
  });
});

describe('security headers', () => {
  test('every kind of answer carries them: docs, document, health, 404, 401 and the API', async () => {
    for (const [url, status] of [
      ['/docs', 200],
      ['/openapi.json', 200],
      ['/healthz', 200],
      ['/nope', 404],
      ['/api/v2/countries', 401],
    ] as const) {
      const res = await app.inject(url);
      assert.equal(res.statusCode, status, url);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', url);
      assert.match(String(res.headers['content-security-policy']), /default-src 'none'.*frame-ancestors 'none'/, url);
      assert.equal(res.headers['referrer-policy'], 'no-referrer', url);
      assert.ok(res.headers['cache-control'], url);
    }
  });

  test('/docs allows its own inline style sheet by hash and nothing else', async () => {
    const res = await app.inject('/docs');
    const csp = String(res.headers['content-security-policy']);
    assert.match(csp, /style-src 'sha256-[A-Za-z0-9+/=]+'/);
    assert.doesNotMatch(csp, /unsafe-inline|script-src/);
  });

  test('HSTS is sent behind an https PUBLIC_URL only', async () => {
    const https = await buildApp({
      config: loadConfig({
        DATABASE_URL: 'sqlite::memory:',
        LOG_LEVEL: 'silent',
        PUBLIC_URL: 'https://leads.example.com',
        DB_READ_WORKERS: '0',
      }),
      db: t.db,
    });
    try {
      assert.match(String((await https.inject('/healthz')).headers['strict-transport-security']), /max-age=31536000/);
      assert.equal((await app.inject('/healthz')).headers['strict-transport-security'], undefined);
    } finally {
      await https.close();
    }
  });
});
