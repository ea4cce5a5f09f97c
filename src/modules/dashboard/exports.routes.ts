import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { createJob } from '../exports/export-jobs.service.ts';
import { rotateWebhookSecret } from '../webhooks/webhooks.service.ts';
import { ExportJobFormSchema, ExportsQuerySchema, IdParamsSchema } from './dashboard.schema.ts';
import { exportJobsOverview } from './dashboard.service.ts';
import { exportJobsPage } from './exports.views.ts';
import { parseForm } from './forms.ts';
import type { PageOptions } from './page-kit.ts';

/** Export jobs: started from a search's page, listed with their files and webhook deliveries; the webhook secret. */
export async function exportJobsPageRoutes(appBase: FastifyInstance, { kit, db, jobs }: PageOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook('preHandler', kit.requireSession);

  // Background exports: a POST with the form token, as downloads are (a job records leads).
  app.post('/searches/:id/jobs', { schema: { params: IdParamsSchema } }, async (request, reply) => {
    const form = parseForm(ExportJobFormSchema, request.body, { messages: { webhook_url: 'must be an http(s) URL' } });
    await createJob(db, app.quotas, {
      accountId: kit.session(request).accountId,
      searchId: request.params.id,
      format: form.format ?? 'csv',
      fields: undefined,
      webhookUrl: form.webhook_url,
    });
    jobs.runner.poke();
    return reply.redirect('/exports', 303);
  });

  app.get('/exports', { schema: { querystring: ExportsQuerySchema } }, async (request, reply) => {
    const { items, secret } = await exportJobsOverview(db, jobs.links, kit.session(request).accountId, 50);
    const notice =
      request.query.rotated === '1'
        ? 'A new webhook secret is in force: later deliveries, retries included, are signed with it.'
        : undefined;
    return kit.send(reply, exportJobsPage(kit.ctx(request), items, secret, notice));
  });

  app.post('/exports/webhook-secret', async (request, reply) => {
    await rotateWebhookSecret(db, kit.session(request).accountId);
    return reply.redirect('/exports?rotated=1', 303);
  });
}
