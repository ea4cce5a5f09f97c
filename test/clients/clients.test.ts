import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { items, LeadAtlas, type LeadAtlasOptions, LeadAtlasProblem, retryAfterSeconds } from '../../clients/typescript/src/index.ts';
import { committedClient, generateClient, generatedFiles, staleFiles } from '../../scripts/client-generate.ts';
import type { Scope } from '../../src/modules/auth/auth.types.ts';
import { toolRoutes } from '../../src/modules/mcp/mcp.tools.ts';
import { MapSearchQuerySchema } from '../../src/modules/search/search.schema.ts';
import { SuppressionsBodySchema } from '../../src/modules/suppressions/suppressions.schema.ts';
import { createAccountWithToken, type TestAccount } from '../helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';

/**
 * The API as its two kinds of clients meet it, on one live server (one import of the catalog for both): the MCP
 * server at /mcp driven by the official SDK's client, and the generated TypeScript client (clients/typescript),
 * checked to be up to date with the server's document and run against every operation of it.
 */
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

/** Units a token may spend a minute here: enough for the round trips, few enough to reach in the rate-limit test. */
const tokenUnitsPerMinute = 120;

interface Problem {
  status: number;
  code: string;
  detail: string;
  scope?: string;
  errors?: { field: string }[];
  'violated-policies'?: string[];
}
interface SearchPage {
  search_id: string;
  total: number;
  data: { id: string; name: string }[];
  links: { next: string | null };
}

let t: TestApp;
let baseUrl: string;

