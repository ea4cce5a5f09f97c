import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Db } from '../infra/db/database.ts';
import { AppError } from '../infra/errors.ts';
import { problemResponses } from '../infra/http/problem.ts';
import { diskStates, type Storage } from '../infra/storage.ts';

/** How long a readiness check waits for the database before it calls it down. */
const checkTimeoutMs = 1000;

type Check = 'ok' | 'down' | 'not configured';

/**
 * `/healthz` (liveness: the process answers) and `/readyz` (readiness: the database answers, and Redis
 * when the limits are shared through it, and the disks it writes to have room (`DISK_MIN_FREE_MB`); not
 * while the server is stopping). A load balancer sends
 * traffic to nodes whose `/readyz` answers 200 and takes it away from a node that says 503, which is
 * also what a node says from the moment it is told to stop until it has finished its requests.
 */
export const healthPlugin = fp(async function healthPlugin(
  app: FastifyInstance,
  { db, storage, searchIndex }: { db: Db; storage?: Storage; searchIndex?: () => Record<string, unknown> },
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
        summary: 'Readiness: the database answers, Redis when it is configured, and the disks have room',
        response: {
          200: Type.Object({
            status: Type.Literal('ready'),
            checks: Type.Object({
              database: Type.Literal('ok'),
              redis: Type.Union([Type.Literal('ok'), Type.Literal('not configured')]),
              disk: Type.Literal('ok'),
            }),
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
      const disks = storage ? diskStates(storage) : [];
      const checks: { database: Check; redis: Check; disk: 'ok' | 'full' } = {
        database: database ? 'ok' : 'down',
        redis: store.store === 'memory' ? 'not configured' : store.ok ? 'ok' : 'down',
        disk: disks.some((d) => d.full) ? 'full' : 'ok',
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
      const full = disks.filter((d) => d.full);
      if (full.length > 0)
        throw new AppError(
          'unavailable',
          `Not ready: the disk is full at ${full.map((d) => `${d.place.path} (${d.place.label}: ${d.freeBytes} bytes free)`).join(' and ')}; at least ${storage!.minFreeBytes} bytes must stay free (DISK_MIN_FREE_MB)`,
          {
            checks,
            reason: 'disk_full',
            disks: full.map((d) => ({ label: d.place.label, path: d.place.path, free_bytes: d.freeBytes })),
          },
          { 'retry-after': '60' },
        );
      const ready = { status: 'ready' as const, checks: checks as { database: 'ok'; redis: 'ok' | 'not configured'; disk: 'ok' } };
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
