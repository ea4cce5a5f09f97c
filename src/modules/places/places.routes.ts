import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../infra/db/database.ts';
import { problemResponses } from '../../infra/http/problem.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { PlaceDetailsSchema, publicPlaceIdPattern } from './places.schema.ts';
import { getPlaceDetails } from './places.service.ts';

export const PlaceParamsSchema = Type.Object(
  {
    id: Type.String({
      pattern: publicPlaceIdPattern,
      description: 'Public place id (`id` of a search result, an export or a lead)',
      examples: ['plc_3f7kq2m5x7ab4cde'],
    }),
  },
  { additionalProperties: false },
);

/** One place of the catalog by its public id. */
export async function placesRoutes(app: FastifyInstance, { db }: { db: Db }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get(
    '/api/v1/places/:id',
    {
      config: { scope: 'places:read' },
      schema: {
        tags: ['places'],
        operationId: 'getPlace',
        summary: 'One place with every public field and its origin',
        description:
          'The place in the public shape of search results and exports (every field), plus `origin`: the source record it comes from and the import that wrote it. ' +
          'A malformed id answers 400 naming `params.id`; an id no place has answers 404.',
        params: PlaceParamsSchema,
        response: { 200: PlaceDetailsSchema, ...problemResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request) => getPlaceDetails(db, request.params.id),
  );
}
