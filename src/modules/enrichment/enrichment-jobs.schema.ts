import { type Static, Type } from '@sinclair/typebox';
import { WebhookUrlSchema } from '../webhooks/webhooks.schema.ts';

export const enrichmentJobsPerPage = { default: 20, minimum: 1, maximum: 100 } as const;

export const EnrichmentJobIdParamsSchema = Type.Object(
  {
    id: Type.String({
      pattern: '^enr_[A-Za-z0-9_-]{14}$',
      description: 'An enrichment job of this account',
      examples: ['enr_Zk3Qw9pL2mXa7Q'],
    }),
  },
  { additionalProperties: false },
);

export const CreateEnrichmentJobSchema = Type.Object(
  {
    search_id: Type.String({
      pattern: '^srch_[a-z2-7]{16}$',
      description: 'A saved search of this account (`search_id` of a search response)',
      examples: ['srch_3f7kq2m5x9ab4cde'],
    }),
    webhook_url: Type.Optional(WebhookUrlSchema('the enrichment README, Jobs')),
  },
  { additionalProperties: false },
);
export type CreateEnrichmentJob = Static<typeof CreateEnrichmentJobSchema>;

export const EnrichmentJobsQuerySchema = Type.Object(
  {
    per_page: Type.Optional(
      Type.Integer({
        ...enrichmentJobsPerPage,
        description: `Jobs per page: default ${enrichmentJobsPerPage.default}, from ${enrichmentJobsPerPage.minimum} to ${enrichmentJobsPerPage.maximum}`,
      }),
    ),
    cursor: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,200}$', description: '`next_cursor` of the previous page' })),
  },
  { additionalProperties: false },
);
export type EnrichmentJobsQuery = Static<typeof EnrichmentJobsQuerySchema>;

const nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const EnrichmentJobSchema = Type.Object({
  id: Type.String({ examples: ['enr_Zk3Qw9pL2mXa7Q'] }),
  status: Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('succeeded'), Type.Literal('failed')], {
    description: 'queued → running (its sites first in the enrichment queue) → succeeded (every site crawled) | failed',
  }),
  search_id: Type.String(),
  webhook_url: nullable(Type.String({ description: 'Where the end of the job is told' })),
  places: Type.Integer({ description: "The search's places queued (with a website or a business email), within the month's quota" }),
  limited: Type.Boolean({ description: "The search had more such places than the account's monthly enrichment quota left" }),
  sites: Type.Integer({ description: 'Their sites (places that share a website share one crawl)' }),
  sites_done: Type.Integer({ description: 'Sites crawled so far (or fresh already: crawled within the refresh period)' }),
  places_with_email: Type.Integer({
    description:
      'Of the places it queued, those with an email once the job has succeeded (their own or found on their website); other places sharing their sites are not counted',
  }),
  failure: nullable(Type.String({ description: 'Why the job failed' })),
  attempts: Type.Integer({ description: 'Times the job was started (more than one when a server stopped while queueing it)' }),
  created_at: Type.String({ format: 'date-time' }),
  started_at: nullable(Type.String({ format: 'date-time' })),
  finished_at: nullable(Type.String({ format: 'date-time' })),
});
export type EnrichmentJobView = Static<typeof EnrichmentJobSchema>;

export const EnrichmentJobsPageSchema = Type.Object({
  data: Type.Array(EnrichmentJobSchema, { description: 'Newest first' }),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});
