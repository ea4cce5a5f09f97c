import type { FastifyInstance } from 'fastify';
import { AppError } from '../../infra/errors.ts';
import { requestLang } from '../../infra/http/request-lang.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { sendExport } from '../exports/exports.http.ts';
import { startExport } from '../exports/exports.service.ts';
import { AutocompleteQuerySchema } from '../search/autocomplete.schema.ts';
import { autocomplete } from '../search/autocomplete.service.ts';
import { parseSearchParams } from '../search/resolve.ts';
import { searchPlaces } from '../search/search.service.ts';
import { ExportFormSchema, IdParamsSchema, ResultsQuerySchema } from './dashboard.schema.ts';
import { recentSearches, searchesAndExports, searchResults } from './dashboard.service.ts';
import { type FormBody, formBody, formError, parseForm, statusOf, text } from './forms.ts';
import type { PageOptions } from './page-kit.ts';
import type { FormState } from './pages.ts';
import { resultsPage, searchesPage, searchPage } from './search.views.ts';

const resultsPerPage = 25;

/** The search form, a saved search's results with its map, the list of searches and downloads. */
export async function searchPageRoutes(appBase: FastifyInstance, { kit, config, db, search: searchDeps }: PageOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook('preHandler', kit.requireSession);

  app.get('/search', async (request, reply) => {
    const recent = await recentSearches(db, kit.session(request).accountId, 5);
    return kit.send(reply, searchPage(kit.ctx(request), { values: formBody(request.query), errors: [] }, recent));
  });

  app.post('/search', async (request, reply) => {
    const body = formBody(request.body);
    const values = { ...body, _csrf: undefined };
    try {
      const params = parseSearchParams({ ...searchParamsOf(body), per_page: '1' });
      const result = await searchPlaces(searchDeps, kit.session(request).accountId, params, null);
      return reply.redirect(`/searches/${result.search.id}`, 303);
    } catch (error) {
      const recent = await recentSearches(db, kit.session(request).accountId, 5);
      return kit.send(reply, searchPage(kit.ctx(request), searchFormError(error, values), recent), statusOf(error));
    }
  });

  // The search form's suggestions as one types (public/suggest.js): the API's autocomplete, for the signed-in account.
  app.get('/search/suggest', { schema: { querystring: AutocompleteQuerySchema } }, async (request, reply) =>
    reply
      .header('cache-control', 'private, max-age=60')
      .send(await autocomplete(searchDeps, request.query, requestLang(request, undefined))),
  );

  app.get('/searches', async (request, reply) => {
    const { searches, exports } = await searchesAndExports(db, kit.session(request).accountId, 50);
    return kit.send(reply, searchesPage(kit.ctx(request), searches, exports));
  });

  app.get('/searches/:id', { schema: { params: IdParamsSchema, querystring: ResultsQuerySchema } }, async (request, reply) => {
    const { cursor, from } = request.query;
    const view = await searchResults(
      searchDeps,
      kit.session(request).accountId,
      request.params.id,
      cursor || undefined,
      resultsPerPage,
      request.log,
    );
    return kit.send(reply, resultsPage(kit.ctx(request), { ...view, offset: view.isFirstPage ? 1 : pageOffset(from) }));
  });

  // A POST with the form token, not a link: an export records leads, so a cross-site link must not start one.
  app.post('/searches/:id/export', { schema: { params: IdParamsSchema } }, async (request, reply) => {
    const form = parseForm(ExportFormSchema, request.body);
    const started = await startExport(
      db,
      {
        accountId: kit.session(request).accountId,
        searchId: request.params.id,
        format: form.format ?? 'csv',
        fields: undefined,
        onlyNew: form.only_new,
      },
      app.quotas,
    );
    return sendExport(reply, started, config.EXPORT_IDLE_TIMEOUT * 1000);
  });
}

/** The position of a page's first row, from the `from` of the link that led to it (1 when absent or not a number). */
export function pageOffset(from: string | undefined): number {
  return /^\d{1,9}$/.test(from ?? '') ? Number(from) : 1;
}

/**
 * The search form as the API's parameters, as text: empty inputs left out, ticked boxes `true`. The search
 * service checks them with the API's own schema (`parseSearchParams`), so the form follows the API's rules.
 */
function searchParamsOf(body: FormBody): Record<string, string> {
  const params: Record<string, string> = {};
  for (const name of [
    'type',
    'city',
    'country',
    'query',
    'min_rating',
    'sort',
    'open_at',
    'email_status',
    'phone_type',
    'website_status',
    'min_confidence',
    'min_lead_score',
    'updated_since',
    'verified_since',
  ] as const) {
    const value = text(body[name]).trim();
    if (value !== '') params[name] = value;
  }
  for (const name of ['has_phone', 'has_website', 'has_email', 'has_social', 'open_now'] as const)
    if (text(body[name]) === 'yes') params[name] = 'true';
  return params;
}

/**
 * The search service's errors on the search form. A search that names nothing (the error is about the
 * whole request) marks the form's two main inputs, type and city, with what is missing.
 */
function searchFormError(error: unknown, values: FormState['values']): FormState {
  const form = formError(error, values);
  const wholeRequest = error instanceof AppError && (error.extras.errors ?? []).some((e) => e.field === 'querystring');
  if (!wholeRequest) return form;
  return {
    ...form,
    general: 'Enter a type of business, a city, or both',
    errors: [
      { field: 'type', message: 'or a city is needed' },
      { field: 'city', message: 'or a type of business is needed' },
      ...form.errors,
    ],
  };
}
