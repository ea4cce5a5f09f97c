import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { problemResponses } from '../../infra/http/problem.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { sendExport } from './exports.http.ts';
import { ExportQuerySchema } from './exports.schema.ts';
import { startExport } from './exports.service.ts';
import { exportFormats } from './formats/index.ts';

/** Streams every result of a saved search as a file; the exported places become the account's leads. */
export async function exportsRoutes(app: FastifyInstance, { db, config }: { db: Db; config: Config }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const file = Type.String({ description: 'The file, streamed' });

  r.get(
    '/api/v2/map/export',
    {
      config: { scope: 'export' },
      schema: {
        tags: ['exports'],
        summary: 'Export every result of a saved search',
        description:
          'Streams all places of the search (constant memory on the server, whatever the size) as an attachment named ' +
          '`leadatlas-<city>-<type>-<date>.<ext>`. The exported places become leads of the account (`/api/v1/user-api/places`). ' +
          "CSV text cells starting with `= + - @`, tab or CR get a leading `'` so spreadsheets do not run them, except plain phone " +
          'numbers such as `+33 1 42 68 53 00`, which stay intact. A search of another account answers 404. ' +
          "Places on the account's suppression list are left out; with `only_new=true`, so are the places it has exported before.",
        querystring: ExportQuerySchema,
        response: {
          200: {
            description: 'The export file; `x-export-id` names it in the export log',
            content: Object.fromEntries(Object.values(exportFormats).map((f) => [f.contentType.split(';')[0], { schema: file }])),
          },
          ...problemResponses(400, 401, 403, 404, 429),
        },
      },
    },
    async (request, reply) => {
      const { query } = request;
      const started = await startExport(
        db,
        {
          accountId: request.auth!.accountId,
          searchId: query.search_id,
          format: query.format ?? 'csv',
          fields: query.fields,
          onlyNew: query.only_new,
        },
        app.quotas,
      );
      return sendExport(reply, started, config.EXPORT_IDLE_TIMEOUT * 1000);
    },
  );
}
