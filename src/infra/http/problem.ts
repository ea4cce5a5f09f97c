import { type Static, Type } from '@sinclair/typebox';

/** RFC 9457 problem document: the body of every error response. */
export const ProblemSchema = Type.Object(
  {
    type: Type.String({
      description: 'URI reference naming the error kind',
      examples: ['https://leadatlas.dev/problems/validation_failed'],
    }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    instance: Type.String({ description: 'The request path' }),
    request_id: Type.String(),
    code: Type.String({ description: 'Stable machine-readable error code' }),
    retry_after: Type.Optional(Type.Integer({ description: 'With 429: seconds to wait, as in the Retry-After header' })),
    'violated-policies': Type.Optional(
      Type.Array(Type.String(), {
        description:
          'With 429: the exceeded policies (`token`, `daily`, `ip`, `export-rows`, `concurrent-exports`), as draft-ietf-httpapi-ratelimit-headers names this member',
      }),
    ),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          field: Type.String({ description: 'Where the bad value is, e.g. `query.per_page`' }),
          message: Type.String(),
          allowed: Type.Optional(Type.Unknown({ description: 'What would be accepted: a range, a list of values or a pattern' })),
        }),
      ),
    ),
  },
  { $id: 'Problem', additionalProperties: true, description: 'application/problem+json (RFC 9457)' },
);
export type Problem = Static<typeof ProblemSchema>;

export const problemTypeBase = 'https://leadatlas.dev/problems/';

/** A write the disk has no room for (`infra/storage.ts`): the path, the bytes free and needed; nothing half-written. */
export const diskFullDescription =
  'The disk is full (`insufficient_storage`): `path`, `free_bytes` and `needed_bytes` say where and how much; nothing was half-written, retry once space is freed';

/** Response schema entries for the errors a route can answer, for the OpenAPI document. */
export function problemResponses(...statuses: number[]): Record<number, unknown> {
  const descriptions: Record<number, string> = {
    400: 'Invalid request: `errors` lists each bad field and what is allowed',
    401: 'Missing, malformed, unknown, expired or revoked token',
    403: 'The token lacks the scope this route needs',
    404: 'Not found (or owned by another account)',
    406: 'Not acceptable',
    409: 'Conflict',
    410: 'Gone: the link has expired',
    415: 'Unsupported media type',
    429: 'Over the rate limit or a quota: `violated-policies` names it, `Retry-After` says when to come back',
    500: 'Internal server error',
    507: diskFullDescription,
  };
  const out: Record<number, unknown> = {};
  for (const s of statuses) out[s] = Type.Ref('Problem', { description: descriptions[s] ?? 'Error' });
  return out;
}

/** Routes that read through the read pool can answer 503 when too many reads are queued. */
export const overloaded = {
  503: Type.Ref('Problem', { description: 'Too many reads are waiting for the database: retry after the Retry-After header (seconds)' }),
};

/**
 * Routes whose open filter (`open_now`, `open_at`) may need the opening-hours pass: 503 also when the search ran
 * past its time budget or what it needs is still being prepared (docs/opening-hours.md).
 */
export const overloadedOrPreparing = {
  503: Type.Ref('Problem', {
    description:
      'Retry after the Retry-After header (seconds): too many reads are waiting for the database (`unavailable`), the search ran past its time budget (`time_budget_exceeded`), or what it needs is being prepared (`not_ready`, `preparing: opening_hours`: the opening hours after a start, an import or a new day)',
  }),
};

/** Routes that answer 503 `not_ready` while the opening hours an open search needs are being computed. */
export const preparing = {
  503: Type.Ref('Problem', {
    description:
      'The opening hours of an open search (`open_now`, `open_at`) are being computed (`not_ready`, `preparing: opening_hours`): retry after the Retry-After header (seconds)',
  }),
};
