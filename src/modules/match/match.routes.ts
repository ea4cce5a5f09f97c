import type { FastifyInstance } from 'fastify';
import { problemResponses } from '../../infra/http/problem.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { defaultMatchThreshold, MatchRequestSchema, MatchResponseSchema, maxRecordsPerCall } from './match.schema.ts';
import { type MatchDeps, matchRecords } from './match.service.ts';

/** `POST /api/v2/match`: a customer's records, each with its place in the catalog or none. */
export async function matchRoutes(app: FastifyInstance, { deps }: { deps: MatchDeps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.post(
    '/api/v2/match',
    {
      config: { scope: 'match' },
      schema: {
        tags: ['match'],
        summary: 'Find your own records (a CRM list) in the catalog, each with a score',
        description:
          `Up to ${maxRecordsPerCall} records; only \`ref\` and \`name\` are needed, any other field helps (a city in any language, ` +
          'an address, a phone as written in the country, a website or bare domain, coordinates). Each result, in the order of the ' +
          `request, has the matched place (as search returns it; closed and retired places match too, \`status\` says so) when the best ` +
          `candidate scores at least \`threshold\` (default ${defaultMatchThreshold}) and clearly beats the runner-up, else \`match: null\` ` +
          'with the candidates. A record with a problem of its own (no name, an unknown country, coordinates out of range) gets an ' +
          '`error` in its result; the call answers 400 only for a body that is not a list of records, more than ' +
          `${maxRecordsPerCall} records or a threshold outside 0–1. How the score is made and its measured precision: docs/matching.md.`,
        body: MatchRequestSchema,
        response: { 200: MatchResponseSchema, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request) => {
      const threshold = request.body.threshold ?? defaultMatchThreshold;
      const results = await matchRecords(deps, request.body.records, { threshold });
      return {
        results: results.map(({ match, ...rest }) => ({
          ...rest,
          match: match && { place: match.place, score: match.score, evidence: match.evidence },
        })),
        threshold,
      };
    },
  );
}
