import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../infra/errors.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import {
  createMonitor,
  deleteMonitor,
  latestMonitorEvents,
  listAccountMonitorRows,
  monitorView,
  setMonitorPaused,
} from '../monitors/monitors.service.ts';
import { IdParamsSchema, MonitorFormSchema } from './dashboard.schema.ts';
import { recentSearches } from './dashboard.service.ts';
import { parseForm } from './forms.ts';
import { type MonitorsPageView, monitorsPage } from './monitors.views.ts';
import type { PageOptions } from './page-kit.ts';

/** Monitors: the account's watched searches with their last events; watch, pause, resume, delete. */
export async function monitorsPageRoutes(appBase: FastifyInstance, { kit, db, config }: PageOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook('preHandler', kit.requireSession);
  const limits = { perAccount: config.MONITORS_PER_ACCOUNT, maxPlaces: config.MONITOR_MAX_PLACES };

  const view = async (request: FastifyRequest, error?: MonitorsPageView['error']): Promise<MonitorsPageView> => {
    const accountId = kit.session(request).accountId;
    const rows = await listAccountMonitorRows(db, accountId, 50);
    const events = await latestMonitorEvents(db, rows, 5);
    return {
      monitors: rows.map((row) => ({ monitor: monitorView(row), events: events.get(Number(row.id)) ?? [] })),
      searches: await recentSearches(db, accountId, 20),
      ...(error ? { error } : {}),
    };
  };
  const show = async (request: FastifyRequest, reply: FastifyReply, error?: AppError) =>
    kit.send(
      reply,
      monitorsPage(
        kit.ctx(request),
        await view(request, error ? { message: error.message, errors: error.extras.errors ?? [] } : undefined),
      ),
      error?.status ?? 200,
    );

  app.get('/monitors', async (request, reply) => show(request, reply));

  app.post('/monitors', async (request, reply) => {
    try {
      const form = parseForm(MonitorFormSchema, request.body, { messages: { webhook_url: 'must be an http(s) URL' } });
      await createMonitor(db, limits, kit.session(request).accountId, {
        search_id: form.search_id,
        ...(form.webhook_url ? { webhook_url: form.webhook_url } : {}),
      });
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500) throw error;
      return show(request, reply, error);
    }
    return reply.redirect('/monitors', 303);
  });

  for (const [action, paused] of [
    ['pause', true],
    ['resume', false],
  ] as const)
    app.post(`/monitors/:id/${action}`, { schema: { params: IdParamsSchema } }, async (request, reply) => {
      await setMonitorPaused(db, kit.session(request).accountId, request.params.id, paused);
      return reply.redirect('/monitors', 303);
    });

  app.post('/monitors/:id/delete', { schema: { params: IdParamsSchema } }, async (request, reply) => {
    await deleteMonitor(db, kit.session(request).accountId, request.params.id);
    return reply.redirect('/monitors', 303);
  });
}
