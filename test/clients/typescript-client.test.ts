import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { items, LeadAtlas, LeadAtlasProblem, retryAfterSeconds, type LeadAtlasOptions } from '../../clients/typescript/src/index.ts';
import { committedClient, generateClient, generatedFiles, staleFiles } from '../../scripts/client-generate.ts';
import { createAccountWithToken, type TestAccount } from '../helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';

const extract = new URL('../../../shared/data/osm/monaco-2026.osm.pbf', import.meta.url).pathname;
const committedDocument = JSON.parse(readFileSync(new URL('../../clients/typescript/openapi.json', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, unknown>>;
};
/** Every operation of the committed document, as `GET /api/v1/places/{id}`. */
const operations = Object.entries(committedDocument.paths).flatMap(([path, methods]) =>
  Object.keys(methods)
    .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
    .map((m) => `${m.toUpperCase()} ${path}`),
);
const monaco = {
  type: 'Polygon' as const,
  coordinates: [
    [
      [7.405, 43.725],
      [7.44, 43.725],
      [7.44, 43.752],
      [7.405, 43.752],
      [7.405, 43.725],
    ],
  ],
};

describe('the committed TypeScript client', () => {
  test("is the one the server's OpenAPI document generates (else: run npm run client:generate)", async () => {
    const [generated, committed] = await Promise.all([generateClient(), committedClient()]);
    assert.deepEqual(staleFiles(generated, committed), []);
  });

  test('is reported out of date, naming the file and the command, when the document has changed', async () => {
    const committed = await committedClient();
    const changed = { ...committed, 'src/schema.ts': committed['src/schema.ts'].replace('per_page', 'page_size') };
    assert.deepEqual(staleFiles(changed, committed), [
      "clients/typescript/src/schema.ts is out of date with the server's /openapi.json: run npm run client:generate",
    ]);
    assert.ok(
      generatedFiles.every((f) => committed[f].length > 0),
      'every generated file is committed',
    );
  });
});

describe('the TypeScript client against a live server', () => {
  let t: TestApp;
  let baseUrl: string;
  let user: TestAccount;
  /** The operations the client has called, matched to the document's paths. */
  const called = new Set<string>();
  const templates = Object.keys(committedDocument.paths).map((path) => ({
    path,
    pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));
  const recordingFetch: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const pathname = new URL(request.url).pathname;
    const template = templates.find((x) => x.pattern.test(pathname));
    if (template) called.add(`${request.method} ${template.path}`);
    return fetch(request);
  };
  const client = (options: Partial<LeadAtlasOptions> = {}) =>
    new LeadAtlas({ baseUrl, token: user.token, fetch: recordingFetch, ...options });

  before(async () => {
    t = await buildTestApp({ files: [extract], env: { DB_READ_WORKERS: '1' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    assert.ok(address && typeof address === 'object');
    baseUrl = `http://127.0.0.1:${address.port}`;
    user = await createAccountWithToken(t.db);
  });

  after(async () => {
    await t.close();
  });

  test('searches and pages through every result with the async iterator, GET and drawn area alike', async () => {
    const la = client();
    const pages = [];
    for await (const page of la.searchPages({ type: 'restaurant', country: 'MC', per_page: 40, fields: 'id,name' })) pages.push(page);
    assert.ok(pages.length > 1, `${pages.length} pages`);
    const ids = pages.flatMap((p) => p.data.map((place) => place.id));
    assert.equal(ids.length, pages[0]!.total);
    assert.equal(new Set(ids).size, ids.length);
    let inArea = 0;
    for await (const _place of items(la.searchAreaPages({ polygon: monaco, type: 'restaurant', per_page: 50 }))) inArea++;
    assert.ok(inArea > 50, `${inArea} in the area`);
    const byName = await la.api.GET('/v1/search', { params: { query: { query: 'pharmacie', per_page: 5 } } });
    assert.ok(byName.data!.total > 0);
    const posted = await la.api.POST('/v1/search', { body: { query: 'pharmacie', per_page: 5 } });
    assert.equal(posted.data!.total, byName.data!.total);
  });

  test('exports a search (synchronously and as a job), downloads the file, and lists the leads it made page by page', async () => {
    const la = client();
    const search = await la.search({ type: 'pharmacy', country: 'MC' });
    const csv = await la.api.GET('/api/v2/map/export', {
      params: { query: { search_id: search.search_id, format: 'csv' } },
      parseAs: 'text',
    });
    assert.equal(csv.data!.trim().split('\r\n').length, search.total + 1);
    const job = await la.startExport({ search_id: search.search_id, format: 'ndjson' });
    const done = await la.waitForExport(job.id, { intervalMs: 100, timeoutMs: 20_000 });
    const link = new URL(done.download!.url);
    const file = await la.api.GET('/api/v2/exports/{id}/download', {
      params: {
        path: { id: job.id },
        query: { expires: Number(link.searchParams.get('expires')), signature: link.searchParams.get('signature')! },
      },
      parseAs: 'text',
    });
    assert.equal(file.data!.trim().split('\n').length, search.total);
    const jobs = await la.api.GET('/api/v2/exports', { params: { query: { per_page: 5 } } });
    assert.equal(jobs.data!.data[0]!.id, job.id);
    const leads = [];
    for await (const lead of items(la.leadPages({ per_page: 2 }))) leads.push(lead);
    assert.equal(leads.length, search.total);
    const categories = await la.api.GET('/api/v1/user-api/categories');
    assert.ok(categories.data!.data.some((c) => c.slug === 'pharmacy'));
  });

  test('calls the place, reference, suppression, enrichment, usage and health operations', async () => {
    const la = client();
    const search = await la.search({ type: 'pharmacy', country: 'MC', per_page: 1 });
    const place = await la.api.GET('/api/v1/places/{id}', { params: { path: { id: search.data[0]!.id! } } });
    assert.equal(place.data!.id, search.data[0]!.id);
    assert.ok((await la.api.GET('/api/v2/categories', { params: { query: { parent: 'shop' } } })).data!.total > 0);
    assert.ok((await la.api.GET('/api/v2/countries')).data!.data.some((c) => c.code === 'MC'));
    const added = await la.api.POST('/api/v1/user-api/suppressions', { body: { entries: ['example.com', 'sales@example.org'] } });
    assert.equal(added.data!.added, 2);
    const list = await la.api.GET('/api/v1/user-api/suppressions', { params: { query: { per_page: 10 } } });
    assert.equal(list.data!.data.length, 2);
    await la.api.DELETE('/api/v1/user-api/suppressions/{id}', { params: { path: { id: list.data!.data[0]!.id } } });
    const cleared = await la.api.DELETE('/api/v1/user-api/suppressions', { params: { query: { confirm: 'true' } } });
    assert.equal(cleared.data!.deleted, 1);
    const enrichment = await la.api.POST('/api/v2/enrichments', { body: { search_id: search.search_id } });
    assert.equal(
      (await la.api.GET('/api/v2/enrichments/{id}', { params: { path: { id: enrichment.data!.id } } })).data!.id,
      enrichment.data!.id,
    );
    assert.equal((await la.api.GET('/api/v2/enrichments')).data!.data[0]!.id, enrichment.data!.id);
    assert.ok((await la.api.GET('/api/v1/user-api/usage')).data);
    assert.equal((await la.api.GET('/healthz')).response.status, 200);
    assert.equal((await la.api.GET('/readyz')).response.status, 200);
  });

  test('throws error answers as a typed LeadAtlasProblem', async () => {
    const la = client();
    const unknown = await la.api.GET('/api/v1/places/{id}', { params: { path: { id: 'plc_aaaaaaaaaaaaaaaa' } } }).catch((e: unknown) => e);
    assert.ok(unknown instanceof LeadAtlasProblem);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.problem.type, 'https://leadatlas.dev/problems/not_found');
    const invalid = await la.search({ type: 'restaurant', per_page: 1000 }).catch((e: unknown) => e);
    assert.ok(invalid instanceof LeadAtlasProblem && invalid.code === 'validation_failed');
    assert.ok(invalid.problem.errors?.some((e) => e.field.includes('per_page')));
    const reader = await createAccountWithToken(t.db, { scopes: ['places:read'] });
    const forbidden = await new LeadAtlas({ baseUrl, token: reader.token }).search({ type: 'restaurant' }).catch((e: unknown) => e);
    assert.ok(forbidden instanceof LeadAtlasProblem && forbidden.code === 'forbidden', String(forbidden));
  });

  test('has called every operation of the document', () => {
    assert.deepEqual(
      operations.filter((op) => !called.has(op)),
      [],
      'operations of clients/typescript/openapi.json that no test of this file calls',
    );
  });
});

describe('the TypeScript client retries', () => {
  /** A fetch answering each request with the next of `answers`, recording when it was asked. */
  const scripted = (answers: (() => Response)[]) => {
    const times: number[] = [];
    const fetcher: typeof fetch = async () => {
      times.push(Date.now());
      return answers[Math.min(times.length - 1, answers.length - 1)]!();
    };
    return { fetcher, times };
  };
  const problem = (status: number, retryAfter?: string) => () =>
    new Response(
      JSON.stringify({ type: 'https://leadatlas.dev/problems/x', title: 'Busy', status, detail: 'busy', code: 'rate_limited' }),
      {
        status,
        headers: { 'content-type': 'application/problem+json', ...(retryAfter === undefined ? {} : { 'retry-after': retryAfter }) },
      },
    );
  const success = () =>
    new Response(JSON.stringify({ data: [], lang: 'en', total: 0 }), { headers: { 'content-type': 'application/json' } });

  test('a 429 and a 503, waiting what Retry-After says, then answers', async () => {
    const { fetcher, times } = scripted([problem(429, '1'), problem(503, '0'), success]);
    const la = new LeadAtlas({ baseUrl: 'http://leadatlas.test', token: 'la_pat_x', fetch: fetcher });
    const answer = await la.api.GET('/api/v2/countries');
    assert.equal(answer.response.status, 200);
    assert.equal(times.length, 3);
    assert.ok(times[1]! - times[0]! >= 950, `waited ${times[1]! - times[0]!} ms for Retry-After: 1`);
  });

  test('at most `retries` times, then throws the last problem with its Retry-After', async () => {
    const { fetcher, times } = scripted([problem(503, '0')]);
    const la = new LeadAtlas({ baseUrl: 'http://leadatlas.test', token: 'la_pat_x', fetch: fetcher, retries: 2 });
    const error = await la.api.GET('/api/v2/countries').catch((e: unknown) => e);
    assert.ok(error instanceof LeadAtlasProblem && error.status === 503 && error.retryAfter === 0);
    assert.equal(times.length, 3);
  });

  test('not when Retry-After is beyond the longest wait (a daily quota), nor on other errors', async () => {
    for (const answer of [problem(429, '3600'), problem(400)]) {
      const { fetcher, times } = scripted([answer, success]);
      const la = new LeadAtlas({ baseUrl: 'http://leadatlas.test', token: 'la_pat_x', fetch: fetcher, maxRetryDelayMs: 5000 });
      const error = await la.api.GET('/api/v2/countries').catch((e: unknown) => e);
      assert.ok(error instanceof LeadAtlasProblem);
      assert.equal(times.length, 1);
    }
  });

  test('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-27T03:00:00Z');
    assert.equal(retryAfterSeconds('120', now), 120);
    assert.equal(retryAfterSeconds('Fri, 27 Nov 2026 03:00:30 GMT', now), 30);
    assert.equal(retryAfterSeconds('soon', now), undefined);
    assert.equal(retryAfterSeconds(null, now), undefined);
  });
});
