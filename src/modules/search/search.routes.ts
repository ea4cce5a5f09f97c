import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import { AppError } from '../../infra/errors.ts';
import { checkAgainstSchema } from '../../infra/http/check-schema.ts';
import { readJsonGetBody } from '../../infra/http/get-body.ts';
import { overloadedOrPreparing, problemResponses } from '../../infra/http/problem.ts';
import { requestLang } from '../../infra/http/request-lang.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { autocompleteRoute } from './autocomplete.routes.ts';
import { lookupPlaces } from './contact-lookup.ts';
import { lookupJson, searchPageJson, v1SearchJson } from './search.json.ts';
import {
  FacetsQuerySchema,
  FacetsResponseSchema,
  LookupQuerySchema,
  LookupResponseSchema,
  MapSearchBodySchema,
  MapSearchQuerySchema,
  SearchPageSchema,
  V1SearchBodySchema,
  type V1SearchInput,
  V1SearchResponseSchema,
} from './search.schema.ts';
import { quickSearch, searchFacets, searchPlaces, searchPlacesInArea } from './search.service.ts';
import type { Search } from './search.ts';
import type { SearchDeps } from './search.types.ts';

export interface SearchRoutesOptions {
  config: Config;
  /** The search object of the app (`createSearch`), shared with the dashboard. */
  search: Search;
}

const json = 'application/json; charset=utf-8';
const maxGetBodyBytes = 16 * 1024;

type TypedApp = ReturnType<typeof typed>;
const typed = (app: FastifyInstance) => app.withTypeProvider<TypeBoxTypeProvider>();

export async function searchRoutes(appBase: FastifyInstance, options: SearchRoutesOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  const deps = options.search;
  // The resolvers take a moment to make (seconds for the in-memory ones): once the server listens, not on a client's first search.
  app.addHook('onListen', async () => deps.warm());
  const base = options.config.PUBLIC_URL?.replace(/\/$/, '') ?? '';

  facetsRoute(app, deps);
  lookupRoute(app, deps);
  autocompleteRoute(app, deps);

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
          "the caller's account: `search_id` is what exports take. The response has the exact `total`, one page of places and `links.next`, which " +
          'continues with a keyset cursor (send only `cursor`, `per_page`, `fields` with it). At least one of `type`, `city`, `country`, `query`, ' +
          '`near`, `bbox` is required. An unknown `type` or `city` answers 400 with the closest `candidates`.',
        querystring: MapSearchQuerySchema,
        response: { 200: SearchPageSchema, ...problemResponses(400, 404, 507), ...overloadedOrPreparing },
      },
    },
    async (request, reply) => {
      const { query } = request;
      const result = await searchPlaces(deps, request.auth!.accountId, query, requestLang(request, query.lang));
      return reply.type(json).send(searchPageJson(deps, result, query, request.url, base));
    },
  );

  app.post(
    '/api/v2/map/search',
    {
      config: { scope: 'search' },
      schema: {
        tags: ['search'],
        operationId: 'searchPlacesInArea',
        summary: 'Search a drawn area (GeoJSON Polygon or MultiPolygon) and save the search',
        description:
          'The places inside a GeoJSON Polygon or MultiPolygon (holes excluded), with the optional filters of `GET /api/v2/map/search` ' +
          '(`type`, `query`, `city`, `country`, `min_rating`, `has_*`, `sort`, `per_page`, `fields`, `lang`; not `near`, `radius`, `bbox`). Saves the ' +
          'search like the GET form: the same response, `search_id` for exports, and `links.next` continues with `GET /api/v2/map/search?cursor=…`. ' +
          'The area is read through the coordinate index by its bounding box, then each place is tested exactly. A polygon over the limits ' +
          '(positions, polygons, rings, span) or not valid (open or degenerate ring, a position out of range) answers 400 naming it.',
        body: MapSearchBodySchema,
        response: { 200: SearchPageSchema, ...problemResponses(400, 415), ...overloadedOrPreparing },
      },
    },
    async (request, reply) => {
      const { body } = request;
      const result = await searchPlacesInArea(deps, request.auth!.accountId, body, requestLang(request, body.lang));
      return reply.type(json).send(searchPageJson(deps, result, body, request.url, base));
    },
  );

  const v1Description =
    'Typo-tolerant search on place names (diacritics folded, any script), optionally in a city, country or kind of business. ' +
    'Answers the exact `total` and the first `per_page` places. The parameters travel as a JSON body (`GET` with a body, or `POST`) ' +
    'or, for clients that cannot send a body on GET, as query parameters. At least one of `query`, `city`, `type` is required.';
  const v1 = async (request: FastifyRequest, reply: FastifyReply, input: V1SearchInput | undefined, location: 'body' | 'querystring') => {
    const result = await quickSearch(deps, input, { lang: requestLang(request, undefined), location, accountId: request.auth!.accountId });
    return reply.type(json).send(v1SearchJson(deps, result));
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
        response: { 200: V1SearchResponseSchema, ...problemResponses(400, 415), ...overloadedOrPreparing },
      },
    },
    async (request, reply) => {
      const body = await readJsonGetBody(request, maxGetBodyBytes);
      const { query } = request;
      if (body === undefined) return v1(request, reply, query, 'querystring');
      if (Object.keys(query).some((k) => k !== 'per_page')) {
        throw new AppError('validation_failed', 'Send the search either as a JSON body or as query parameters, not both', {
          errors: [{ field: 'querystring', message: 'is not allowed together with a JSON body' }],
        });
      }
      return v1(request, reply, checkAgainstSchema(V1SearchBodySchema, body, 'body'), 'body');
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
        response: { 200: V1SearchResponseSchema, ...problemResponses(400, 415), ...overloadedOrPreparing },
      },
    },
    async (request, reply) => v1(request, reply, request.body, 'body'),
  );
}

