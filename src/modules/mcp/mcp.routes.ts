import { readFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../../infra/errors.ts';
import { problemTypeBase } from '../../infra/http/problem.ts';
import { scopeCosts } from '../../infra/ratelimit/costs.ts';
import { inputSchemaOf, type ToolRoute, toolRequest, toolRoutes } from './mcp.tools.ts';

export const mcpPath = '/mcp';

// src/modules/mcp/ and dist/modules/mcp/ are both three levels below the package root.
const { version } = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };

/** The JSON-RPC messages of one POST (one, or a batch of older clients). */
function messagesOf(body: unknown): unknown[] {
  return Array.isArray(body) ? body : [body];
}

const isToolCall = (message: unknown) => (message as { method?: unknown } | null)?.method === 'tools/call';

/**
 * The MCP server (Model Context Protocol, Streamable HTTP transport, stateless): `POST /mcp` with the caller's
 * personal access token. Each tool is a REST route of the API called in process with the same token
 * (`mcp.tools.ts`), so it is authorised against the route's scope, charged to the same rate limit and quotas,
 * validated by the same schema and answers the same body; an error answer becomes a tool error carrying the
 * route's problem document. The other messages (initialize, tools/list, notifications) cost what a reference
 * call does. A server and a transport are made per request: nothing is kept between requests, so any node
 * answers any request and GET (a server-to-client stream) and DELETE (ending a session) have nothing to do.
 */
export async function mcpRoutes(app: FastifyInstance): Promise<void> {
  const tools = new Map(toolRoutes.map((tool) => [tool.name, tool]));
  const toolList: Tool[] = toolRoutes.map((tool) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: inputSchemaOf(tool),
    annotations: { readOnlyHint: tool.method === 'GET', openWorldHint: false },
  }));

  const callTool = async (request: FastifyRequest, tool: ToolRoute, args: Record<string, unknown>): Promise<CallToolResult> => {
    const missing = Object.keys(tool.schemas.params?.properties ?? {}).filter((name) => args[name] === undefined || args[name] === null);
    if (missing.length) return missingArguments(request, tool, missing);
    const call = toolRequest(tool, args);
    const res = await app.inject({
      method: call.method,
      url: call.url,
      remoteAddress: request.ip,
      headers: {
        authorization: request.headers.authorization ?? '',
        host: request.host,
        'x-request-id': String(request.id),
        ...(request.headers['accept-language'] ? { 'accept-language': request.headers['accept-language'] } : {}),
        ...(call.body ? { 'content-type': 'application/json' } : {}),
      },
      ...(call.body ? { payload: JSON.stringify(call.body) } : {}),
    });
    const structured = JSON.parse(res.body) as Record<string, unknown>;
    return {
      content: [{ type: 'text', text: res.body }],
      structuredContent: structured,
      ...(res.statusCode >= 400 ? { isError: true } : {}),
    };
  };

  // One for every request's server: the SDK would compile a new Ajv instance for each (it checks elicitation answers, which this server never asks for).
  const jsonSchemaValidator = new AjvJsonSchemaValidator();
  const serverFor = (request: FastifyRequest): Server => {
    const server = new Server(
      { name: 'leadatlas', title: 'LeadAtlas', version },
      {
        capabilities: { tools: {} },
        jsonSchemaValidator,
        instructions:
          'Search businesses (places) by kind, city and filters with search_places, page with its cursor, export a search with start_export ' +
          "and get_export. Every call runs with the user's LeadAtlas token, its scopes and quotas.",
      },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolList }));
    server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
      const tool = tools.get(params.name);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${params.name}; the tools are ${[...tools.keys()].join(', ')}`);
      return callTool(request, tool, params.arguments ?? {});
    });
    return server;
  };

  app.post(
    mcpPath,
    {
      schema: { hide: true },
      // After the body is parsed: a request of tool calls only is charged by the routes it calls, the others as a reference call.
      preHandler: async (request, reply) => {
        const cost = messagesOf(request.body).every(isToolCall) ? 0 : scopeCosts['places:read'];
        const refusal = await app.authorizeOperation(request, reply, { scope: null, cost, routeUrl: mcpPath });
        if (refusal) throw refusal;
      },
    },
    async (request, reply) => {
      reply.hijack();
      // The transport writes the answer itself, past Fastify's onSend hooks: the request id is set here.
      reply.raw.setHeader('x-request-id', String(request.id));
      const server = serverFor(request);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    },
  );

  const notAllowed = async () => {
    throw new AppError(
      'method_not_allowed',
      'This MCP server is stateless: send each JSON-RPC message with POST /mcp. It opens no server-to-client stream (GET) and keeps no session to end (DELETE).',
      { allowed: ['POST'] },
      { allow: 'POST' },
    );
  };
  app.get(mcpPath, { schema: { hide: true } }, notAllowed);
  app.delete(mcpPath, { schema: { hide: true } }, notAllowed);
}

/** A tool call without a path parameter of its route: the route cannot be reached, so the tool says which argument is missing. */
function missingArguments(request: FastifyRequest, tool: ToolRoute, missing: string[]): CallToolResult {
  const problem = {
    type: `${problemTypeBase}validation_failed`,
    title: 'The request is not valid',
    status: 400,
    detail: missing.map((name) => `${name}: is required`).join('; '),
    instance: mcpPath,
    request_id: String(request.id),
    code: 'validation_failed',
    errors: missing.map((name) => ({ field: name, message: `is required by ${tool.name}` })),
  };
  return { content: [{ type: 'text', text: JSON.stringify(problem) }], structuredContent: problem, isError: true };
}
