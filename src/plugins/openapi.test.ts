import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type App, buildApp } from '../app.ts';
import { loadConfig } from '../config.ts';
import { type Db, openDatabase } from '../infra/db/database.ts';
import { migrateToLatest } from '../infra/db/migrate.ts';
import type { OpenApiDocument } from './openapi.docs.ts';

let db: Db;
let app: App;
let doc: OpenApiDocument;

before(async () => {
  db = openDatabase('sqlite::memory:');
  await migrateToLatest(db);
  app = await buildApp({ config: loadConfig({ DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent', IMPORT_DEMO_DATA: 'false' }), db });
  const res = await app.inject('/openapi.json');
  assert.equal(res.statusCode, 200);
  doc = res.json() as OpenApiDocument;
});

after(async () => {
  await app.close();
  await db.close();
});

describe('/openapi.json', () => {
  test('is an OpenAPI 3.1 document of the public API routes, without the dashboard pages', () => {
    assert.equal(doc.openapi, '3.1.0');
    const paths = Object.keys(doc.paths ?? {});
    for (const p of ['/api/v2/map/search', '/v1/search', '/api/v2/categories', '/api/v2/countries', '/api/v2/autocomplete'])
      assert.ok(paths.includes(p), p);
    assert.ok(
      paths.every((p) => /^\/(api|v1)\//.test(p) || p === '/healthz' || p === '/readyz'),
      paths.join(' '),
    );
    assert.ok(paths.includes('/readyz'), 'the readiness check load balancers call');
    assert.deepEqual(Object.keys(doc.paths!['/v1/search']!).sort(), ['get', 'post']);
  });

  test('describes the parameters of each route with their limits', () => {
    const params = doc.paths!['/api/v2/map/search']!.get!.parameters!;
    const perPage = params.find((p) => p.name === 'per_page')!;
    assert.equal(perPage.schema?.minimum, 1);
    assert.equal(perPage.schema?.maximum, 100);
    assert.equal(perPage.schema?.default, 20);
    assert.deepEqual(params.find((p) => p.name === 'sort')!.schema?.enum, [
      'relevance',
      'rating',
      'review_count',
      'distance',
      'name',
      'lead_score',
    ]);
  });

  test('describes every error a protected route can answer as a problem document, with the bearer scheme', () => {
    for (const [path, item] of Object.entries(doc.paths ?? {})) {
      // The health checks need no token; an export or match job's download link is its own credential (signed, expiring).
      if (
        path === '/healthz' ||
        path === '/readyz' ||
        path === '/api/v2/exports/{id}/download' ||
        path === '/api/v2/match/jobs/{id}/download'
      )
        continue;
      for (const [method, op] of Object.entries(item)) {
        const statuses = Object.keys(op.responses ?? {});
        const validated = (op.parameters?.length ?? 0) > 0 || op.requestBody !== undefined;
        for (const s of [...(validated ? ['400'] : []), '401', '403', '500'])
          assert.ok(statuses.includes(s), `${method} ${path} lacks ${s}`);
        assert.deepEqual(op.security, [{ bearerAuth: [] }], `${method} ${path}`);
        for (const [status, response] of Object.entries(op.responses ?? {})) {
          if (Number(status) < 400) continue;
          const media = response.content?.['application/problem+json'];
          assert.equal(media?.schema?.$ref, '#/components/schemas/Problem', `${method} ${path} ${status}`);
        }
      }
    }
    assert.ok(doc.components?.schemas?.Problem?.properties?.request_id);
  });

  test('announces the RateLimit fields on every answer and a 429 with Retry-After on every operation', () => {
    const headers = doc.components?.headers ?? {};
    for (const name of ['RateLimit-Policy', 'RateLimit', 'Retry-After']) assert.ok(headers[name]?.description, name);
    for (const [path, item] of Object.entries(doc.paths ?? {})) {
      for (const [method, op] of Object.entries(item)) {
        assert.ok(op.responses?.['429'], `${method} ${path} lacks 429`);
        for (const [status, response] of Object.entries(op.responses ?? {})) {
          const names = Object.keys(response.headers ?? {});
          assert.ok(names.includes('RateLimit') && names.includes('RateLimit-Policy'), `${method} ${path} ${status}`);
          assert.equal(names.includes('Retry-After'), status === '429', `${method} ${path} ${status}`);
        }
      }
    }
    assert.ok(doc.paths?.['/api/v1/user-api/usage']?.get, 'the usage route is documented');
  });

  test('announces 507 (the disk is full) on every operation that writes, and on the search that saves itself', () => {
    const writes = Object.entries(doc.paths ?? {}).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => method !== 'get' && method !== 'head')
        .map(([method, op]) => [`${method} ${path}`, op] as const),
    );
    assert.ok(writes.length > 10, `${writes.length} writing operations`);
    for (const [name, op] of writes) assert.ok(op.responses?.['507'], `${name} lacks 507`);
    assert.ok(doc.paths!['/api/v2/map/search']!.get!.responses?.['507'], 'GET /api/v2/map/search saves the search');
    assert.equal(doc.paths!['/api/v2/countries']!.get!.responses?.['507'], undefined, 'a read never writes');
  });
});

describe('/docs', () => {
  test('renders a self-contained reference page from the document', async () => {
    const res = await app.inject('/docs');
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    for (const p of Object.keys(doc.paths ?? {})) assert.ok(res.body.includes(`<code>${p}</code>`), p);
    assert.match(res.body, /per_page/);
    assert.match(res.body, /Example: <code>restaurant<\/code>, <code>Tierarzt<\/code>/);
    assert.doesNotMatch(res.body, /<script|https?:\/\/(cdn|unpkg|fonts)/);
  });
});
