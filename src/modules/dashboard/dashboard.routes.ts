import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import multipart, { type MultipartFile } from '@fastify/multipart';
import helmet from '@fastify/helmet';
import fastifyStatic from '@fastify/static';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import { isDatabaseUnavailable } from '../../infra/db/availability.ts';
import type { Db } from '../../infra/db/database.ts';
import type { ReadPool } from '../../infra/db/read-pool.ts';
import { AppError, type FieldError } from '../../infra/errors.ts';
import { sessionCookieName, sessionCookieOptions, verifyCsrf, type Session } from '../auth/accounts.service.ts';
import type { ExportJobs } from '../exports/export-jobs.ts';
import { createJob } from '../exports/export-jobs.service.ts';
import { sendExport } from '../exports/exports.http.ts';
import { startExport } from '../exports/exports.service.ts';
import { exportFormatNames, type ExportFormatName } from '../exports/formats/index.ts';
import type { ApiReadTasks } from '../search/read-tasks.ts';
import { parseSearchParams, searchPlaces } from '../search/search.service.ts';
import { createSearchDeps } from '../search/type-resolver.ts';
import { listSuppressions, removeAllSuppressions, removeSuppression, uploadSuppressionsCsv } from '../suppressions/suppressions.service.ts';
import { maxCsvBytes } from '../suppressions/suppressions.schema.ts';
import { rotateWebhookSecret } from '../webhooks/webhooks.service.ts';
import { exportJobsOverview, recentSearches, searchesAndExports, searchResults, usageByDay } from './dashboard.service.ts';
import type { SafeHtml } from './html.ts';
import type { PageContext } from './layout.ts';
import {
  errorPage,
  expiryChoices,
  newTokenPage,
  passwordPage,
  signInPage,
  signUpPage,
  tokenCreatedPage,
  tokensPage,
  usagePage,
  type FormState,
} from './pages.ts';
import { exportJobsPage } from './exports.views.ts';
import { resultsPage, searchesPage, searchPage } from './search.views.ts';
import { suppressionsPage, type SuppressionsView, type UploadOutcome } from './suppressions.views.ts';

export interface DashboardOptions {
  config: Config;
  db: Db;
  /** The API's read pool: the dashboard's searches run off the event loop like the API's. */
  reads: ReadPool<ApiReadTasks>;
  /** Export jobs: their download links and the queues to wake. */
  jobs: ExportJobs;
}

type FormBody = Record<string, string | string[] | undefined>;

interface DashboardState {
  session: Session | null;
  /** The raw session cookie, needed to keep this session when the password changes. */
  cookieValue: string | undefined;
  csrfToken: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A multipart dashboard route that checks the form token itself, from the parts before the file. */
    csrfInParts?: boolean;
  }
  interface FastifyRequest {
    /** Set on dashboard routes only: the session and the form token of this request. */
    dashboard: DashboardState | null;
  }
}

const usageDays = 30;
const suppressionsPerPage = 50;
const resultsPerPage = 25;

/**
 * The web dashboard, served by the API process. Registered as an encapsulated plugin: its form
 * parser, cookies, security headers (strict CSP, no inline script) and HTML error pages apply to
 * the dashboard's routes only, and the API stays JSON and token-only.
 *
 * CSRF: signed-in forms carry the session's synchroniser token; the sign-in and sign-up forms
 * (no session yet) use a double-submit cookie. Every POST is checked before its handler runs.
 */
