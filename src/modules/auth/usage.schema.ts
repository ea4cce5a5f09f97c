import { type Static, Type } from '@sinclair/typebox';

const quota = (what: string, period: string) =>
  Type.Object({
    used: Type.Integer({ description: `${what} so far ${period}` }),
    limit: Type.Integer({ description: `The account's quota of ${what.toLowerCase()} ${period}` }),
    remaining: Type.Integer({ description: 'What is left: `limit - used`, never below 0' }),
    resets_at: Type.String({
      format: 'date-time',
      description: `When the count starts again (${period === 'today' ? 'midnight UTC' : 'the first of next month, UTC'})`,
    }),
    custom: Type.Boolean({ description: 'true when an administrator set this quota for the account; false: the default' }),
  });

export const UsageSchema = Type.Object({
  requests: quota('API requests', 'today'),
  export_rows: quota('Exported rows', 'this month'),
  match_rows: quota('Rows of lists matched by match jobs', 'this month'),
  concurrent_exports: Type.Object({
    running: Type.Integer({ description: 'Exports of the account streaming now' }),
    limit: Type.Integer({ description: 'How many may run at once; another one answers 429 until one ends' }),
    custom: Type.Boolean(),
  }),
  rate_limit: Type.Object(
    {
      policy: Type.Literal('token', { description: 'The name in the `RateLimit-Policy` and `RateLimit` headers' }),
      limit: Type.Integer({ description: 'Units a token may spend per window, all at once or spread (the refill is continuous)' }),
      window_seconds: Type.Integer(),
      costs: Type.Record(Type.String(), Type.Integer(), {
        description: 'Units a request costs, by the scope its route needs',
        examples: [{ 'places:read': 1, search: 2, export: 20 }],
      }),
    },
    { description: "Each token's rate limit; what is left now is in this answer's `RateLimit` header" },
  ),
});
export type Usage = Static<typeof UsageSchema>;
