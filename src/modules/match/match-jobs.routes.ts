import { createReadStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import multipart, { type MultipartFile } from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { checkAgainstSchema } from '../../infra/http/check-schema.ts';
import { problemResponses } from '../../infra/http/problem.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { DownloadQuerySchema } from '../exports/export-jobs.schema.ts';
import { exportFormats } from '../exports/formats/index.ts';
import { listFields } from './match-headers.ts';
import { findMatchJob } from './match-jobs.repository.ts';
import {
  MatchJobFormSchema,
  MatchJobIdParamsSchema,
  MatchJobSchema,
  MatchJobsPageSchema,
  MatchJobsQuerySchema,
  maxListRows,
  resultColumns,
} from './match-jobs.schema.ts';
import {
  createMatchJob,
  getMatchJob,
  listMatchJobs,
  type MatchAllowance,
  matchJobView,
  type ReceivedList,
  receiveList,
} from './match-jobs.service.ts';
import { type MatchJobs, matchJobsPath } from './match-jobs.ts';

const xlsxType = exportFormats.xlsx.contentType;

/** Match jobs: a list uploaded, matched in the background, downloaded through a signed link, told by webhook. */
export async function matchJobsRoutes(
  app: FastifyInstance,
  { db, config, jobs, allowance }: { db: Db; config: Config; jobs: MatchJobs; allowance: MatchAllowance },
): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const baseUrl = (request: FastifyRequest) => config.PUBLIC_URL?.replace(/\/$/, '') ?? `${request.protocol}://${request.host}`;
  await app.register(multipart, {
    throwFileSizeLimit: false,
    limits: { fileSize: config.MATCH_UPLOAD_MAX_BYTES, files: 1, fields: 10, fieldSize: 8192, parts: 11 },
  });

  r.post(
    matchJobsPath,
    {
      config: { scope: 'match' },
      schema: {
        tags: ['match'],
        summary: 'Match a list of your own accounts against the catalog, in the background',
        description:
          `A \`multipart/form-data\` upload: \`file\` (CSV, XLSX or NDJSON, up to ${maxListRows.toLocaleString('en')} rows under a header row), and optional fields ` +
          '`mapping` (a JSON object: record field → header; the fields not given are recognised by their headers, in the languages the taxonomy ships: ' +
          '`Firma`, `Telefon`, `PLZ`, `Ort`, `Empresa`, `Morada`, `Nom`, `Téléphone`…), `threshold` (0–1), `as_leads` (`true`: every matched place becomes a lead ' +
          'of the account, so `only_new` searches and exports leave it out), `format` and `webhook_url`. ' +
          `Record fields: ${listFields.join(', ')}. The list's rows are taken from the month's match quota up front (429 when they do not fit). ` +
          'Answers 202 with the job, the mapping it will use and its `Location`; the result file is the list, row by row in its order, with these columns appended: ' +
          `${resultColumns.join(', ')}. A row that cannot be matched gets its reason, never a failed job.`,
        consumes: ['multipart/form-data'],
        body: { content: { 'multipart/form-data': { schema: Type.Unknown({ description: 'file, and the fields described above' }) } } },
        response: { 202: MatchJobSchema, ...problemResponses(400, 401, 403, 413, 415, 429, 507) },
      },
    },
    async (request, reply) => {
      const { list, fields } = await readUpload(request, config);
      let form: ReturnType<typeof checkAgainstSchema<typeof MatchJobFormSchema>>;
      try {
        form = checkAgainstSchema(MatchJobFormSchema, fields, 'body', { coerce: true });
      } catch (error) {
        await rm(list.path, { force: true });
        throw error;
      }
      const row = await createMatchJob(db, { allowance, dictionary: jobs.dictionary }, { accountId: request.auth!.accountId, list, form });
      jobs.runner.poke();
      reply.code(202).header('location', `${matchJobsPath}/${row.public_id}`);
      return matchJobView(row, jobs.links, baseUrl(request));
    },
  );

  r.get(
    matchJobsPath,
    {
      config: { scope: 'match', cost: 1 },
      schema: {
        tags: ['match'],
        summary: "The account's match jobs, newest first",
        querystring: MatchJobsQuerySchema,
        response: { 200: MatchJobsPageSchema, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request) => listMatchJobs(db, jobs.links, request.auth!.accountId, request.query, baseUrl(request)),
  );

  r.get(
    `${matchJobsPath}/:id`,
    {
      config: { scope: 'match', cost: 1 },
      schema: {
        tags: ['match'],
        summary: 'A match job: status, progress, the mapping used, and a signed download link once it has succeeded',
        params: MatchJobIdParamsSchema,
        response: { 200: MatchJobSchema, ...problemResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request) => getMatchJob(db, jobs.links, request.auth!.accountId, request.params.id, baseUrl(request)),
  );

  r.get(
    `${matchJobsPath}/:id/download`,
    {
      schema: {
        tags: ['match'],
        summary: "Download a match job's result through its signed link",
        description:
          'No token: the link is the credential, valid until `expires`. A link whose signature does not match answers 403; an expired one 410.',
        params: MatchJobIdParamsSchema,
        querystring: DownloadQuerySchema,
        response: {
          200: {
            description: "The list with the result columns appended, in the list's format (CSV, XLSX or NDJSON)",
            content: {
              'text/csv': { schema: Type.String() },
              [xlsxType]: { schema: Type.String({ format: 'binary' }) },
              'application/x-ndjson': { schema: Type.String() },
            },
          },
          ...problemResponses(400, 403, 404, 429),
          410: Type.Ref('Problem', { description: 'The link has expired' }),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      await jobs.links.verify(id, request.query.expires, request.query.signature);
      const job = await findMatchJob(db, id);
      if (!job || job.status !== 'succeeded' || !job.file_name) throw new AppError('not_found', `match job ${id} has no file`);
      const path = join(config.EXPORT_DATA_DIR, job.file_name);
      const size = await stat(path).then(
        (s) => s.size,
        () => null,
      );
      if (size === null) throw new AppError('not_found', `the file of match job ${id} is no longer on this server`);
      return reply
        .header(
          'content-type',
          job.file_name.endsWith('.ndjson')
            ? 'application/x-ndjson; charset=utf-8'
            : job.file_name.endsWith('.xlsx')
              ? xlsxType
              : 'text/csv; charset=utf-8',
        )
        .header('content-length', String(size))
        .header('content-disposition', job.download_name ?? `attachment; filename="${job.file_name}"`)
        .header('cache-control', 'private, no-store')
        .send(createReadStream(path));
    },
  );
}

/**
 * Reads a multipart upload: the part named `file` is written to the data directory as it arrives; the other
 * fields, before or after it, are kept as strings.
 */
async function readUpload(request: FastifyRequest, config: Config): Promise<{ list: ReceivedList; fields: Record<string, string> }> {
  if (!request.isMultipart()) {
    throw new AppError('validation_failed', 'Send the list as multipart/form-data, in a part named file', {
      errors: [{ field: 'file', message: 'is missing', allowed: ['multipart/form-data'] }],
    });
  }
  const fields: Record<string, string> = {};
  let list: ReceivedList | undefined;
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        const file: MultipartFile = part;
        if (file.fieldname !== 'file' || list) {
          file.file.resume();
          continue;
        }
        list = await receiveList(
          config.EXPORT_DATA_DIR,
          file.file,
          file.filename,
          () => file.file.truncated,
          config.MATCH_UPLOAD_MAX_BYTES,
        );
      } else if (typeof part.value === 'string' && fields[part.fieldname] === undefined) fields[part.fieldname] = part.value;
    }
  } catch (error) {
    if (error instanceof AppError) throw error;
    const status = (error as { statusCode?: number }).statusCode;
    throw new AppError(
      status === 413 ? 'payload_too_large' : 'validation_failed',
      `The upload could not be read: ${error instanceof Error ? error.message : String(error)}`,
      { errors: [{ field: 'file', message: 'is not a readable multipart/form-data upload' }] },
    );
  }
  if (!list) {
    throw new AppError('validation_failed', 'body.file: the list is missing', {
      errors: [{ field: 'body.file', message: 'is missing: send the list in a part named file' }],
    });
  }
  return { list, fields };
}
