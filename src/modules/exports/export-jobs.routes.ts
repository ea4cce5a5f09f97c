import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { problemResponses } from '../../infra/http/problem.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { findJob } from './export-jobs.repository.ts';
import {
  CreateJobSchema,
  DownloadQuerySchema,
  JobIdParamsSchema,
  JobSchema,
  JobsPageSchema,
  JobsQuerySchema,
} from './export-jobs.schema.ts';
import { createJob, getJob, jobView, listJobs } from './export-jobs.service.ts';
import type { ExportJobs } from './export-jobs.ts';
import { type ExportFormatName, exportFormats } from './formats/index.ts';

/** Export jobs: a file written in the background, a signed link to download it, a webhook when it ends. */
export async function exportJobsRoutes(
  app: FastifyInstance,
  { db, config, jobs }: { db: Db; config: Config; jobs: ExportJobs },
): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const baseUrl = (request: FastifyRequest) => config.PUBLIC_URL?.replace(/\/$/, '') ?? `${request.protocol}://${request.host}`;

  r.post(
    '/api/v2/exports',
    {
      config: { scope: 'export' },
      schema: {
        tags: ['exports'],
        summary: 'Start an export job of a saved search',
        description:
          'Queues a job that writes every place of the search to a file on the server (the same file as `GET /api/v2/map/export`), ' +
          'counting against the same quotas. Answers 202 with the job and its `Location`; poll it, or pass `webhook_url` to be told. ' +
          'The exported places become leads of the account as the file is written. A search of another account answers 404.',
        body: CreateJobSchema,
        response: { 202: JobSchema, ...problemResponses(400, 401, 403, 404, 415, 429) },
      },
    },
    async (request, reply) => {
      const { body } = request;
      const row = await createJob(db, app.quotas, {
        accountId: request.auth!.accountId,
        searchId: body.search_id,
        format: body.format ?? 'csv',
        fields: body.fields,
        webhookUrl: body.webhook_url,
      });
      jobs.runner.poke();
      reply.code(202).header('location', `/api/v2/exports/${row.public_id}`);
      return jobView({ ...row, id: Number(row.id), rows_done: 0 }, jobs.links, baseUrl(request));
    },
  );

  r.get(
    '/api/v2/exports',
    {
      config: { scope: 'export', cost: 1 },
      schema: {
        tags: ['exports'],
        summary: "The account's export jobs, newest first",
        querystring: JobsQuerySchema,
        response: { 200: JobsPageSchema, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request) => listJobs(db, jobs.links, request.auth!.accountId, request.query, baseUrl(request)),
  );

  r.get(
    '/api/v2/exports/:id',
    {
      config: { scope: 'export', cost: 1 },
      schema: {
        tags: ['exports'],
        summary: 'An export job: status, rows, and a signed download link once it has succeeded',
        params: JobIdParamsSchema,
        response: { 200: JobSchema, ...problemResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request) => getJob(db, jobs.links, request.auth!.accountId, request.params.id, baseUrl(request)),
  );

  r.get(
    '/api/v2/exports/:id/download',
    {
      schema: {
        tags: ['exports'],
        summary: "Download an export job's file through its signed link",
        description:
          'No token: the link is the credential, valid until `expires`. A link whose signature does not match answers 403; ' +
          'an expired one 410 (read the job again for a fresh link).',
        params: JobIdParamsSchema,
        querystring: DownloadQuerySchema,
        response: {
          200: {
            description: 'The file',
            content: Object.fromEntries(Object.values(exportFormats).map((f) => [f.contentType.split(';')[0], { schema: Type.String() }])),
          },
          ...problemResponses(400, 403, 404, 429),
          410: Type.Ref('Problem', { description: 'The link has expired' }),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const { query } = request;
      await jobs.links.verify(id, query.expires, query.signature);
      const job = await findJob(db, id);
      if (!job || job.status !== 'succeeded' || !job.file_name) throw new AppError('not_found', `export job ${id} has no file`);
      const path = join(config.EXPORT_DATA_DIR, job.file_name);
      const size = await stat(path).then(
        (s) => s.size,
        () => null,
      );
      if (size === null) throw new AppError('not_found', `the file of export job ${id} is no longer on this server`);
      const format = exportFormats[job.format as ExportFormatName];
      return reply
        .header('content-type', format.contentType)
        .header('content-length', String(size))
        .header('content-disposition', job.download_name ?? `attachment; filename="${job.public_id}.${format.extension}"`)
        .header('cache-control', 'private, no-store')
        .send(createReadStream(path));
    },
  );
}
