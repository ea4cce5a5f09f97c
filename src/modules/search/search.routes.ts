import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import type { ReadPool } from '../../infra/db/read-pool.ts';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { AppError } from '../../infra/errors.ts';
import { jsonOf } from '../../infra/json.ts';
import { problemResponses } from '../../infra/http/problem.ts';
import type { ApiReadTasks } from './read-tasks.ts';
import { overloaded, MapSearchQuerySchema, SearchPageSchema, V1SearchBodySchema, V1SearchResponseSchema, type MapSearchQuery, type V1SearchInput } from './search.schema.ts';
import { continueSearch, createSearch, pagePlacesJson, parseFields, quickSearch, type SearchPageResult } from './search.service.ts';
import { createSearchDeps, loadPlaceNameResolver, loadTypeResolver } from './type-resolver.ts';

export interface SearchRoutesOptions {
  db: Db;
  config: Config;
  reads: ReadPool<ApiReadTasks>;
}

const filterNames = ['type', 'city', 'country', 'query', 'min_rating', 'has_phone', 'has_website', 'has_email', 'near', 'radius', 'bbox', 'sort', 'lang'] as const;
const criteriaNames = ['type', 'city', 'country', 'query', 'near', 'bbox'] as const;

/** The language asked for: `lang`, else the first tag of Accept-Language. */
export function requestLang(request: FastifyRequest, lang: string | undefined): string | null {
  if (lang) return lang.toLowerCase();
  const header = request.headers['accept-language'];
  const first = typeof header === 'string' ? header.split(',')[0]?.split(';')[0]?.trim() : undefined;
  return first && /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(first) ? first.toLowerCase() : null;
}

/**
 * The page as JSON text (the shape of SearchPageSchema). Built here rather than by the schema's
 * serializer because the places part is rendered once per cached page (`pagePlacesJson`); the route
 * tests check every answer against the schema.
 */
function pageBody(result: SearchPageResult, query: MapSearchQuery, selfUrl: string, base: string): string {
  const next = result.nextCursor
    ? `${base}/api/v2/map/search?${new URLSearchParams({ cursor: result.nextCursor, per_page: String(query.per_page), ...(query.fields ? { fields: query.fields } : {}) })}`
    : null;
  const { search } = result;
  return (
    `{"search_id":${JSON.stringify(search.id)},"total":${result.total},"per_page":${query.per_page},"sort":${JSON.stringify(search.sort)},` +
    `"resolved":${jsonOf(search.resolution)},"data":${pagePlacesJson(result.page, result.fields)},"links":${JSON.stringify({ self: `${base}${selfUrl}`, next })}}`
  );
}

const json = 'application/json; charset=utf-8';
const maxGetBodyBytes = 16 * 1024;

