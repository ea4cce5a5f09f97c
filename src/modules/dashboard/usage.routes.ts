import type { FastifyInstance } from 'fastify';
import { usageByDay } from './dashboard.service.ts';
import type { PageOptions } from './page-kit.ts';
import { usagePage } from './pages.ts';

const usageDays = 30;

/** The account's API requests per day, its quotas and what is left of them. */
export async function usageRoutes(app: FastifyInstance, { kit, db }: PageOptions): Promise<void> {
  app.addHook('preHandler', kit.requireSession);

  app.get('/usage', async (request, reply) => {
    const accountId = kit.session(request).accountId;
    const [days, usage] = await Promise.all([usageByDay(db, accountId, usageDays), app.quotas.usageOf(accountId)]);
    return kit.send(reply, usagePage(kit.ctx(request), days, usage, app.meter.tokenPolicy.quota));
  });
}
