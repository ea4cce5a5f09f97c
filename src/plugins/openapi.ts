import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import swagger from '@fastify/swagger';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { diskFullDescription } from '../infra/http/problem.ts';
import { scopeCosts } from '../infra/ratelimit/costs.ts';
import { docsCss, type OpenApiDocument, renderDocsPage } from './openapi.docs.ts';

export interface OpenapiPluginOptions {
  /** Where the API is served, for the document's `servers`. */
  publicUrl?: string;
}

/** Paths that belong to the public API; everything else (dashboard pages, health) stays out of the document. */
/** The API's routes, and the health checks load balancers call; the dashboard's pages are not in the document. */
const apiPath = /^\/(api\/|v1\/|healthz$|readyz$)/;

// src/plugins/ and dist/plugins/ are both two levels below the package root.
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const problem = (description: string) => Type.Ref('Problem', { description });

/**
 * The OpenAPI 3.1 document generated from the route schemas (`/openapi.json`) and a reference page
 * rendered from it on the server (`/docs`, no scripts or CDN, works offline).
 * Register before the route plugins so every route is collected.
 */
export const openapiPlugin = fp(async function openapiPlugin(app: FastifyInstance, options: OpenapiPluginOptions) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'LeadAtlas API',
        version,
        description:
          'Business data (places) for lead generation: search the catalog by kind of business and city, save searches and export them. ' +
          'Authenticate with a personal access token: `Authorization: Bearer la_pat_…`, created in the dashboard or with `leadatlas token create`; ' +
          'its scopes (`places:read`, `search`, `export`, `suppressions:write`, `enrich`, `monitors`, `match`) say which routes it may call. ' +
          'Errors are `application/problem+json` (RFC 9457) with a `request_id`; validation errors list each bad field in `errors` with what is allowed. ' +
          'Every answer carries the `RateLimit-Policy` and `RateLimit` fields (draft-ietf-httpapi-ratelimit-headers): a token may spend its units ' +
          `a minute all at once or spread (a reference call costs ${scopeCosts['places:read']}, a search ${scopeCosts.search}, an export ${scopeCosts.export}, a change of the suppression list ${scopeCosts['suppressions:write']}), ` +
          'and its account has a quota of requests a day; over either, 429 with `Retry-After` and `violated-policies`. ' +
          'Quotas and what is used of them: `GET /api/v1/user-api/usage`. ' +
          "Place data © OpenStreetMap contributors (ODbL) and the other sources named in each place's `source`.",
      },
      ...(options.publicUrl ? { servers: [{ url: options.publicUrl }] } : {}),
      components: {
        headers: {
          'RateLimit-Policy': {
            description:
              'The limits that apply to this request (structured-field list): `"token";q=1200;w=60` (units a token may spend a minute), ' +
              '`"daily";q=10000;w=86400` (the account\'s requests a UTC day), or `"ip";q=300;w=60` for requests without a valid token',
            schema: { type: 'string' },
            example: '"token";q=1200;w=60, "daily";q=10000;w=86400',
          },
          RateLimit: {
            description: 'What is left of each policy after this request (`r`) and the seconds until it is whole again (`t`)',
            schema: { type: 'string' },
            example: '"token";r=1198;t=1, "daily";r=9990;t=43200',
          },
          'Retry-After': { description: 'Seconds to wait before the request can succeed', schema: { type: 'integer', minimum: 1 } },
        },
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'A personal access token (`la_pat_…`) with the scope the operation names',
          },
        },
      },
      tags: [
        { name: 'search', description: 'Searching the catalog; every map search is saved for the account' },
        { name: 'reference', description: 'The taxonomy and countries that searches understand' },
        { name: 'account', description: "The account's quotas and usage" },
        { name: 'health', description: 'Liveness and readiness, for load balancers and orchestrators' },
      ],
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    transform: ({ schema, url, route }) => {
      if (!apiPath.test(url)) return { schema: { ...schema, hide: true } as typeof schema, url };
      const scope = route.config?.scope;
      const response = { ...(schema.response as Record<string, unknown> | undefined) };
      if (scope) {
        response['401'] ??= problem('Missing, malformed, unknown, expired or revoked token');
        response['403'] ??= problem(`The token lacks the \`${scope}\` scope`);
      }
      const validated = ['querystring', 'body', 'params', 'headers'].some((k) => (schema as Record<string, unknown>)[k] !== undefined);
      if (validated) response['400'] ??= problem('Invalid request: `errors` lists each bad field and what is allowed');
      response['429'] ??= problem('Over the rate limit or a quota: `violated-policies` names it, `Retry-After` says when to come back');
      response['500'] ??= problem('Internal server error (quote the request id)');
      // Every route that writes can find the disk full; the GET routes that write (a saved search) say so in their own schema.
      const methods = [route.method].flat();
      if (methods.some((m) => m !== 'GET' && m !== 'HEAD')) response['507'] ??= problem(diskFullDescription);
      const described = scope
        ? {
            security: [{ bearerAuth: [] }],
            description:
              `${(schema as { description?: string }).description ?? ''}\n\nRequires a token with the \`${scope}\` scope.`.trim(),
          }
        : {};
      return { schema: { ...schema, ...described, response }, url };
    },
  });

  let cached: OpenApiDocument | undefined;
  const document = (): OpenApiDocument => {
    cached ??= withRateLimitHeaders(errorsAsProblemJson(structuredClone(app.swagger() as unknown as OpenApiDocument)));
    return cached;
  };

  app.get('/openapi.json', { schema: { hide: true } }, async () => document());
  // The page has no script and one inline style sheet, allowed by its hash; it may not be framed.
  const docsPolicy = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(docsCss).digest('base64')}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
  app.get('/docs', { schema: { hide: true } }, async (_request, reply) =>
    reply.header('content-security-policy', docsPolicy).type('text/html; charset=utf-8').send(renderDocsPage(document())),
  );
});

/** Every answer carries the RateLimit fields, and a 429 says when to come back. */
function withRateLimitHeaders(doc: OpenApiDocument): OpenApiDocument {
  const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item)) {
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        response.headers = {
          ...response.headers,
          'RateLimit-Policy': ref('RateLimit-Policy'),
          RateLimit: ref('RateLimit'),
          ...(status === '429' ? { 'Retry-After': ref('Retry-After') } : {}),
        };
      }
    }
  }
  return doc;
}

/** Error responses are served as application/problem+json; the generator labels every response application/json. */
function errorsAsProblemJson(doc: OpenApiDocument): OpenApiDocument {
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item)) {
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        const json = response.content?.['application/json'];
        if (Number(status) >= 400 && json && response.content) {
          delete response.content['application/json'];
          response.content['application/problem+json'] = json;
        }
      }
    }
  }
  return doc;
}
