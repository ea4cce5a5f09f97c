import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { problemResponses } from '../../infra/http/problem.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import {
  DeleteAllQuerySchema,
  DeletedSchema,
  maxCsvEntries,
  SuppressionParamsSchema,
  SuppressionsAddedSchema,
  type SuppressionsBody,
  SuppressionsBodySchema,
  SuppressionsListQuerySchema,
  SuppressionsPageSchema,
  SuppressionsUploadQuerySchema,
} from './suppressions.schema.ts';
import {
  addSuppressions,
  listSuppressions,
  removeAllSuppressions,
  removeSuppression,
  uploadSuppressionsCsv,
} from './suppressions.service.ts';

const matching =
  'Phone numbers match a place whose number is the same in E.164, however either is written (a number written nationally needs its `country`); ' +
  'domains match every website of that registrable domain (`www.`, scheme, path and subdomains ignored: `shop.example.com` suppresses `example.com` and all its subdomains); ' +
  'emails match the email address of a place that has one in the catalog (case ignored); place ids match that place. ' +
  'Suppressed places are left out of every search, export and lead list of the account.';

/** The account's suppression list: places matching it never show in its searches, exports or leads. */
export async function suppressionsRoutes(app: FastifyInstance, { db }: { db: Db }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  // A CSV body reaches the handler as the request stream, read as it arrives (lists of millions of lines).
  app.addContentTypeParser('text/csv', (_request, payload, done) => done(null, payload));
  // JSON and CSV only: any other body (text/plain included) answers 415.
  app.removeContentTypeParser('text/plain');

  r.post(
    '/api/v1/user-api/suppressions',
    {
      config: { scope: 'suppressions:write' },
      schema: {
        tags: ['suppressions'],
        operationId: 'addSuppressions',
        summary: 'Add phone numbers, domains, emails or places to the suppression list',
        description:
          `A JSON body \`{entries: [...]}\` (each a value whose type is detected, or \`{type, value, country}\`), or a CSV (\`Content-Type: text/csv\`) ` +
          `streamed as it arrives, up to ${maxCsvEntries.toLocaleString('en')} lines: one value a line, or \`type,value[,country]\`, or a header naming the ` +
          'columns (`type,value,country`) or the type of every line (`phone`). Entries already on the list are counted as duplicates. ' +
          'An upload is added whole or not at all. ' +
          matching,
        querystring: SuppressionsUploadQuerySchema,
        body: {
          content: {
            'application/json': { schema: SuppressionsBodySchema },
            // Read as a stream and checked line by line as it arrives (the schema cannot see a stream).
            'text/csv': {
              schema: Type.Unknown({ description: 'CSV text: one entry a line, or type,value[,country], optionally under a header row' }),
            },
          },
        },
        response: { 200: SuppressionsAddedSchema, ...problemResponses(400, 401, 403, 413, 415, 429) },
      },
    },
    async (request) => {
      const { query, body } = request;
      const accountId = request.auth!.accountId;
      if (body === undefined || body === null || typeof body !== 'object') {
        throw new AppError('validation_failed', 'Expected a JSON body {"entries": [...]} or a CSV body (Content-Type: text/csv)', {
          errors: [{ field: 'body', message: 'is missing', allowed: ['application/json', 'text/csv'] }],
        });
      }
      if (body instanceof Readable)
        return uploadSuppressionsCsv(db, accountId, body, { country: query.country, onInvalid: query.on_invalid });
      // A JSON body, checked against SuppressionsBodySchema (a body schema per content type is beyond the type provider).
      return addSuppressions(db, accountId, body as SuppressionsBody, query.on_invalid);
    },
  );

  r.get(
    '/api/v1/user-api/suppressions',
    {
      config: { scope: 'places:read' },
      schema: {
        tags: ['suppressions'],
        operationId: 'listSuppressions',
        summary: 'The suppression list, oldest first, with counts per type',
        description: `Pages with \`next_cursor\`; \`type\` narrows to one type. ${matching}`,
        querystring: SuppressionsListQuerySchema,
        response: { 200: SuppressionsPageSchema, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request) => listSuppressions(db, request.auth!.accountId, request.query),
  );

  r.delete(
    '/api/v1/user-api/suppressions/:id',
    {
      config: { scope: 'suppressions:write' },
      schema: {
        tags: ['suppressions'],
        operationId: 'deleteSuppression',
        summary: 'Remove one entry of the suppression list',
        description: "An id the account has no entry with (another account's entry too) answers 404.",
        params: SuppressionParamsSchema,
        response: { 200: DeletedSchema, ...problemResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request) => removeSuppression(db, request.auth!.accountId, request.params.id),
  );

  r.delete(
    '/api/v1/user-api/suppressions',
    {
      config: { scope: 'suppressions:write' },
      schema: {
        tags: ['suppressions'],
        operationId: 'deleteAllSuppressions',
        summary: 'Remove every entry of the suppression list',
        description: 'Needs `confirm=true`: without it the request answers 400 and nothing is removed.',
        querystring: DeleteAllQuerySchema,
        response: { 200: DeletedSchema, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request) => removeAllSuppressions(db, request.auth!.accountId),
  );
}
