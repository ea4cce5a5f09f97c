import type { FastifyInstance } from 'fastify';
import type { Db } from '../../infra/db/database.ts';
import { problemResponses } from '../../infra/http/problem.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import {
  CreateEnrichmentJobSchema,
  EnrichmentJobIdParamsSchema,
  EnrichmentJobSchema,
  EnrichmentJobsPageSchema,
  EnrichmentJobsQuerySchema,
} from './enrichment-jobs.schema.ts';
import {
  createEnrichmentJob,
  type EnrichmentJobRunner,
  enrichmentJobView,
  getEnrichmentJob,
  listEnrichmentJobs,
} from './enrichment-jobs.service.ts';

/** Enrichment jobs: a saved search's places first in the enrichment queue, followed to the end of their crawls. */
export async function enrichmentJobsRoutes(app: FastifyInstance, { db, runner }: { db: Db; runner: EnrichmentJobRunner }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post(
    '/api/v2/enrichments',
    {
      config: { scope: 'enrich' },
      schema: {
        tags: ['enrichment'],
        summary: "Enrich a saved search's places from their own websites",
        description:
          "Queues a job that puts the search's places with a website (or a business email's domain) first in the enrichment queue: " +
          'their sites are crawled for emails, phones and social profiles (see the README, Enrichment), which then show in `contacts`, ' +
          'fill an empty `email` or `phone`, and count for `has_email`/`has_social` and in exports. With `webhook_url`, the end of the job ' +
          "(`enrichment_job.succeeded` or `enrichment_job.failed`) is POSTed there, signed as export jobs' events are. " +
          'Answers 202 with the job and its `Location`. ' +
          "The places count against the account's monthly enrichment quota; a site crawled within the refresh period is not fetched again. " +
          'A search of another account answers 404.',
        body: CreateEnrichmentJobSchema,
        response: { 202: EnrichmentJobSchema, ...problemResponses(400, 401, 403, 404, 415, 429) },
      },
    },
    async (request, reply) => {
      const row = await createEnrichmentJob(db, app.quotas, request.auth!.accountId, {
        searchId: request.body.search_id,
        webhookUrl: request.body.webhook_url,
      });
      runner.poke();
      reply.code(202).header('location', `/api/v2/enrichments/${row.public_id}`);
      return enrichmentJobView(row);
    },
  );

  r.get(
    '/api/v2/enrichments',
    {
      config: { scope: 'enrich', cost: 1 },
      schema: {
        tags: ['enrichment'],
        summary: "The account's enrichment jobs, newest first",
        querystring: EnrichmentJobsQuerySchema,
        response: { 200: EnrichmentJobsPageSchema, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request) => listEnrichmentJobs(db, request.auth!.accountId, request.query),
  );

  r.get(
    '/api/v2/enrichments/:id',
    {
      config: { scope: 'enrich', cost: 1 },
      schema: {
        tags: ['enrichment'],
        summary: 'An enrichment job: status, places, sites crawled so far',
        params: EnrichmentJobIdParamsSchema,
        response: { 200: EnrichmentJobSchema, ...problemResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request) => getEnrichmentJob(db, request.auth!.accountId, request.params.id),
  );
}
