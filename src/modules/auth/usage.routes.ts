import type { FastifyInstance } from 'fastify';
import { problemResponses } from '../../infra/http/problem.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { scopeCosts } from '../../infra/ratelimit/costs.ts';
import type { AccountUsage } from './quotas.service.ts';
import { type Usage, UsageSchema } from './usage.schema.ts';

/** `GET /api/v1/user-api/usage`: the account's quotas and what it has used of them. */
export async function usageRoutes(app: FastifyInstance): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get(
    '/api/v1/user-api/usage',
    {
      config: { scope: 'places:read' },
      schema: {
        tags: ['account'],
        summary: "The account's quotas and what it has used of them",
        description:
          'API requests today (UTC) against the daily quota, exported rows this month against the monthly quota, exports running ' +
          "against the concurrent-export limit, and the token's rate limit with what each kind of request costs. Quotas are " +
          'per account (an administrator can change them); the rate limit is per token.',
        response: { 200: UsageSchema, ...problemResponses(401, 403, 429) },
      },
    },
    async (request) => usageBody(await app.quotas.usageOf(request.auth!.accountId), app.meter.tokenPolicy),
  );
}

function usageBody(u: AccountUsage, policy: { quota: number; windowSeconds: number }): Usage {
  const q = u.quotas;
  return {
    requests: {
      used: u.requestsToday,
      limit: q.requestsPerDay,
      remaining: Math.max(0, q.requestsPerDay - u.requestsToday),
      resets_at: u.requestsResetAt,
      custom: q.custom.requestsPerDay,
    },
    export_rows: {
      used: u.exportRowsThisMonth,
      limit: q.exportRowsPerMonth,
      remaining: Math.max(0, q.exportRowsPerMonth - u.exportRowsThisMonth),
      resets_at: u.exportRowsResetAt,
      custom: q.custom.exportRowsPerMonth,
    },
    match_rows: {
      used: u.matchRowsThisMonth,
      limit: q.matchRowsPerMonth,
      remaining: Math.max(0, q.matchRowsPerMonth - u.matchRowsThisMonth),
      resets_at: u.exportRowsResetAt,
      custom: q.custom.matchRowsPerMonth,
    },
    concurrent_exports: { running: u.runningExports, limit: q.concurrentExports, custom: q.custom.concurrentExports },
    rate_limit: { policy: 'token', limit: policy.quota, window_seconds: policy.windowSeconds, costs: { ...scopeCosts } },
  };
}
