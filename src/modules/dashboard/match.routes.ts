import type { MultipartFile } from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../infra/errors.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { createMatchJob, getMatchJob, receiveList, recentMatchJobs } from '../match/match-jobs.service.ts';
import { maxCsvBytes } from '../suppressions/suppressions.schema.ts';
import { formTokenMatches } from './csrf.ts';
import { type MatchPageView, matchPage } from './match.views.ts';
import type { PageOptions } from './page-kit.ts';

const MatchQuerySchema = Type.Object(
  { job: Type.Optional(Type.String({ pattern: '^mjob_[A-Za-z0-9_-]{14}$' })) },
  { additionalProperties: false },
);

/** "Match a list": the upload (the match jobs' service, as the API's), the columns recognised, progress and download. */
export async function matchPageRoutes(appBase: FastifyInstance, { kit, db, config, matchJobs }: PageOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook('preHandler', kit.requireSession);

  const view = async (accountId: number, extra: Partial<MatchPageView> = {}): Promise<MatchPageView> => ({
    jobs: (await recentMatchJobs(db, matchJobs.links, accountId, 30)).map((j) => j.job),
    ...extra,
  });

  app.get('/match', { schema: { querystring: MatchQuerySchema } }, async (request, reply) => {
    const accountId = kit.session(request).accountId;
    const current = request.query.job ? await getMatchJob(db, matchJobs.links, accountId, request.query.job, '') : undefined;
    return kit.send(reply, matchPage(kit.ctx(request), await view(accountId, { current })));
  });

  // A multipart form: the token and the options come as parts before the file, which is written to disk as it arrives.
  app.post('/match/upload', { config: { csrfInParts: true } }, async (request, reply) => {
    const accountId = kit.session(request).accountId;
    const refuse = async (message: string, status: number) =>
      kit.send(reply, matchPage(kit.ctx(request), await view(accountId, { error: message })), status);
    if (!request.isMultipart()) return refuse('Choose a list to upload', 400);
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
      return refuse(`The upload could not be read: ${error instanceof Error ? error.message : String(error)}`, 400);
    }
    if (!formTokenMatches(kit.session(request), kit.ctx(request).csrfToken, fields._csrf)) {
      part?.file.resume();
      return kit.formExpired(request, reply);
    }
    if (!part || part.filename === '') return refuse('Choose a list to upload', 400);
    try {
      const file = part;
      const list = await receiveList(config.EXPORT_DATA_DIR, file.file, file.filename, () => file.file.truncated, maxCsvBytes);
      const row = await createMatchJob(
        db,
        { allowance: app.quotas, dictionary: matchJobs.dictionary },
        { accountId, list, form: { as_leads: fields.as_leads === 'true' } },
      );
      matchJobs.runner.poke();
      return reply.redirect(`/match?job=${row.public_id}`, 303);
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500) throw error;
      return refuse(error.message, error.status);
    }
  });
}
