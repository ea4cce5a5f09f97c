import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { App } from '../../src/app.ts';
import { toolRoutes } from '../../src/modules/mcp/mcp.tools.ts';
import type { TestAccount } from '../helpers/accounts.ts';
import type { TestSqlite } from '../helpers/databases.ts';
import { fuzzApp } from '../helpers/fuzz-app.ts';

/**
 * The MCP endpoint (`POST /mcp`, JSON-RPC) fuzzed as openapi.fuzz.test.ts fuzzes the REST routes (issue 37):
 * bodies that are not JSON, JSON that is not JSON-RPC, JSON-RPC with wrong versions, ids and methods, tool
 * calls of unknown tools and of known tools with arguments of any shape, batches of any size, odd headers.
 * No answer may be a 5xx, and every answer with a body is JSON (a JSON-RPC error or a problem document).
 *
 * FUZZ_RUNS (default 1,000) sets the number of requests; FUZZ_SEED replays a run.
 */
const runs = Number(process.env.FUZZ_RUNS ?? 1_000);
const seed = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

let t: TestSqlite;
let app: App;
let user: TestAccount;
const statuses = new Map<number, number>();

before(async () => {
  ({ t, app, user } = await fuzzApp());
});

after(async () => {
  await app?.close();
  await t.dispose();
});

const toolNames = toolRoutes.map((tool) => tool.name);
const methods = ['initialize', 'tools/list', 'tools/call', 'notifications/initialized', 'ping', 'resources/list', 'prompts/get', 'x', ''];
const anyJson = fc.jsonValue({ maxDepth: 3 });
const id = fc.oneof(fc.integer(), fc.string({ maxLength: 20 }), fc.constant(null), anyJson);

/** Arguments shaped like a tool's (its own parameter names) with values of any kind, or anything at all. */
const toolArguments = fc.oneof(
  fc.dictionary(
    fc.oneof(fc.constantFrom('type', 'city', 'query', 'per_page', 'cursor', 'search_id', 'id', 'format', 'bbox', 'near'), fc.string()),
    fc.oneof(anyJson, fc.constantFrom('1e400', 'NaN', '-1', '😀', '\u0000', 'srch_aaaaaaaaaaaaaaaa', 'Monaco')),
    { maxKeys: 6 },
  ),
  anyJson,
);

const message = fc.record(
  {
    jsonrpc: fc.oneof(fc.constant('2.0'), fc.constant('2.0'), fc.constant('1.0'), anyJson),
    id,
    method: fc.oneof(fc.constantFrom(...methods), fc.string({ maxLength: 30 }), anyJson),
    params: fc.oneof(
      fc.record(
        { name: fc.oneof(fc.constantFrom(...toolNames), fc.string({ maxLength: 40 }), anyJson), arguments: toolArguments },
        { requiredKeys: [] },
      ),
      fc.record(
        { protocolVersion: fc.oneof(fc.constant('2025-06-18'), fc.string()), capabilities: anyJson, clientInfo: anyJson },
        { requiredKeys: [] },
      ),
      anyJson,
    ),
  },
  { requiredKeys: [] },
);

/** A well-formed call of a known or unknown tool with arguments of any shape: what reaches the tools. */
const toolCall = fc.record({
  jsonrpc: fc.constant('2.0'),
  id: fc.integer(),
  method: fc.constantFrom('tools/call', 'tools/call', 'tools/list', 'ping'),
  params: fc.record({ name: fc.oneof(fc.constantFrom(...toolNames), fc.string({ maxLength: 40 })), arguments: toolArguments }),
});

const body = fc.oneof(
  { weight: 4, arbitrary: toolCall.map((m) => JSON.stringify(m)) },
  fc.array(toolCall, { maxLength: 20 }).map((b) => JSON.stringify(b)),
  message.map((m) => JSON.stringify(m)),
  fc.array(message, { maxLength: 20 }).map((b) => JSON.stringify(b)),
  anyJson.map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }),
  message.map((m) => JSON.stringify(m).slice(0, -3)),
  fc.constant(''),
);

const accept = fc.constantFrom(
  'application/json, text/event-stream',
  'application/json',
  'text/event-stream',
  '*/*',
  'text/html',
  undefined,
);
const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  undefined,
);
const authorization = fc.constantFrom('good', 'good', 'good', 'none', 'Bearer la_pat_nope', 'Basic Zm9vOmJhcg==');

function check(status: number, type: string | undefined, payload: string, what: string): void {
  statuses.set(status, (statuses.get(status) ?? 0) + 1);
  assert.ok(status < 500, `${what} answered ${status}: ${payload.slice(0, 500)}`);
  if (payload.length > 0) {
    assert.match(type ?? '', /json/, `${what}: ${status} is JSON`);
    assert.doesNotThrow(() => JSON.parse(payload), `${what}: the body parses`);
  }
}

test('malformed JSON-RPC, unknown tools and arguments, odd headers and batches get errors, never a 5xx', { timeout: 600_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(body, accept, contentType, authorization, async (payload, acc, type, auth) => {
      const headers: Record<string, string> = {};
      if (acc) headers.accept = acc;
      if (type) headers['content-type'] = type;
      if (auth === 'good') headers.authorization = user.authorization;
      else if (auth !== 'none') headers.authorization = auth;
      const res = await app.inject({ method: 'POST', url: '/mcp', headers, payload });
      check(res.statusCode, res.headers['content-type'] as string | undefined, res.body, `POST /mcp ${payload.slice(0, 300)}`);
    }),
    { numRuns: runs, ...(seed === undefined ? {} : { seed }), endOnFailure: true },
  );
  assert.ok((statuses.get(200) ?? 0) > 0 && [...statuses.keys()].some((s) => s >= 400), `answers: ${JSON.stringify([...statuses])}`);
});

test('a batch of 5,000 messages (tool calls of unknown tools and with bad arguments) is answered with errors, not a 5xx', {
  timeout: 120_000,
}, async () => {
  const batch = Array.from({ length: 5_000 }, (_, i) => ({
    jsonrpc: '2.0',
    id: i,
    method: 'tools/call',
    params:
      i % 2 === 0
        ? { name: `no_such_tool_${i}`, arguments: {} }
        : { name: toolNames[i % toolNames.length], arguments: { per_page: 'x'.repeat(50) } },
  }));
  const res = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { authorization: user.authorization, accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
    payload: JSON.stringify(batch),
  });
  check(res.statusCode, res.headers['content-type'] as string | undefined, res.body, 'a batch of 5,000');
});
