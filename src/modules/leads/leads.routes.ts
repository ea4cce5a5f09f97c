import type { FastifyInstance } from 'fastify';
import type { Db } from '../../infra/db/database.ts';
import { problemResponses } from '../../infra/http/problem.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { LeadCategoriesSchema, LeadsPageSchema, LeadsQuerySchema, leadsPerPage } from './leads.schema.ts';
import { leadCategories, listAccountLeads } from './leads.service.ts';

/** The account's leads: the places it has exported. */
export async function leadsRoutes(app: FastifyInstance, { db }: { db: Db }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/api/v1/user-api/places',
    {
      config: { scope: 'places:read' },
      schema: {
        tags: ['leads'],
        summary: "The account's leads: places it has exported, newest first",
        description:
          `Every place the account has exported (once per place, however often), newest export first. ` +
          `\`per_page\` defaults to ${leadsPerPage.default} and allows ${leadsPerPage.minimum} to ${leadsPerPage.maximum}; ` +
          'a value outside that range answers 400 naming the range. Page with `next_cursor` (stable while new exports arrive) or with `page`.',
        querystring: LeadsQuerySchema,
        response: { 200: LeadsPageSchema, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request) => listAccountLeads(db, request.auth!.accountId, request.query),
  );

  r.get(
    '/api/v1/user-api/categories',
    {
      config: { scope: 'places:read' },
      schema: {
        tags: ['leads'],
        summary: "Categories of the account's leads, with counts",
        response: { 200: LeadCategoriesSchema, ...problemResponses(401, 403, 429) },
      },
    },
    async (request) => leadCategories(db, request.auth!.accountId),
  );
}
