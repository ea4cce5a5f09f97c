/**
 * What a tool call through the MCP server (`/mcp`) costs over the REST route it calls: the same search and the same
 * reference list, sent one after another on a kept-alive connection, REST and MCP alternating by round so that machine
 * noise hits both. MCP is measured twice: a bare JSON-RPC POST (the server's own overhead: the transport, a server
 * per request, the in-process call of the route) and the official SDK client's `callTool` (what an agent sees).
 *
 *   npm run bench:mcp -- [--requests 200] [--rounds 5]
 *
 * Needs ../shared/data/osm/monaco-2026.osm.pbf. The server runs in this process; limits are set out of the way.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { buildApp } from '../src/app.ts';
import { importFiles, prepareDatabase } from '../src/bootstrap.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/infra/db/database.ts';
import { createAccountWithToken } from '../test/helpers/accounts.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '200' }, rounds: { type: 'string', default: '5' } } });
const requests = Number(values.requests);
const rounds = Number(values.rounds);

const dir = mkdtempSync(join(tmpdir(), 'leadatlas-bench-mcp-'));
const url = `sqlite:${join(dir, 'bench.db')}`;
const db = openDatabase(url);
await prepareDatabase(db);
await importFiles(db, [new URL('../../shared/data/osm/monaco-2026.osm.pbf', import.meta.url).pathname]);
const unlimited = {
  RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000000',
  RATE_LIMIT_IP_PER_MINUTE: '1000000000000',
  QUOTA_REQUESTS_PER_DAY: '1000000000000',
};
const app = await buildApp({ config: loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent', IMPORT_DEMO_DATA: 'false', ...unlimited }), db });
const base = await app.listen({ host: '127.0.0.1', port: 0 });
const { authorization } = await createAccountWithToken(db);

const sdk = new Client({ name: 'bench', version: '1.0.0' });
await sdk.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization } } }));

interface Operation {
  name: string;
  rest: string;
  tool: string;
  args: Record<string, unknown>;
}
const operations: Operation[] = [
  {
    name: 'search (type + city, 20 places)',
    rest: '/api/v2/map/search?type=restaurant&city=Monaco&per_page=20',
    tool: 'search_places',
    args: { type: 'restaurant', city: 'Monaco', per_page: 20 },
  },
  { name: 'list countries', rest: '/api/v2/countries', tool: 'list_countries', args: {} },
];

let rpcId = 0;
const variants = {
  rest: async (op: Operation) => {
    const res = await fetch(base + op.rest, { headers: { authorization } });
    if (res.status !== 200) throw new Error(`${op.rest}: ${res.status}`);
    await res.arrayBuffer();
  },
  'mcp (JSON-RPC POST)': async (op: Operation) => {
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method: 'tools/call', params: { name: op.tool, arguments: op.args } }),
    });
    const body = (await res.json()) as { result?: { isError?: boolean } };
    if (res.status !== 200 || !body.result || body.result.isError) throw new Error(`${op.tool}: ${res.status} ${JSON.stringify(body)}`);
  },
  'mcp (SDK callTool)': async (op: Operation) => {
    const result = await sdk.callTool({ name: op.tool, arguments: op.args });
    if (result.isError) throw new Error(`${op.tool}: ${JSON.stringify(result.content)}`);
  },
};
type Variant = keyof typeof variants;

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

console.log(`bench:mcp: ${requests} requests a round, ${rounds} rounds, one connection; load average ${loadavg()[0]!.toFixed(2)}`);
for (const op of operations) {
  const times: Record<Variant, number[]> = { rest: [], 'mcp (JSON-RPC POST)': [], 'mcp (SDK callTool)': [] };
  for (const variant of Object.keys(variants) as Variant[]) for (let i = 0; i < 20; i++) await variants[variant](op);
  for (let round = 0; round < rounds; round++)
    for (const variant of Object.keys(variants) as Variant[])
      for (let i = 0; i < requests; i++) {
        const start = process.hrtime.bigint();
        await variants[variant](op);
        times[variant].push(Number(process.hrtime.bigint() - start) / 1e6);
      }
  const restSorted = times.rest.toSorted((a, b) => a - b);
  console.log(`\n${op.name}`);
  for (const variant of Object.keys(variants) as Variant[]) {
    const sorted = times[variant].toSorted((a, b) => a - b);
    const [p50, p99] = [quantile(sorted, 0.5), quantile(sorted, 0.99)];
    const ratio =
      variant === 'rest'
        ? ''
        : `  ${(p50 / quantile(restSorted, 0.5)).toFixed(2)}× REST p50, +${(p50 - quantile(restSorted, 0.5)).toFixed(2)} ms`;
    console.log(`  ${variant.padEnd(20)} p50 ${p50.toFixed(2)} ms  p99 ${p99.toFixed(2)} ms${ratio}`);
  }
}

await sdk.close();
await app.close();
await db.close();
rmSync(dir, { recursive: true, force: true });
