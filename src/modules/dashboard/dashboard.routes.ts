import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import helmet from '@fastify/helmet';
import multipart from '@fastify/multipart';
import fastifyStatic from '@fastify/static';
import type { FastifyError, FastifyInstance } from 'fastify';
import { isDatabaseUnavailable } from '../../infra/db/availability.ts';
import { AppError } from '../../infra/errors.ts';
import { maxCsvBytes } from '../suppressions/suppressions.schema.ts';
import { csrfPlugin } from './csrf.ts';
import { exportJobsPageRoutes } from './exports.routes.ts';
import { matchPageRoutes } from './match.routes.ts';
import { monitorsPageRoutes } from './monitors.routes.ts';
import { createPageKit, type DashboardOptions, type PageOptions } from './page-kit.ts';
import { errorPage } from './pages.ts';
import { searchPageRoutes } from './search.routes.ts';
import { sessionRoutes } from './session.routes.ts';
import { suppressionsPageRoutes } from './suppressions.routes.ts';
import { tokensRoutes } from './tokens.routes.ts';
import { usageRoutes } from './usage.routes.ts';

/**
 * The web dashboard, served by the API process. Registered as an encapsulated plugin: its form
 * parser, cookies, security headers (strict CSP, no inline script) and HTML error pages apply to
 * the dashboard's routes only, and the API stays JSON and token-only. Each page's routes are a file of
 * their own (`<page>.routes.ts`); the form tokens are csrf.ts's.
 */
export async function dashboardRoutes(app: FastifyInstance, options: DashboardOptions): Promise<void> {
  const { config } = options;
  const publicDir = findPublicDir();
  const kit = createPageKit(config, assetsHash(publicDir));
  const { secure } = kit;

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
  await app.register(multipart, {
    throwFileSizeLimit: false,
    limits: { fileSize: maxCsvBytes + 1, files: 1, fields: 8, fieldSize: 1024, parts: 9 },
  });
  if (!app.hasRequestDecorator('cookies')) await app.register(cookie);
  await app.register(fastifyStatic, { root: publicDir, prefix: '/assets/', decorateReply: false, maxAge: '7d' });

  app.decorateRequest('dashboard', null);

  app.addHook('preHandler', async (request) => {
    if (request.url.startsWith('/assets/')) return;
    const cookieValue = request.cookies[kit.sessionCookie];
    request.dashboard = { session: await app.accounts.getSession(cookieValue), cookieValue, csrfToken: '' };
  });
  await app.register(csrfPlugin, {
    cookieName: kit.preSessionCookie,
    secure,
    sessionOf: (request) => request.dashboard?.session ?? null,
    setToken: (request, token) => {
      if (request.dashboard) request.dashboard.csrfToken = token;
    },
    refuse: kit.formExpired,
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const ctx = kit.ctx(request);
    if (error instanceof AppError) return kit.send(reply, errorPage(ctx, error.status, error.title, error.message), error.status);
    if (error.statusCode && error.statusCode < 500)
      return kit.send(reply, errorPage(ctx, error.statusCode, 'The request is not valid', error.message), error.statusCode);
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: error }, 'the database does not answer');
      reply.header('retry-after', '1');
      return kit.send(
        reply,
        errorPage(
          ctx,
          503,
          'Back in a moment',
          'The database does not answer right now. Try again in a moment; nothing you sent was saved.',
        ),
        503,
      );
    }
    request.log.error({ err: error }, 'unhandled dashboard error');
    return kit.send(
      reply,
      errorPage(
        ctx,
        500,
        'Something went wrong',
        'Something went wrong on our side. Quote the request id when reporting it: ' + String(request.id),
      ),
      500,
    );
  });

  const pages: PageOptions = { ...options, kit };
  await app.register(sessionRoutes, pages);
  // The signed-in pages: each adds the session check to its own routes.
  for (const routes of [
    tokensRoutes,
    searchPageRoutes,
    exportJobsPageRoutes,
    matchPageRoutes,
    monitorsPageRoutes,
    suppressionsPageRoutes,
    usageRoutes,
  ])
    await app.register(routes, pages);
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
