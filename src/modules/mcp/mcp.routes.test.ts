import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MapSearchQuerySchema } from '../search/search.schema.ts';
import { SuppressionsBodySchema } from '../suppressions/suppressions.schema.ts';
import type { Scope } from '../auth/auth.types.ts';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';

const extract = new URL('../../../../shared/data/osm/monaco-2026.osm.pbf', import.meta.url).pathname;
/** Units a token may spend a minute here: enough for the round trips, few enough to reach in the rate-limit test. */
const tokenUnitsPerMinute = 60;

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

describe('the MCP server at /mcp', () => {
  let t: TestApp;
  let base: URL;
  const clients: Client[] = [];

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

  before(async () => {
    t = await buildTestApp({ files: [extract], env: { DB_READ_WORKERS: '1', RATE_LIMIT_TOKEN_PER_MINUTE: String(tokenUnitsPerMinute) } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    assert.ok(address && typeof address === 'object');
    base = new URL(`http://127.0.0.1:${address.port}/mcp`);
  });

  after(async () => {
    for (const client of clients) await client.close();
    await t.close();
  });

  test('lists the seven tools, their input schemas made of the route schemas', async () => {
    const client = await connect((await account()).authorization);
    assert.equal(client.getServerVersion()?.name, 'leadatlas');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), [
      'add_suppressions',
      'get_export',
      'get_place',
      'list_categories',
      'list_countries',
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

  test('charges a tool call what its REST route costs, on the same rate limit, and refuses it over the limit', async () => {
    const user = await account();
    const client = await connect(user.authorization);
    const start = await unitsLeft(user);
    ok(await call(client, 'search_places', { type: 'restaurant', city: 'Monaco', per_page: 1 }));
    assert.equal(await unitsLeft(user), start - 2);
    await client.listTools();
    assert.equal(await unitsLeft(user), start - 3);
    // Spend the rest over REST: the tool shares the route's limit.
    while ((await unitsLeft(user)) >= 2) await rest(user, '/api/v2/map/search?type=restaurant&city=Monaco&per_page=1');
    const problem = failed(await call(client, 'search_places', { type: 'restaurant', city: 'Monaco' }));
    assert.equal(problem.status, 429);
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
    assert.equal(((await answered.json()) as { result: { tools: unknown[] } }).result.tools.length, 7);
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