/** `GET /api/v2/lookup`: the places carrying a phone, domain, email or address, from the engine's contact postings. */
function lookupRoute(app: TypedApp, deps: SearchDeps): void {
  app.get(
    '/api/v2/lookup',
    {
      config: { scope: 'search' },
      schema: {
        tags: ['search'],
        operationId: 'lookupPlace',
        summary: 'Find the places carrying a phone number, domain, email or street address',
        description:
          'Exact lookups for integrations (a CRM screening an incoming call, a domain from an email signature): `phone` (international, or ' +
          'national with `country`), `domain` (any URL or host name, compared by registrable domain), `email` (case ignored; the places of its ' +
          'domain follow those carrying the address itself), `address` (street and house number, street names folded and abbreviations ' +
          "understood, optionally postcode and city). Several given: places carrying all of them. Contacts found on the places' websites count " +
          "as the sources' do; the account's suppression list applies. Answered from the search index, not saved.",
        querystring: LookupQuerySchema,
        response: { 200: LookupResponseSchema, ...problemResponses(400), ...overloadedOrPreparing },
      },
    },
    async (request, reply) => {
      const result = await lookupPlaces(deps, request.auth!.accountId, request.query);
      return reply.type(json).send(lookupJson(deps, result));
    },
  );
}

/** `GET /api/v2/map/facets`: the exact matches of a search per value of a dimension. */
function facetsRoute(app: TypedApp, deps: SearchDeps): void {
  app.get(
    '/api/v2/map/facets',
    {
      config: { scope: 'search' },
      schema: {
        tags: ['search'],
        operationId: 'searchFacets',
        summary: 'Count the matches of a search per category, city, country or contact filter',
        description:
          'The filters of `GET /api/v2/map/search` (at least one of `type`, `city`, `country`, `query`, `near`, `bbox`) and `by`: the exact number ' +
          'of matches per value of that dimension, e.g. how many dentists with a phone in each city of a country (`type=dentist&country=DE&has_phone=true&by=city`). ' +
          'Not saved.',
        querystring: FacetsQuerySchema,
        response: { 200: FacetsResponseSchema, ...problemResponses(400), ...overloadedOrPreparing },
      },
    },
    async (request) => {
      const { query } = request;
      return searchFacets(deps, request.auth!.accountId, query, requestLang(request, query.lang));
    },
  );
}
