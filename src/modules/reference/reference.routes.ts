import type { FastifyInstance } from 'fastify';
import type { Db } from '../../infra/db/database.ts';
import type { ReadPool } from '../../infra/db/read-pool.ts';
import { overloaded, problemResponses } from '../../infra/http/problem.ts';
import { requestLang } from '../../infra/http/request-lang.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { categoryIndexFor } from '../taxonomy/taxonomy.ts';
import type { ReferenceReadTasks } from './reference.reads.ts';
import { CategoriesQuerySchema, CategoriesResponseSchema, CountriesQuerySchema, CountriesResponseSchema } from './reference.schema.ts';
import { ReferenceService } from './reference.service.ts';

export interface ReferenceRoutesOptions {
  db: Db;
  reads: ReadPool<ReferenceReadTasks>;
}

export async function referenceRoutes(appBase: FastifyInstance, options: ReferenceRoutesOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  const service = new ReferenceService({ ...options, categories: () => categoryIndexFor(options.db) });
  const counts = 'Place counts are exact (counted again after any change to the catalog).';

  app.get(
    '/api/v2/categories',
    {
      config: { scope: 'places:read' },
      schema: {
        tags: ['reference'],
        operationId: 'listCategories',
        summary: 'The category taxonomy',
        description: `Every category a \`type=\` search understands: slug, name in the language asked for (\`lang\` or Accept-Language), parent and place counts. ${counts}`,
        querystring: CategoriesQuerySchema,
        response: { 200: CategoriesResponseSchema, ...problemResponses(400), ...overloaded },
      },
    },
    async (request) => service.listCategories(requestLang(request, request.query.lang), request.query.parent),
  );

  app.get(
    '/api/v2/countries',
    {
      config: { scope: 'places:read' },
      schema: {
        tags: ['reference'],
        operationId: 'listCountries',
        summary: 'Countries with ISO codes and place counts',
        description: `Every country the gazetteer knows, with ISO 3166-1 alpha-2 and alpha-3 codes, names (localised with \`lang\` or Accept-Language) and place counts. ${counts}`,
        querystring: CountriesQuerySchema,
        response: { 200: CountriesResponseSchema, ...problemResponses(400), ...overloaded },
      },
    },
    async (request) => service.listCountries(requestLang(request, request.query.lang)),
  );
}
