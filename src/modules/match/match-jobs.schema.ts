import { type Static, Type } from '@sinclair/typebox';
import { WebhookUrlSchema } from '../webhooks/webhooks.schema.ts';
import { listFields } from './match-headers.ts';
import { listFormats } from './match-lists.ts';

/** Rows a list may have. */
export const maxListRows = 1_000_000;

/** The columns a job appends to each row of the list, in this order. */
export const resultColumns = [
  'leadatlas_place_id',
  'leadatlas_score',
  'leadatlas_decision',
  'leadatlas_name',
  'leadatlas_category',
  'leadatlas_status',
  'leadatlas_phone',
  'leadatlas_email',
  'leadatlas_website',
  'leadatlas_socials',
  'leadatlas_address',
  'leadatlas_reason',
] as const;

export const MatchJobIdParamsSchema = Type.Object(
  {
    id: Type.String({ pattern: '^mjob_[A-Za-z0-9_-]{14}$', description: 'A match job of this account', examples: ['mjob_Zk3Qw9pL2mXa7Q'] }),
  },
  { additionalProperties: false },
);

const MappingSchema = Type.Object(
  Object.fromEntries(listFields.map((f) => [f, Type.Optional(Type.String({ minLength: 1, maxLength: 200 }))])),
  {
    additionalProperties: false,
    description: `Which header of the list fills which field of a record (${listFields.join(', ')}); fields not given are recognised by their headers`,
    examples: [{ name: 'Account Name', city: 'Town' }],
  },
);
export type ColumnMappingInput = Static<typeof MappingSchema>;

/** The form fields of `POST /api/v2/match/jobs` besides the file (strings, as multipart sends them). */
export const MatchJobFormSchema = Type.Object(
  {
    format: Type.Optional(
      Type.Unsafe<(typeof listFormats)[number]>({
        type: 'string',
        enum: [...listFormats],
        description: "The file's format; by default from its name (`.csv`, `.xlsx`, `.ndjson`) or its first bytes",
      }),
    ),
    mapping: Type.Optional(Type.String({ maxLength: 4000, description: 'A JSON object: record field → header of the list' })),
    threshold: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1, description: "The lowest score that is a match; the matcher's default when absent" }),
    ),
    as_leads: Type.Optional(
      Type.Boolean({ description: 'Every matched place becomes a lead of the account, so `only_new` searches and exports leave it out' }),
    ),
    webhook_url: Type.Optional(WebhookUrlSchema('the exports README')),
  },
  { additionalProperties: false },
);
export type MatchJobForm = Static<typeof MatchJobFormSchema>;
export { MappingSchema };

const nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const MatchJobSchema = Type.Object({
  id: Type.String({ examples: ['mjob_Zk3Qw9pL2mXa7Q'] }),
  status: Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('succeeded'), Type.Literal('failed')], {
    description: 'queued → running → succeeded | failed',
  }),
  file_name: Type.String({ description: 'The uploaded file, as it was named' }),
  format: Type.String({ description: 'csv, xlsx or ndjson' }),
  mapping: Type.Record(Type.String(), Type.String(), { description: 'Record field → header of the list, as given or recognised' }),
  headers: Type.Array(Type.String(), { description: 'The headers of the list, in its order' }),
  threshold: Type.Union([Type.Number(), Type.Null()], { description: "null: the matcher's default" }),
  as_leads: Type.Boolean(),
  webhook_url: nullable(Type.String()),
  rows: Type.Integer({ description: 'Data rows of the list' }),
  progress: Type.Object({
    done: Type.Integer({ description: 'Rows written so far' }),
    matched: Type.Integer({ description: 'Rows that found their place' }),
    unmatched: Type.Integer({ description: 'Rows read without a match' }),
    closed: Type.Integer({ description: 'Matched rows whose place is closed or retired' }),
    bad_rows: Type.Integer({ description: 'Rows that could not be matched, each with its reason in the file' }),
  }),
  failure: nullable(Type.String({ description: 'Why the job failed' })),
  attempts: Type.Integer(),
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
export type MatchJobView = Static<typeof MatchJobSchema>;

export const MatchJobsQuerySchema = Type.Object(
  {
    per_page: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Jobs per page: default 20, from 1 to 100' }),
    ),
    cursor: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,200}$', description: '`next_cursor` of the previous page' })),
  },
  { additionalProperties: false },
);
export type MatchJobsQuery = Static<typeof MatchJobsQuerySchema>;

export const MatchJobsPageSchema = Type.Object({
  data: Type.Array(MatchJobSchema, { description: 'Newest first' }),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});