before(async () => {
  t = await buildTestApp({ files: [extract], env: { DB_READ_WORKERS: '1', RATE_LIMIT_TOKEN_PER_MINUTE: String(tokenUnitsPerMinute) } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.app.server.address();
  assert.ok(address && typeof address === 'object');
  baseUrl = `http://127.0.0.1:${address.port}`;
});

after(async () => {
  await t.close();
});

describe('the MCP server at /mcp', () => {
  const clients: Client[] = [];
  let base: URL;

  const connect = async (authorization: string | undefined): Promise<Client> => {
    const client = new Client({ name: 'leadatlas-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(base, {
      requestInit: { headers: authorization ? { authorization, 'accept-language': 'en' } : {} },
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  };
  const account = (scopes?: readonly Scope[]) => createAccountWithToken(t.db, scopes ? { scopes } : {});
  const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;
  const ok = <T>(result: CallToolResult): T => {
    assert.notEqual(result.isError, true, JSON.stringify(result.structuredContent));
    const [content] = result.content;
    assert.equal(content?.type, 'text');
    assert.deepEqual(JSON.parse((content as { text: string }).text), result.structuredContent);
    return result.structuredContent as T;
  };
  const failed = (result: CallToolResult): Problem => {
    assert.equal(result.isError, true, JSON.stringify(result.structuredContent));
    return result.structuredContent as unknown as Problem;
  };
  const rest = async <T>(user: TestAccount, url: string) => {
    const res = await t.app.inject({ method: 'GET', url, headers: { authorization: user.authorization } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as T;
  };
  /** The units left of a token's rate, read without spending any. */
  const unitsLeft = async (user: TestAccount) =>
    (await t.app.rateLimiter.take(`token:${user.tokenId}`, tokenUnitsPerMinute, 60, 0)).remaining;

  before(() => {
    base = new URL('/mcp', baseUrl);
  });

  after(async () => {
    for (const client of clients) await client.close();
  });

  test('lists the eleven tools, their input schemas made of the route schemas', async () => {
    const client = await connect((await account()).authorization);
    assert.equal(client.getServerVersion()?.name, 'leadatlas');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), [
      'add_suppressions',
      'autocomplete',
      'count_places',
      'get_export',
      'get_place',
      'list_categories',
      'list_countries',
      'lookup_place',
      'match_places',
      'search_places',
      'start_export',
    ]);
    const search = tools.find((tool) => tool.name === 'search_places')!;
    assert.deepEqual(Object.keys(search.inputSchema.properties ?? {}).sort(), Object.keys(MapSearchQuerySchema.properties).sort());
    assert.equal(
      (search.inputSchema.properties!.per_page as { maximum: number }).maximum,
      MapSearchQuerySchema.properties.per_page.maximum,
    );
    const suppress = tools.find((tool) => tool.name === 'add_suppressions')!;
    assert.deepEqual(suppress.inputSchema.required, ['entries']);
    assert.deepEqual(suppress.inputSchema.properties?.entries, JSON.parse(JSON.stringify(SuppressionsBodySchema.properties.entries)));
    assert.deepEqual(tools.find((tool) => tool.name === 'get_place')!.inputSchema.required, ['id']);
  });

  test('searches, pages by cursor to the end with the exact total, and answers what the REST route answers', async () => {
    const user = await account();
    const client = await connect(user.authorization);
    const first = ok<SearchPage>(
      await call(client, 'search_places', { type: 'restaurant', city: 'Monaco', per_page: 25, has_phone: true }),
    );
    assert.ok(first.total > 25, `total ${first.total}`);
    const viaRest = await rest<SearchPage>(user, '/api/v2/map/search?type=restaurant&city=Monaco&per_page=25&has_phone=true');
    assert.equal(viaRest.total, first.total);
    assert.deepEqual(
      viaRest.data.map((p) => p.id),
      first.data.map((p) => p.id),
    );
    const ids = first.data.map((p) => p.id);
    let next = first.links.next;
    while (next) {
      const cursor = new URL(next, 'http://x').searchParams.get('cursor')!;
      const page = ok<SearchPage>(await call(client, 'search_places', { cursor, per_page: 25 }));
      ids.push(...page.data.map((p) => p.id));
      next = page.links.next;
    }
    assert.equal(ids.length, first.total);
    assert.equal(new Set(ids).size, ids.length);

    const place = ok<{ id: string; name: string }>(await call(client, 'get_place', { id: first.data[0]!.id }));
    assert.equal(place.name, first.data[0]!.name);

    const suggested = ok<{ data: Array<{ value: string; slug?: string; count: number }> }>(
      await call(client, 'autocomplete', { q: 'restau', kind: 'category', country: 'MC' }),
    );
    const viaRestSuggested = await rest<typeof suggested>(user, '/api/v2/autocomplete?q=restau&kind=category&country=MC');
    assert.deepEqual(suggested, viaRestSuggested);
    const restaurants = await rest<SearchPage>(user, '/api/v2/map/search?type=restaurant&country=MC&per_page=1');
    assert.equal(suggested.data.find((s) => s.slug === 'restaurant')?.count, restaurants.total, 'a category counts what its search finds');
  });

  test('exports a search: starts the job, reads it until it has succeeded, and its link downloads the file', async () => {
    const user = await account();
    const client = await connect(user.authorization);
    const search = ok<SearchPage>(await call(client, 'search_places', { type: 'pharmacy', country: 'MC' }));
    const job = ok<{ id: string; status: string }>(await call(client, 'start_export', { search_id: search.search_id, format: 'ndjson' }));
    assert.match(job.id, /^job_/);
    type Job = { status: string; rows: number; download?: { url: string } };
    let read = ok<Job>(await call(client, 'get_export', { id: job.id }));
    for (let i = 0; i < 100 && read.status !== 'succeeded'; i++) {
      assert.notEqual(read.status, 'failed');
      await new Promise((resolve) => setTimeout(resolve, 100));
      read = ok<Job>(await call(client, 'get_export', { id: job.id }));
    }
    assert.equal(read.status, 'succeeded');
    assert.equal(read.rows, search.total);
    const file = await fetch(new URL(read.download!.url, base));
    assert.equal(file.status, 200);
    assert.equal((await file.text()).trim().split('\n').length, search.total);
  });

  test('adds to the suppression list, and the suppressed place leaves the next search', async () => {
    const client = await connect((await account()).authorization);
    const before = ok<SearchPage>(await call(client, 'search_places', { type: 'pharmacy', country: 'MC' }));
    const gone = before.data[0]!.id;
    const added = ok<{ added: number }>(await call(client, 'add_suppressions', { entries: [gone] }));
    assert.equal(added.added, 1);
    const afterwards = ok<SearchPage>(await call(client, 'search_places', { type: 'pharmacy', country: 'MC' }));
    assert.equal(afterwards.total, before.total - 1);
    assert.ok(!afterwards.data.some((p) => p.id === gone));
  });

  test('lists categories and countries as the reference routes do', async () => {
    const user = await account();
    const client = await connect(user.authorization);
    const categories = ok<{ total: number; data: { slug: string }[] }>(await call(client, 'list_categories', { parent: 'shop' }));
    assert.deepEqual(categories, await rest(user, '/api/v2/categories?parent=shop'));
    assert.ok(categories.data.some((c) => c.slug === 'shop_bakery' || c.slug.startsWith('shop_')));
    const countries = ok<{ data: { code: string }[] }>(await call(client, 'list_countries'));
    assert.ok(countries.data.some((c) => c.code === 'MC'));
    const byCity = ok<{ total: number; values: { count: number }[] }>(
      await call(client, 'count_places', { type: 'restaurant', country: 'MC', by: 'city' }),
    );
    assert.deepEqual(byCity, await rest(user, '/api/v2/map/facets?type=restaurant&country=MC&by=city'));
    assert.equal(
      byCity.values.reduce((n, v) => n + v.count, 0),
      byCity.total,
    );
  });

  test('answers a bad argument with a tool error carrying the problem document that names it', async () => {
    const client = await connect((await account()).authorization);
    const problem = failed(await call(client, 'search_places', { type: 'restaurant', per_page: 1000 }));
    assert.equal(problem.status, 400);
    assert.ok(
      problem.errors?.some((e) => e.field.includes('per_page')),
      JSON.stringify(problem),
    );
    const unknown = failed(await call(client, 'get_place', { id: 'plc_aaaaaaaaaaaaaaaa' }));
    assert.equal(unknown.status, 404);
    const missing = failed(await call(client, 'get_export', {}));
    assert.deepEqual(
      missing.errors?.map((e) => e.field),
      ['id'],
    );
    await assert.rejects(call(client, 'drop_tables'), /Unknown tool drop_tables/);
  });

  test('gives a token without the scope a tool error naming the scope', async () => {
    const client = await connect((await account(['places:read'])).authorization);
    const problem = failed(await call(client, 'search_places', { type: 'restaurant', city: 'Monaco' }));
    assert.equal(problem.status, 403);
    assert.equal(problem.scope, 'search');
    assert.match(problem.detail, /"search" scope/);
    assert.equal(failed(await call(client, 'start_export', { search_id: 'srch_aaaaaaaaaaaaaaaa' })).scope, 'export');
    assert.equal(failed(await call(client, 'add_suppressions', { entries: ['example.com'] })).scope, 'suppressions:write');
    ok(await call(client, 'list_countries'));
  });

  test("charges a tool call once, what its REST route costs, to the account's requests of the day and the token's rate", async () => {
    const user = await account();
    const client = await connect(user.authorization);
    const requests = () => t.app.usage.requestsToday(user.accountId);
    const before = await requests();
    const unitsBefore = await unitsLeft(user);
    const startedAt = Date.now();
    ok(await call(client, 'search_places', { type: 'restaurant', city: 'Monaco', per_page: 1 }));
    assert.equal(await requests(), before + 1, "one request of the day: the route's, not also the POST to /mcp");
    const spent = unitsBefore - (await unitsLeft(user));
    const refilled = Math.ceil(((Date.now() - startedAt) * tokenUnitsPerMinute) / 60_000);
    assert.ok(spent <= 2 && spent >= 2 - refilled, `a search costs 2 units; spent ${spent}, ${refilled} refilled meanwhile`);
    await client.listTools();
    assert.equal(await requests(), before + 2, 'tools/list counts as a request');
    // The account's last request of the day goes to REST; the tool is refused by the same quota.
    await t.app.quotas.setQuotas(user.accountId, { requestsPerDay: before + 3 });
    await rest(user, '/api/v2/countries');
    const problem = failed(await call(client, 'search_places', { type: 'restaurant', city: 'Monaco' }));
    assert.equal(problem.status, 429);
    assert.equal(problem.code, 'quota_exceeded');
    assert.deepEqual(problem['violated-policies'], ['daily']);
  });

  test("refuses a tool call over the token's rate once REST has spent it", async () => {
    const user = await account();
    const client = await connect(user.authorization);
    const search = ok<SearchPage>(await call(client, 'search_places', { type: 'pharmacy', country: 'MC', per_page: 1 }));
    // An export costs 20 units, which take 10 s to refill: spend the units over REST until fewer than 20 are left.
    while ((await unitsLeft(user)) >= 20) await rest(user, '/api/v2/map/search?type=restaurant&city=Monaco&per_page=1');
    const problem = failed(await call(client, 'start_export', { search_id: search.search_id }));
    assert.equal(problem.status, 429);
    assert.equal(problem.code, 'rate_limited');
    assert.deepEqual(problem['violated-policies'], ['token']);
  });

  test('refuses a request without a valid token with 401 before any tool runs', async () => {
    await assert.rejects(connect(undefined), /401/);
    await assert.rejects(connect('Bearer la_pat_not-a-real-token'), /401/);
    const res = await fetch(base, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer realm="leadatlas"/);
    assert.match(res.headers.get('x-request-id') ?? '', /^req_/);
    assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
    const answered = await fetch(base, {
      method: 'POST',
      headers: {
        authorization: (await account()).authorization,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(answered.status, 200);
    assert.match(answered.headers.get('x-request-id') ?? '', /^req_/);
    assert.equal(((await answered.json()) as { result: { tools: unknown[] } }).result.tools.length, toolRoutes.length);
  });

  test('answers GET and DELETE with a 405 problem saying the server is stateless and takes POST', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(base, { method, headers: { authorization: (await account()).authorization } });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'POST');
      const problem = (await res.json()) as Problem;
      assert.equal(problem.code, 'method_not_allowed');
      assert.match(problem.detail, /POST \/mcp/);
    }
  });
});

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
  /** A client of a new account (each test its own, so that none spends another's units). */
  const client = async (options: Partial<LeadAtlasOptions> = {}) =>
    new LeadAtlas({ baseUrl, token: (await createAccountWithToken(t.db)).token, fetch: recordingFetch, ...options });

  test('searches and pages through every result with the async iterator, GET and drawn area alike', async () => {
    const la = await client();
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
    const la = await client();
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
    const la = await client();
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

  test('counts a search by city (facets) and watches it with a monitor', async () => {
    const la = await client();
    const facets = await la.api.GET('/api/v2/map/facets', { params: { query: { type: 'restaurant', country: 'MC', by: 'has_phone' } } });
    assert.equal(
      facets.data!.values.reduce((n, v) => n + v.count, 0),
      facets.data!.total,
    );
    const search = await la.search({ type: 'pharmacy', country: 'MC', per_page: 1 });
    const monitor = await la.api.POST('/api/v2/monitors', { body: { search_id: search.search_id } });
    const id = monitor.data!.id;
    assert.equal((await la.api.GET('/api/v2/monitors/{id}', { params: { path: { id } } })).data!.search_id, search.search_id);
    assert.equal((await la.api.GET('/api/v2/monitors')).data!.data[0]!.id, id);
    const paused = await la.api.PATCH('/api/v2/monitors/{id}', { params: { path: { id } }, body: { paused: true } });
    assert.equal(paused.data!.status, 'paused');
    assert.ok(Array.isArray((await la.api.GET('/api/v2/monitors/{id}/events', { params: { path: { id } } })).data!.data));
    assert.equal((await la.api.DELETE('/api/v2/monitors/{id}', { params: { path: { id } } })).response.status, 204);
  });

  test('looks a place up by its phone, and matches a list: records in one call, then a file as a job', async () => {
    const la = await client();
    const search = await la.search({ type: 'pharmacy', country: 'MC', per_page: 50, fields: 'id,name,phone_e164' });
    const place = search.data.find((p) => p.phone_e164 && search.data.filter((q) => q.phone_e164 === p.phone_e164).length === 1)!;
    assert.ok(place, 'a pharmacy of Monaco with a phone of its own');
    const found = await la.api.GET('/api/v2/lookup', { params: { query: { phone: place.phone_e164! } } });
    assert.ok(found.data!.data.some((p) => p.id === place.id));
    const names = await la.api.GET('/api/v2/autocomplete', { params: { query: { q: place.name!, country: 'MC', limit: 50 } } });
    assert.ok(
      names.data!.data.some((s) => s.value === place.name),
      `${place.name} among ${JSON.stringify(names.data!.data.map((s) => s.value))}`,
    );
    const record = { ref: 'crm-1', name: place.name!, phone: place.phone_e164!, country: 'MC' };
    const matched = await la.api.POST('/api/v2/match', { body: { records: [record] } });
    assert.equal(matched.data!.results[0]!.match?.place.id, place.id);
    const form = new FormData();
    form.append('file', new Blob([`name,phone,country\n"${place.name}",${place.phone_e164},MC\n`], { type: 'text/csv' }), 'accounts.csv');
    const started = await la.api.POST('/api/v2/match/jobs', { body: form as never, bodySerializer: (body: unknown) => body as FormData });
    const id = started.data!.id;
    let job = (await la.api.GET('/api/v2/match/jobs/{id}', { params: { path: { id } } })).data!;
    for (const until = Date.now() + 20_000; job.status !== 'succeeded' && job.status !== 'failed' && Date.now() < until; ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      job = (await la.api.GET('/api/v2/match/jobs/{id}', { params: { path: { id } } })).data!;
    }
    assert.equal(job.status, 'succeeded', JSON.stringify(job));
    assert.equal((await la.api.GET('/api/v2/match/jobs')).data!.data[0]!.id, id);
    const link = new URL(job.download!.url);
    const file = await la.api.GET('/api/v2/match/jobs/{id}/download', {
      params: {
        path: { id },
        query: { expires: Number(link.searchParams.get('expires')), signature: link.searchParams.get('signature')! },
      },
      parseAs: 'text',
    });
    assert.ok(file.data!.includes(place.id!), 'the downloaded list names the place');
  });

  test('throws error answers as a typed LeadAtlasProblem', async () => {
    const la = await client();
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
