import type { MultipartFile } from '@fastify/multipart';
import type { Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, type FieldError } from '../../infra/errors.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { listSuppressions, removeAllSuppressions, removeSuppression, uploadSuppressionsCsv } from '../suppressions/suppressions.service.ts';
import { formTokenMatches } from './csrf.ts';
import { IdParamsSchema, RemoveAllFormSchema, SuppressionsQuerySchema, SuppressionsUploadFormSchema } from './dashboard.schema.ts';
import { parseForm } from './forms.ts';
import type { PageOptions } from './page-kit.ts';
import { pageOffset } from './search.routes.ts';
import { type SuppressionsView, suppressionsPage, type UploadOutcome } from './suppressions.views.ts';

const suppressionsPerPage = 50;

/** The account's suppression list: paged, a CSV upload, remove one entry or all. */
export async function suppressionsPageRoutes(appBase: FastifyInstance, { kit, db }: PageOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook('preHandler', kit.requireSession);

  const view = async (
    request: FastifyRequest,
    extra: Partial<SuppressionsView> = {},
    cursor?: string,
    from = 1,
  ): Promise<SuppressionsView> => ({
    list: await listSuppressions(db, kit.session(request).accountId, { cursor, per_page: suppressionsPerPage }),
    offset: cursor === undefined ? 1 : from,
    isFirstPage: cursor === undefined,
    ...extra,
  });

  app.get('/suppressions', { schema: { querystring: SuppressionsQuerySchema } }, async (request, reply) => {
    const q = request.query;
    const notice =
      q.removed === '1'
        ? 'The entry was removed: its places show in your searches again.'
        : /^\d{1,12}$/.test(q.removed_all ?? '')
          ? `${Number(q.removed_all).toLocaleString('en')} ${q.removed_all === '1' ? 'entry was' : 'entries were'} removed: your suppression list is empty.`
          : undefined;
    return kit.send(reply, suppressionsPage(kit.ctx(request), await view(request, { notice }, q.cursor || undefined, pageOffset(q.from))));
  });

  // A multipart form: the token and the options come as parts before the file, which is handed to the
  // suppressions service as the stream it reads (the code the API's text/csv upload runs).
  app.post('/suppressions/upload', { config: { csrfInParts: true } }, async (request, reply) => {
    if (!request.isMultipart()) {
      throw new AppError('validation_failed', 'Send the file with the upload form (multipart/form-data)', {
        errors: [{ field: 'file', message: 'is missing', allowed: ['multipart/form-data'] }],
      });
    }
    // Only the fields before the file count (a token sent after it would be read after the upload ran).
    const fields: Record<string, string> = {};
    let part: MultipartFile | undefined;
    try {
      for await (const p of request.parts()) {
        if (p.type === 'file') {
          part = p;
          break;
        }
        if (typeof p.value === 'string' && fields[p.fieldname] === undefined) fields[p.fieldname] = p.value;
      }
    } catch (error) {
      // A body that is not valid multipart (no boundary, cut short, too many parts) is the request's fault.
      const status = (error as { statusCode?: number }).statusCode;
      throw new AppError(
        status === 413 ? 'payload_too_large' : 'validation_failed',
        `The upload could not be read: ${error instanceof Error ? error.message : String(error)}`,
        { errors: [{ field: 'file', message: 'is not a readable multipart/form-data upload' }] },
      );
    }
    if (!formTokenMatches(kit.session(request), kit.ctx(request).csrfToken, fields._csrf)) {
      part?.file.resume();
      return kit.formExpired(request, reply);
    }
    const values = { country: (fields.country ?? '').trim().toUpperCase(), on_invalid: fields.on_invalid === 'skip' ? 'skip' : 'reject' };
    const refuse = async (message: string, errors: FieldError[]) => {
      part?.file.resume();
      return kit.send(
        reply,
        suppressionsPage(kit.ctx(request), await view(request, { upload: { ok: false, message, errors }, values })),
        400,
      );
    };
    let options: Static<typeof SuppressionsUploadFormSchema>;
    try {
      options = parseForm(SuppressionsUploadFormSchema, fields, { messages: { country: 'must be a two-letter ISO 3166-1 code' } });
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return refuse(error.message, error.extras.errors ?? []);
    }
    if (!part || part.filename === '') return refuse('Choose a CSV file to upload', [{ field: 'file', message: 'is missing' }]);
    let upload: UploadOutcome;
    try {
      const result = await uploadSuppressionsCsv(db, kit.session(request).accountId, part.file, {
        country: options.country?.toUpperCase(),
        onInvalid: options.on_invalid,
      });
      upload = { ok: true, result };
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500) throw error;
      upload = { ok: false, message: error.message, errors: error.extras.errors ?? [] };
      return kit.send(reply, suppressionsPage(kit.ctx(request), await view(request, { upload, values })), error.status);
    }
    return kit.send(reply, suppressionsPage(kit.ctx(request), await view(request, { upload, values })));
  });

  app.post('/suppressions/:id/remove', { schema: { params: IdParamsSchema } }, async (request, reply) => {
    const { id } = request.params;
    if (!/^\d{1,15}$/.test(id)) throw new AppError('not_found', `suppression ${id} does not exist`);
    await removeSuppression(db, kit.session(request).accountId, Number(id));
    return reply.redirect('/suppressions?removed=1', 303);
  });

  app.post('/suppressions/remove-all', async (request, reply) => {
    if (parseForm(RemoveAllFormSchema, request.body).confirm !== 'yes') {
      return kit.send(
        reply,
        suppressionsPage(kit.ctx(request), await view(request, { removeAllError: 'must be ticked to remove every entry' })),
        400,
      );
    }
    const { deleted } = await removeAllSuppressions(db, kit.session(request).accountId);
    return reply.redirect(`/suppressions?removed_all=${deleted}`, 303);
  });
}