/** Fastify leaves a GET body unread: read it here when the client sent one (JSON only). */
async function readGetBody(request: FastifyRequest): Promise<unknown> {
  const length = request.headers['content-length'];
  const chunked = request.headers['transfer-encoding'] !== undefined;
  if (!chunked && (length === undefined || length === '0')) return undefined;
  const type = request.headers['content-type'] ?? '';
  if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
    throw new AppError('unsupported_media_type', `A body must be application/json, got ${type === '' ? 'no Content-Type' : type}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request.raw) {
    size += (chunk as Buffer).length;
    if (size > maxGetBodyBytes) throw new AppError('validation_failed', `The body is larger than ${maxGetBodyBytes} bytes`, { errors: [{ field: 'body', message: 'is too large' }] });
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError('validation_failed', 'The body is not valid JSON: expected an object like {"query": "ratskeller", "city": "München"}', {
      errors: [{ field: 'body', message: 'is not valid JSON' }],
    });
  }
}

const v1BodyCheck = TypeCompiler.Compile(V1SearchBodySchema);

/** The same checks Fastify runs on the POST body, for the GET body read by hand. */
function validateV1Body(body: unknown): V1SearchInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new AppError('validation_failed', 'Expected a JSON object like {"query": "ratskeller", "city": "München"}', {
      errors: [{ field: 'body', message: 'must be a JSON object', allowed: ['query', 'city', 'country', 'type', 'per_page'] }],
    });
  }
  const errors = [...v1BodyCheck.Errors(body)].map((e) => {
    const path = e.path.replace(/^\//, '').replaceAll('/', '.');
    const known = path === '' || path in V1SearchBodySchema.properties;
    return known
      ? { field: path ? `body.${path}` : 'body', message: e.message }
      : { field: `body.${path}`, message: 'is not a known parameter', allowed: Object.keys(V1SearchBodySchema.properties) };
  });
  if (errors.length > 0) throw new AppError('validation_failed', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });
  return body as V1SearchInput;
}

export async function searchRoutes(appBase: FastifyInstance, options: SearchRoutesOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  const deps = createSearchDeps(options.db, options.reads);
  // The resolvers take a moment to make (seconds for the in-memory ones): once the server listens, not on a client's first search.
  app.addHook('onListen', async () => {
    setImmediate(() => {
      void loadTypeResolver(options.db);
      loadPlaceNameResolver();
    });
  });
  const base = options.config.PUBLIC_URL?.replace(/\/$/, '') ?? '';

  app.get(
    '/api/v2/map/search',
    {
      config: { scope: 'search' },
      schema: {
        tags: ['search'],
        operationId: 'searchPlaces',
        summary: 'Search the catalog and save the search',
        description:
          'Finds places by kind of business (`type`), city, country, name text, rating, contact details and area. Every call saves the search for ' +
          'the caller\'s account: `search_id` is what exports take. The response has the exact `total`, one page of places and `links.next`, which ' +
          'continues with a keyset cursor (send only `cursor`, `per_page`, `fields` with it). At least one of `type`, `city`, `country`, `query`, ' +
          '`near`, `bbox` is required. An unknown `type` or `city` answers 400 with the closest `candidates`.',
        querystring: MapSearchQuerySchema,
        response: { 200: SearchPageSchema, ...problemResponses(400, 404), ...overloaded },
      },
    },
    async (request, reply) => {
      const query = request.query as MapSearchQuery;
      const accountId = request.auth!.accountId;
      const fields = parseFields(query.fields);
      if (query.cursor !== undefined) {
        const extra = filterNames.filter((n) => query[n] !== undefined);
        if (extra.length > 0) {
          throw new AppError('validation_failed', 'A cursor continues a saved search: send it with per_page and fields only', {
            errors: extra.map((n) => ({ field: `querystring.${n}`, message: 'is not allowed with cursor', allowed: ['cursor', 'per_page', 'fields'] })),
          });
        }
        const result = await continueSearch(deps, accountId, query.cursor, { perPage: query.per_page, fields });
        return reply.type(json).send(pageBody(result, query, request.url, base));
      }
      if (!criteriaNames.some((n) => query[n] !== undefined)) {
        throw new AppError('validation_failed', `Say what to search for: at least one of ${criteriaNames.join(', ')}`, {
          errors: [{ field: 'querystring', message: 'needs at least one search parameter', allowed: [...criteriaNames] }],
        });
      }
      const { per_page: perPage, fields: _fields, cursor: _cursor, lang, ...input } = query;
      const result = await createSearch(deps, accountId, input, { perPage, fields, lang: requestLang(request, lang) });
      return reply.type(json).send(pageBody(result, query, request.url, base));
    },
  );

  const v1Description =
    'Typo-tolerant search on place names (diacritics folded, any script), optionally in a city, country or kind of business. ' +
    'Answers the exact `total` and the first `per_page` places. The parameters travel as a JSON body (`GET` with a body, or `POST`) ' +
    'or, for clients that cannot send a body on GET, as query parameters. At least one of `query`, `city`, `type` is required.';
  const v1 = async (request: FastifyRequest, reply: FastifyReply, input: V1SearchInput | undefined, where: 'body' | 'querystring') => {
    if (!input || (input.query === undefined && input.city === undefined && input.type === undefined)) {
      throw new AppError('validation_failed', 'Expected a JSON body (or query parameters) with at least one of query, city, type, e.g. {"query": "ratskeller", "city": "München"}', {
        errors: [{ field: where, message: 'needs at least one of query, city, type', allowed: ['query', 'city', 'country', 'type', 'per_page'] }],
      });
    }
    const { per_page: perPage, ...filters } = input;
    const result = await quickSearch(deps, filters, { perPage: perPage ?? 20, lang: requestLang(request, undefined) });
    // The shape of V1SearchResponseSchema, the places rendered once per cached page (see pageBody).
    return reply.type(json).send(`{"total":${result.total},"data":${pagePlacesJson(result.page, [])},"resolved":${jsonOf(result.resolution)}}`);
  };

  app.get(
    '/v1/search',
    {
      config: { scope: 'search' },
      // A GET with a body is unusual but allowed (RFC 9110 §9.3.1): read it when the client sends one.
      schema: {
        tags: ['search'],
        operationId: 'searchByNameGet',
        summary: 'Search places by name (GET, JSON body or query parameters)',
        description: v1Description,
        querystring: V1SearchBodySchema,
        response: { 200: V1SearchResponseSchema, ...problemResponses(400, 415), ...overloaded },
      },
    },
    async (request, reply) => {
      const body = await readGetBody(request);
      const query = request.query as V1SearchInput;
      const hasQuery = Object.keys(query).some((k) => k !== 'per_page');
      if (body !== undefined && hasQuery) {
        throw new AppError('validation_failed', 'Send the search either as a JSON body or as query parameters, not both', {
          errors: [{ field: 'querystring', message: 'is not allowed together with a JSON body' }],
        });
      }
      if (body !== undefined) return v1(request, reply, validateV1Body(body), 'body');
      return v1(request, reply, query, 'querystring');
    },
  );

  app.post(
    '/v1/search',
    {
      config: { scope: 'search' },
      schema: {
        tags: ['search'],
        operationId: 'searchByName',
        summary: 'Search places by name (POST, JSON body)',
        description: v1Description,
        body: V1SearchBodySchema,
        response: { 200: V1SearchResponseSchema, ...problemResponses(400, 415), ...overloaded },
      },
    },
    async (request, reply) => v1(request, reply, request.body as V1SearchInput | undefined, 'body'),
  );
}
