import type { FastifyInstance } from 'fastify';
import type { Db } from '../../infra/db/database.ts';
import { preparing, problemResponses } from '../../infra/http/problem.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import {
  CreateMonitorSchema,
  EventsPageSchema,
  EventsQuerySchema,
  MonitorIdParamsSchema,
  MonitorSchema,
  MonitorsPageSchema,
  MonitorsQuerySchema,
  UpdateMonitorSchema,
} from './monitors.schema.ts';
import {
  createMonitor,
  deleteMonitor,
  getMonitor,
  listMonitors,
  type MonitorLimits,
  monitorEventsPage,
  monitorView,
  setMonitorPaused,
} from './monitors.service.ts';

/** Monitors: a saved search watched for the account, and the events of what changed in it. */
export async function monitorsRoutes(app: FastifyInstance, { db, limits }: { db: Db; limits: MonitorLimits }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['monitors'];

  r.post(
    '/api/v2/monitors',
    {
      config: { scope: 'monitors' },
      schema: {
        tags,
        summary: 'Watch a saved search',
        description:
          "Freezes a saved search's criteria and records, after every import, change file or conflation pass, the places that enter it " +
          "(`added`), leave it (`closed`: closed, retired or no longer matching) or change in it (`changed`), the account's suppression list " +
          "and the search's `only_new` applied. Read them at `/api/v2/monitors/{id}/events`; with `webhook_url` each evaluation that " +
          'found events is POSTed there (`monitor.events`, signed). A search of another account answers 404, a search of more than ' +
          `MONITOR_MAX_PLACES places or with a drawn polygon or typo-tolerant text 400, an account at MONITORS_PER_ACCOUNT monitors 409.`,
        body: CreateMonitorSchema,
        response: { 201: MonitorSchema, ...problemResponses(400, 401, 403, 404, 409, 415, 429), ...preparing },
      },
    },
    async (request, reply) => {
      const row = await createMonitor(db, limits, request.auth!.accountId, request.body);
      reply.code(201).header('location', `/api/v2/monitors/${row.public_id}`);
      return monitorView(row);
    },
  );

  r.get(
    '/api/v2/monitors',
    {
      config: { scope: 'monitors', cost: 1 },
      schema: {
        tags,
        summary: "The account's monitors, newest first",
        querystring: MonitorsQuerySchema,
        response: { 200: MonitorsPageSchema, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request) => listMonitors(db, request.auth!.accountId, request.query),
  );

  r.get(
    '/api/v2/monitors/:id',
    {
      config: { scope: 'monitors', cost: 1 },
      schema: {
        tags,
        summary: 'One monitor',
        params: MonitorIdParamsSchema,
        response: { 200: MonitorSchema, ...problemResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request) => monitorView(await getMonitor(db, request.auth!.accountId, request.params.id)),
  );

  r.patch(
    '/api/v2/monitors/:id',
    {
      config: { scope: 'monitors', cost: 1 },
      schema: {
        tags,
        summary: 'Pause or resume a monitor',
        description: 'A paused monitor keeps following its search but records no events; resumed, it records what changes from then on.',
        params: MonitorIdParamsSchema,
        body: UpdateMonitorSchema,
        response: { 200: MonitorSchema, ...problemResponses(400, 401, 403, 404, 415, 429) },
      },
    },
    async (request) => monitorView(await setMonitorPaused(db, request.auth!.accountId, request.params.id, request.body.paused)),
  );

  r.delete(
    '/api/v2/monitors/:id',
    {
      config: { scope: 'monitors', cost: 1 },
      schema: {
        tags,
        summary: 'Delete a monitor and its events',
        params: MonitorIdParamsSchema,
        response: { ...problemResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      await deleteMonitor(db, request.auth!.accountId, request.params.id);
      reply.code(204);
    },
  );

  r.get(
    '/api/v2/monitors/:id/events',
    {
      config: { scope: 'monitors', cost: 1 },
      schema: {
        tags,
        summary: "A monitor's events, oldest first",
        description:
          'Exact and ordered: every change of the search after the monitor was made, once, each with the place as it is now. ' +
          'Continue with `next_cursor`; it is returned on the last page too, so polling with it gives exactly the events found since.',
        params: MonitorIdParamsSchema,
        querystring: EventsQuerySchema,
        response: { 200: EventsPageSchema, ...problemResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request) => monitorEventsPage(db, request.auth!.accountId, request.params.id, request.query),
  );
}
