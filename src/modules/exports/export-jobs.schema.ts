import { type Static, Type } from '@sinclair/typebox';
import { placeFields } from '../places/places.schema.ts';
import { WebhookUrlSchema } from '../webhooks/webhooks.schema.ts';
import { type ExportFormatName, exportFormatNames } from './formats/index.ts';

export const jobsPerPage = { default: 20, minimum: 1, maximum: 100 } as const;

export const JobIdParamsSchema = Type.Object(
  {
    id: Type.String({ pattern: '^job_[A-Za-z0-9_-]{14}$', description: 'An export job of this account', examples: ['job_Zk3Qw9pL2mXa7Q'] }),
  },
  { additionalProperties: false },
);

export const CreateJobSchema = Type.Object(
  {
    search_id: Type.String({
      pattern: '^srch_[a-z2-7]{16}$',
      description: 'A saved search of this account (`search_id` of a search response)',
      examples: ['srch_3f7kq2m5x9ab4cde'],
    }),
    format: Type.Optional(
      Type.Unsafe<ExportFormatName>({
        type: 'string',
        enum: exportFormatNames,
        default: 'csv',
        description: 'As for `GET /api/v2/map/export`',
      }),
    ),
    fields: Type.Optional(
      Type.String({
        maxLength: 1000,
        description: `Comma-separated columns, in this order; all when absent. Known: ${placeFields.join(', ')}`,
      }),
    ),
    webhook_url: Type.Optional(WebhookUrlSchema('the exports README')),
  },
  { additionalProperties: false },
);
export type CreateJob = Static<typeof CreateJobSchema>;

export const JobsQuerySchema = Type.Object(
  {
    per_page: Type.Optional(
      Type.Integer({
        ...jobsPerPage,
        description: `Jobs per page: default ${jobsPerPage.default}, from ${jobsPerPage.minimum} to ${jobsPerPage.maximum}`,
      }),
    ),
    cursor: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,200}$', description: '`next_cursor` of the previous page' })),
  },
  { additionalProperties: false },
);
export type JobsQuery = Static<typeof JobsQuerySchema>;

export const DownloadQuerySchema = Type.Object(
  {
    expires: Type.Integer({ minimum: 0, maximum: 99_999_999_999, description: 'Unix time the link expires at' }),
    signature: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'HMAC-SHA256 of the job id and `expires`' }),
  },
  { additionalProperties: false },
);
export type DownloadQuery = Static<typeof DownloadQuerySchema>;

const nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const JobSchema = Type.Object({
  id: Type.String({ examples: ['job_Zk3Qw9pL2mXa7Q'] }),
  status: Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('succeeded'), Type.Literal('failed')], {
    description: 'queued → running → succeeded | failed',
  }),
  search_id: Type.String(),
  format: Type.String(),
  fields: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'The columns asked for; null: all' }),
  webhook_url: nullable(Type.String()),
  rows: Type.Integer({ description: "Rows written so far while running (an xlsx counts at its end); the file's rows once succeeded" }),
  limited: Type.Boolean({ description: "The file stopped at the account's monthly row quota" }),
  failure: nullable(Type.String({ description: 'Why the job failed' })),
  attempts: Type.Integer({ description: 'Times the job was started (more than one when a server stopped while running it)' }),
  created_at: Type.String({ format: 'date-time' }),
  started_at: nullable(Type.String({ format: 'date-time' })),
  finished_at: nullable(Type.String({ format: 'date-time' })),
  download: Type.Union([
    Type.Object({
      url: Type.String({ description: 'Works without a token until `expires_at`; each read of the job gives a fresh one' }),
      expires_at: Type.String({ format: 'date-time' }),
      bytes: Type.Integer(),
    }),
    Type.Null(),
  ]),
});

export const JobsPageSchema = Type.Object({
  data: Type.Array(JobSchema, { description: 'Newest first' }),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});
