import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Type } from '@sinclair/typebox';
import type { Db } from '../infra/db/database.ts';
import { AppError } from '../infra/errors.ts';
import { problemResponses } from '../infra/http/problem.ts';

/** How long a readiness check waits for the database before it calls it down. */
const checkTimeoutMs = 1000;

type Check = 'ok' | 'down' | 'not configured';

/**
 * `/healthz` (liveness: the process answers) and `/readyz` (readiness: the database answers, and Redis
 * when the limits are shared through it; not while the server is stopping). A load balancer sends
 * traffic to nodes whose `/readyz` answers 200 and takes it away from a node that says 503, which is
 * also what a node says from the moment it is told to stop until it has finished its requests.
 */
export const healthPlugin = fp(async function healthPlugin(
  app: FastifyInstance,
  { db, searchIndex }: { db: Db; searchIndex?: () => Record<string, unknown> },
) {
  let stopping = false;
  app.addHook('preClose', async () => {
    stopping = true;
  });

  app.get(
    '/healthz',
    {
      schema: {
        tags: ['health'],
        summary: 'Liveness: the process answers',
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['health'],
        summary: 'Readiness: the database answers, and Redis when it is configured',
        response: {
          200: Type.Object({
            status: Type.Literal('ready'),
            checks: Type.Object({ database: Type.Literal('ok'), redis: Type.Union([Type.Literal('ok'), Type.Literal('not configured')]) }),
            search_index: Type.Optional(
              Type.Object(
                {
                  engine: Type.Union([Type.Literal('memory'), Type.Literal('sql')]),
                  status: Type.Optional(Type.Union([Type.Literal('building'), Type.Literal('ready'), Type.Literal('failed')])),
                  version: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
                  places: Type.Optional(Type.Integer()),
                  tail: Type.Optional(Type.Integer()),
                  builtMs: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
                },
                {
                  description:
                    'The search engine of this node: `sql`, or `memory` with its index status, the places version it holds, its places, those out of its sorted order, and how long its last build took',
                },
              ),
            ),
          }),
          ...problemResponses(503),
        },
      },
    },
    async () => {
      const [database, store] = await Promise.all([databaseAnswers(db), app.rateLimiter.health()]);
      const checks: { database: Check; redis: Check } = {
        database: database ? 'ok' : 'down',
        redis: store.store === 'memory' ? 'not configured' : store.ok ? 'ok' : 'down',
      };
      if (stopping)
        throw new AppError(
          'unavailable',
          'This node is stopping: it finishes the requests it has and takes no more',
          { checks, reason: 'stopping' },
          { 'retry-after': '1' },
        );
      if (checks.database !== 'ok' || checks.redis === 'down') {
        const down = Object.entries(checks)
          .filter(([, v]) => v === 'down')
          .map(([k]) => k);
        throw new AppError(
          'unavailable',
          `Not ready: ${down.join(' and ')} ${down.length > 1 ? 'do' : 'does'} not answer`,
          { checks, reason: 'dependency_down' },
          { 'retry-after': '1' },
        );
      }
      const ready = { status: 'ready' as const, checks: checks as { database: 'ok'; redis: 'ok' | 'not configured' } };
      return searchIndex ? { ...ready, search_index: searchIndex() } : ready;
    },
  );
});

async function databaseAnswers(db: Db): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), checkTimeoutMs)));
  const query = db.kysely
    .selectFrom('reference_data')
    .select('name')
    .limit(1)
    .execute()
    .then(
      () => true,
      () => false,
    );
  try {
    return await Promise.race([query, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