export async function dashboardRoutes(app: FastifyInstance, { config, db, reads, jobs }: DashboardOptions): Promise<void> {
  const secure = config.PUBLIC_URL?.startsWith('https://') ?? false;
  // `__Host-` cookies must be Secure, so the prefix only applies when served over https.
  const sessionCookie = secure ? `__Host-${sessionCookieName}` : sessionCookieName;
  const preSessionCookie = secure ? '__Host-la_csrf' : 'la_csrf';
  const publicDir = findPublicDir();
  const assetVersion = assetsHash(publicDir);

  await app.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        fontSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'none'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        ...(secure ? { upgradeInsecureRequests: [] } : {}),
      },
    },
    strictTransportSecurity: secure ? { maxAge: 31_536_000, includeSubDomains: true } : false,
    referrerPolicy: { policy: 'same-origin' },
    crossOriginEmbedderPolicy: false,
  });
  await app.register(formbody, { bodyLimit: 64 * 1024 });
  // File uploads (the suppression list's CSV): parts are read as they arrive by the route that takes them,
  // so the file reaches the suppressions service as a stream, as the API's text/csv body does.
  await app.register(multipart, { throwFileSizeLimit: false, limits: { fileSize: maxCsvBytes + 1, files: 1, fields: 8, fieldSize: 1024, parts: 9 } });
  if (!app.hasRequestDecorator('cookies')) await app.register(cookie);
  await app.register(fastifyStatic, { root: publicDir, prefix: '/assets/', decorateReply: false, maxAge: '7d' });

  app.decorateRequest('dashboard', null);

  const searchDeps = createSearchDeps(db, reads, config.SEARCH_TYPO_CANDIDATES);

  const ctxOf = (request: FastifyRequest): PageContext => ({
    email: request.dashboard?.session?.email ?? null,
    csrfToken: request.dashboard?.csrfToken ?? '',
    path: request.url.split('?')[0] ?? '/',
    assetVersion,
  });
  const send = (reply: FastifyReply, body: SafeHtml, status = 200) =>
    reply.code(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(body.value);

  app.addHook('preHandler', async (request, reply) => {
    if (request.url.startsWith('/assets/')) return;
    const cookieValue = request.cookies[sessionCookie];
    const session = await app.accounts.getSession(cookieValue);
    let csrfToken: string;
    if (session) csrfToken = session.csrfToken;
    else {
      csrfToken = request.cookies[preSessionCookie] ?? '';
      if (!/^[\w-]{43}$/.test(csrfToken)) {
        csrfToken = randomBytes(32).toString('base64url');
        reply.setCookie(preSessionCookie, csrfToken, { httpOnly: true, secure, sameSite: 'strict', path: '/' });
      }
    }
    request.dashboard = { session, cookieValue, csrfToken };
    // A multipart form's token is a part of its body, read by the route itself before the file (only
    // routes marked `csrfInParts` take multipart; anywhere else the missing `_csrf` refuses it here).
    if (request.method === 'POST' && !(request.isMultipart() && request.routeOptions.config.csrfInParts === true)) {
      const submitted = (request.body as FormBody | undefined)?._csrf;
      const ok = session ? verifyCsrf(session, submitted) : typeof submitted === 'string' && constantTimeEqual(submitted, csrfToken);
      if (!ok) {
        return send(reply, errorPage(ctxOf(request), 403, 'This form has expired', 'The form was not sent from this page, or it was open too long. Go back, reload the page and try again.'), 403);
      }
    }
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof AppError) return send(reply, errorPage(ctxOf(request), error.status, error.title, error.message), error.status);
    if (error.statusCode && error.statusCode < 500) return send(reply, errorPage(ctxOf(request), error.statusCode, 'The request is not valid', error.message), error.statusCode);
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: error }, 'the database does not answer');
      reply.header('retry-after', '1');
      return send(reply, errorPage(ctxOf(request), 503, 'Back in a moment', 'The database does not answer right now. Try again in a moment; nothing you sent was saved.'), 503);
    }
    request.log.error({ err: error }, 'unhandled dashboard error');
    return send(reply, errorPage(ctxOf(request), 500, 'Something went wrong', 'Something went wrong on our side. Quote the request id when reporting it: ' + String(request.id)), 500);
  });

  const requireSession = async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.dashboard?.session) return;
    const next = request.method === 'GET' ? request.url : '/search';
    return reply.redirect(`/signin?next=${encodeURIComponent(next)}`, 303);
  };
  const session = (request: FastifyRequest): Session => request.dashboard?.session as Session;

  const startSession = async (request: FastifyRequest, reply: FastifyReply, accountId: number) => {
    const { cookieValue } = await app.accounts.createSession(accountId, { ip: request.ip, userAgent: request.headers['user-agent'] ?? null });
    reply.setCookie(sessionCookie, cookieValue, sessionCookieOptions(secure));
    reply.clearCookie(preSessionCookie, { path: '/' });
  };

  app.get('/', async (request, reply) => reply.redirect(request.dashboard?.session ? '/search' : '/signin', 303));

  app.get('/signin', async (request, reply) => {
    if (request.dashboard?.session) return reply.redirect('/search', 303);
    return send(reply, signInPage(ctxOf(request), undefined, safeNext((request.query as { next?: string }).next)));
  });

  app.post('/signin', async (request, reply) => {
    const body = request.body as FormBody;
    const email = text(body.email);
    const next = safeNext(text(body.next));
    try {
      const account = await app.accounts.signIn(email, text(body.password), request.ip);
      await startSession(request, reply, account.id);
      return reply.redirect(next || '/search', 303);
    } catch (error) {
      const form = formError(error, { email });
      return send(withErrorHeaders(reply, error), signInPage(ctxOf(request), form, next), statusOf(error));
    }
  });

  app.get('/signup', async (request, reply) => {
    if (request.dashboard?.session) return reply.redirect('/search', 303);
    return send(reply, signUpPage(ctxOf(request)));
  });

  app.post('/signup', async (request, reply) => {
    const body = request.body as FormBody;
    const email = text(body.email);
    try {
      const account = await app.accounts.signUp(email, text(body.password), request.ip);
      await startSession(request, reply, account.id);
      return reply.redirect('/tokens/new?welcome=1', 303);
    } catch (error) {
      return send(withErrorHeaders(reply, error), signUpPage(ctxOf(request), formError(error, { email })), statusOf(error));
    }
  });

  app.post('/signout', async (request, reply) => {
    await app.accounts.destroySession(request.dashboard?.cookieValue);
    reply.clearCookie(sessionCookie, { path: '/' });
    return reply.redirect('/signin', 303);
  });

  // Everything below needs a session.
  await app.register(async (signedIn) => {
    signedIn.addHook('preHandler', requireSession);

    signedIn.get('/account/password', async (request, reply) => send(reply, passwordPage(ctxOf(request))));
    signedIn.post('/account/password', async (request, reply) => {
      const body = request.body as FormBody;
      try {
        await app.accounts.changePassword(session(request).accountId, text(body.current_password), text(body.new_password), request.dashboard?.cookieValue ?? null);
        return send(reply, passwordPage(ctxOf(request), undefined, true));
      } catch (error) {
        return send(reply, passwordPage(ctxOf(request), formError(error, {})), statusOf(error));
      }
    });

    signedIn.get('/tokens', async (request, reply) => {
      const tokens = await app.tokens.listTokens(session(request).accountId);
      const q = request.query as { revoked?: string };
      const revoked = q.revoked ? tokens.find((t) => String(t.id) === q.revoked) : undefined;
      return send(reply, tokensPage(ctxOf(request), tokens, revoked ? `Token “${revoked.name}” was revoked. Calls made with it now fail with 401.` : undefined));
    });

    signedIn.get('/tokens/new', async (request, reply) =>
      send(reply, newTokenPage(ctxOf(request), undefined, (request.query as { welcome?: string }).welcome === '1')),
    );

    signedIn.post('/tokens', async (request, reply) => {
      const body = request.body as FormBody;
      const values = { name: body.name, scopes: body.scopes ?? [], expiry: body.expiry, confirm_no_expiry: body.confirm_no_expiry };
      try {
        const expiresInDays = parseExpiry(text(body.expiry), text(body.confirm_no_expiry) === 'yes');
        const created = await app.tokens.createToken({
          accountId: session(request).accountId,
          name: text(body.name),
          scopes: list(body.scopes),
          expiresInDays,
        });
        return send(reply, tokenCreatedPage(ctxOf(request), created, baseUrl(config, request)), 201);
      } catch (error) {
        return send(reply, newTokenPage(ctxOf(request), formError(error, values)), statusOf(error));
      }
    });

    signedIn.post('/tokens/:id/revoke', async (request, reply) => {
      const id = Number((request.params as { id: string }).id);
      await app.tokens.revokeToken(session(request).accountId, id);
      return reply.redirect(`/tokens?revoked=${id}`, 303);
    });

    signedIn.post('/tokens/:id/rotate', async (request, reply) => {
      const id = Number((request.params as { id: string }).id);
      const grace = text((request.body as FormBody).grace_seconds);
      const created = await app.tokens.rotateToken(session(request).accountId, id, /^\d+$/.test(grace) ? Number(grace) : Number.NaN);
      return send(reply, tokenCreatedPage(ctxOf(request), created, baseUrl(config, request)), 201);
    });

    signedIn.get('/search', async (request, reply) => {
      const recent = await recentSearches(db, session(request).accountId, 5);
      return send(reply, searchPage(ctxOf(request), { values: request.query as FormBody, errors: [] }, recent));
    });

    signedIn.post('/search', async (request, reply) => {
      const body = request.body as FormBody;
      const values = { ...body, _csrf: undefined };
      try {
        const params = parseSearchParams({ ...searchParamsOf(body), per_page: '1' });
        const result = await searchPlaces(searchDeps, session(request).accountId, params, null);
        return reply.redirect(`/searches/${result.search.id}`, 303);
      } catch (error) {
        const recent = await recentSearches(db, session(request).accountId, 5);
        return send(reply, searchPage(ctxOf(request), searchFormError(error, values), recent), statusOf(error));
      }
    });

    signedIn.get('/searches', async (request, reply) => {
      const { searches, exports } = await searchesAndExports(db, session(request).accountId, 50);
      return send(reply, searchesPage(ctxOf(request), searches, exports));
    });

    signedIn.get('/searches/:id', async (request, reply) => {
      const q = request.query as { cursor?: string; from?: string };
      const view = await searchResults(searchDeps, session(request).accountId, (request.params as { id: string }).id, q.cursor || undefined, resultsPerPage);
      const from = /^\d{1,9}$/.test(q.from ?? '') ? Number(q.from) : 1;
      return send(reply, resultsPage(ctxOf(request), { ...view, offset: view.isFirstPage ? 1 : from }));
    });

    // A POST with the form token, not a link: an export records leads, so a cross-site link must not start one.
    signedIn.post('/searches/:id/export', async (request, reply) => {
      const format = text((request.body as FormBody).format);
      if (!(exportFormatNames as string[]).includes(format)) {
        throw new AppError('validation_failed', `format must be one of ${exportFormatNames.join(', ')}`, { errors: [{ field: 'format', message: 'is not a known format', allowed: exportFormatNames }] });
      }
      const started = await startExport(db, {
        accountId: session(request).accountId,
        searchId: (request.params as { id: string }).id,
        format: format as ExportFormatName,
        fields: undefined,
        // The export button's checkbox: a checked box sends `true`, an unchecked one nothing.
        onlyNew: text((request.body as FormBody).only_new) === 'true' ? true : undefined,
      }, app.quotas);
      return sendExport(reply, started, config.EXPORT_IDLE_TIMEOUT * 1000);
    });

    // Background exports: a POST with the form token, as downloads are (a job records leads).
    signedIn.post('/searches/:id/jobs', async (request, reply) => {
      const body = request.body as FormBody;
      const format = text(body.format);
      if (!(exportFormatNames as string[]).includes(format)) {
        throw new AppError('validation_failed', `format must be one of ${exportFormatNames.join(', ')}`, { errors: [{ field: 'format', message: 'is not a known format', allowed: exportFormatNames }] });
      }
      const webhookUrl = text(body.webhook_url).trim();
      if (webhookUrl && (webhookUrl.length > 2048 || !/^https?:\/\/[^\s/?#@]+(?:[/?#][^\s]*)?$/.test(webhookUrl))) {
        throw new AppError('validation_failed', 'webhook_url must be an http(s) URL', { errors: [{ field: 'webhook_url', message: 'is not an http(s) URL' }] });
      }
      await createJob(db, app.quotas, {
        accountId: session(request).accountId,
        searchId: (request.params as { id: string }).id,
        format: format as ExportFormatName,
        fields: undefined,
        webhookUrl: webhookUrl || undefined,
      });
      jobs.runner.poke();
      return reply.redirect('/exports', 303);
    });

    signedIn.get('/exports', async (request, reply) => {
      const { items, secret } = await exportJobsOverview(db, jobs.links, session(request).accountId, 50);
      const rotated = (request.query as { rotated?: string }).rotated === '1';
      return send(reply, exportJobsPage(ctxOf(request), items, secret, rotated ? 'A new webhook secret is in force: later deliveries, retries included, are signed with it.' : undefined));
    });

    signedIn.post('/exports/webhook-secret', async (request, reply) => {
      await rotateWebhookSecret(db, session(request).accountId);
      return reply.redirect('/exports?rotated=1', 303);
    });

    const suppressionsView = async (request: FastifyRequest, extra: Partial<SuppressionsView> = {}, cursor?: string, from = 1): Promise<SuppressionsView> => ({
      list: await listSuppressions(db, session(request).accountId, { cursor, per_page: suppressionsPerPage }),
      offset: cursor === undefined ? 1 : from,
      isFirstPage: cursor === undefined,
      ...extra,
    });

    signedIn.get('/suppressions', async (request, reply) => {
      const q = request.query as { cursor?: string; from?: string; removed?: string; removed_all?: string };
      const from = /^\d{1,9}$/.test(q.from ?? '') ? Number(q.from) : 1;
      const notice = q.removed === '1' ? 'The entry was removed: its places show in your searches again.'
        : /^\d{1,12}$/.test(q.removed_all ?? '') ? `${Number(q.removed_all).toLocaleString('en')} ${q.removed_all === '1' ? 'entry was' : 'entries were'} removed: your suppression list is empty.` : undefined;
      return send(reply, suppressionsPage(ctxOf(request), await suppressionsView(request, { notice }, q.cursor || undefined, from)));
    });

    // A multipart form: the token and the options come as parts before the file, which is handed to the
    // suppressions service as the stream it reads (the code the API's text/csv upload runs).
    signedIn.post('/suppressions/upload', { config: { csrfInParts: true } }, async (request, reply) => {
      if (!request.isMultipart()) {
        throw new AppError('validation_failed', 'Send the file with the upload form (multipart/form-data)', { errors: [{ field: 'file', message: 'is missing', allowed: ['multipart/form-data'] }] });
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
        throw new AppError(status === 413 ? 'payload_too_large' : 'validation_failed', `The upload could not be read: ${error instanceof Error ? error.message : String(error)}`, { errors: [{ field: 'file', message: 'is not a readable multipart/form-data upload' }] });
      }
      if (!verifyCsrf(session(request), fields._csrf)) {
        part?.file.resume();
        return send(reply, errorPage(ctxOf(request), 403, 'This form has expired', 'The form was not sent from this page, or it was open too long. Go back, reload the page and try again.'), 403);
      }
      const country = (fields.country ?? '').trim().toUpperCase();
      const values = { country, on_invalid: fields.on_invalid === 'skip' ? 'skip' : 'reject' };
      const refuse = async (message: string, errors: FieldError[]) => {
        part?.file.resume();
        return send(reply, suppressionsPage(ctxOf(request), await suppressionsView(request, { upload: { ok: false, message, errors }, values })), 400);
      };
      if (country !== '' && !/^[A-Z]{2}$/.test(country)) return refuse(`country must be a two-letter ISO 3166-1 code, not "${country}"`, [{ field: 'country', message: 'is not a two-letter country code' }]);
      if (!part || part.filename === '') return refuse('Choose a CSV file to upload', [{ field: 'file', message: 'is missing' }]);
      let upload: UploadOutcome;
      try {
        const result = await uploadSuppressionsCsv(db, session(request).accountId, part.file, { country: country || undefined, onInvalid: values.on_invalid as 'reject' | 'skip' });
        upload = { ok: true, result };
      } catch (error) {
        if (!(error instanceof AppError) || error.status >= 500) throw error;
        upload = { ok: false, message: error.message, errors: error.extras.errors ?? [] };
        return send(reply, suppressionsPage(ctxOf(request), await suppressionsView(request, { upload, values })), error.status);
      }
      return send(reply, suppressionsPage(ctxOf(request), await suppressionsView(request, { upload, values })));
    });

    signedIn.post('/suppressions/:id/remove', async (request, reply) => {
      const id = (request.params as { id: string }).id;
      if (!/^\d{1,15}$/.test(id)) throw new AppError('not_found', `suppression ${id} does not exist`);
      await removeSuppression(db, session(request).accountId, Number(id));
      return reply.redirect('/suppressions?removed=1', 303);
    });

    signedIn.post('/suppressions/remove-all', async (request, reply) => {
      if (text((request.body as FormBody).confirm) !== 'yes') {
        const view = await suppressionsView(request, { removeAllError: 'must be ticked to remove every entry' });
        return send(reply, suppressionsPage(ctxOf(request), view), 400);
      }
      const { deleted } = await removeAllSuppressions(db, session(request).accountId);
      return reply.redirect(`/suppressions?removed_all=${deleted}`, 303);
    });

    signedIn.get('/usage', async (request, reply) => {
      const accountId = session(request).accountId;
      const [days, usage] = await Promise.all([usageByDay(db, accountId, usageDays), app.quotas.usageOf(accountId)]);
      return send(reply, usagePage(ctxOf(request), days, usage, app.meter.tokenPolicy.quota));
    });
  });
}

/** Form values are strings, or arrays when a name repeats; a field sent twice counts as its first value. */
function text(value: string | string[] | undefined): string {
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

function list(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : ([] as string[]).concat(value);
}

/**
 * The search form as the API's parameters, as text: empty inputs left out, ticked boxes `true`. The search
 * service checks them with the API's own schema (`parseSearchParams`), so the form follows the API's rules.
 */
function searchParamsOf(body: FormBody): Record<string, string> {
  const params: Record<string, string> = {};
  for (const name of ['type', 'city', 'country', 'query', 'min_rating', 'sort'] as const) {
    const value = text(body[name]).trim();
    if (value !== '') params[name] = value;
  }
  for (const name of ['has_phone', 'has_website', 'has_email', 'has_social'] as const) if (text(body[name]) === 'yes') params[name] = 'true';
  return params;
}

/** Days from the expiry radio; `never` only with the confirmation box ticked. */
export function parseExpiry(value: string, confirmedNoExpiry: boolean): number | null {
  if (value === 'never') {
    if (confirmedNoExpiry) return null;
    throw new AppError('validation_failed', 'confirm_no_expiry: tick the confirmation to create a token without expiry', {
      errors: [{ field: 'confirm_no_expiry', message: 'must be ticked to create a token without expiry' }],
    });
  }
  const days = Number(value);
  if (!(expiryChoices as readonly number[]).includes(days)) {
    throw new AppError('validation_failed', `expiry: must be one of ${expiryChoices.join(', ')} days or never`, {
      errors: [{ field: 'expiry', message: `must be one of ${expiryChoices.join(', ')} days, or no expiry`, allowed: [...expiryChoices, 'never'] }],
    });
  }
  return days;
}

/** Turns a service error into the form's error list; anything that is not an AppError is rethrown (500). */
function formError(error: unknown, values: FormState['values']): FormState {
  if (!(error instanceof AppError)) throw error;
  // The services name fields as the API does (`querystring.city`); the form's inputs are named `city`. An
  // error about the whole request (`querystring`: say what to search for) is the form's general message.
  const all = error.extras.errors ?? [];
  const errors: FieldError[] = all.filter((e) => e.field.includes('.') || !/^(querystring|body)$/.test(e.field)).map((e) => ({ ...e, field: e.field.replace(/^(querystring|body)\./, '') }));
  return { values, errors, general: errors.length < all.length || errors.length === 0 ? error.message : undefined };
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

function statusOf(error: unknown): number {
  return error instanceof AppError ? error.status : 500;
}

/**
 * Where to go after sign-in: a path of this site, or '' (the default page). The value is read as a
 * browser would, relative to this origin, and kept only if it stays on it; what is returned is the
 * parsed path, query and fragment, percent-encoded, so it is always a valid Location header. Control
 * characters and backslashes are refused before parsing: browsers drop or rewrite them (`/\tevil`),
 * which is how a value that looks like a path can lead elsewhere.
 */
export function safeNext(next: string | undefined): string {
  if (!next || !next.startsWith('/') || /[\u0000-\u001f\u007f\\]/.test(next)) return '';
  const base = 'http://leadatlas.invalid';
  let url: URL;
  try {
    url = new URL(next, base);
  } catch {
    return '';
  }
  if (url.origin !== base) return '';
  const path = `${url.pathname}${url.search}${url.hash}`;
  // Parsed again on its own it must still be here: `//host` would not.
  return path.startsWith('/') && !path.startsWith('//') ? path : '';
}

/** A service refusal's headers (Retry-After of a throttled sign-in or sign-up) on the page that shows it. */
function withErrorHeaders(reply: FastifyReply, error: unknown): FastifyReply {
  return error instanceof AppError ? reply.headers(error.headers) : reply;
}

function constantTimeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function baseUrl(config: Config, request: FastifyRequest): string {
  return config.PUBLIC_URL?.replace(/\/+$/, '') ?? `${request.protocol}://${request.host}`;
}

/** `public/` beside this file; the compiled build (dist/) has no copy, so it falls back to the source tree. */
function findPublicDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, 'public'), join(here, '../../../src/modules/dashboard/public')];
  const found = candidates.find((c) => existsSync(join(c, 'app.css')));
  if (!found) throw new Error(`dashboard assets not found in ${candidates.join(' or ')}`);
  return found;
}

/** Changes whenever an asset changes, so asset URLs can be cached for days. */
function assetsHash(dir: string): string {
  const hash = createHash('sha256');
  for (const f of readdirSync(dir).sort()) hash.update(f).update(readFileSync(join(dir, f)));
  return hash.digest('hex').slice(0, 10);
}
