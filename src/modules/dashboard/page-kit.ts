import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { type Session, sessionCookieName } from '../auth/accounts.service.ts';
import type { ExportJobs } from '../exports/export-jobs.ts';
import type { MatchJobs } from '../match/match-jobs.ts';
import type { Search } from '../search/search.ts';
import type { SafeHtml } from './html.ts';
import type { PageContext } from './layout.ts';
import { errorPage } from './pages.ts';

export interface DashboardOptions {
  config: Config;
  db: Db;
  /** The app's search object (`createSearch`): the dashboard's searches share the API's engine, read pool and caches. */
  search: Search;
  /** Export jobs: their download links and the queues to wake. */
  jobs: ExportJobs;
  /** Match jobs: the "Match a list" page uploads through their service and reads their links. */
  matchJobs: MatchJobs;
}

export interface DashboardState {
  session: Session | null;
  /** The raw session cookie, needed to keep this session when the password changes. */
  cookieValue: string | undefined;
  csrfToken: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on dashboard routes only: the session and the form token of this request. */
    dashboard: DashboardState | null;
  }
}

/** What every page of the dashboard is given (built once in dashboard.routes.ts). */
export interface PageOptions extends DashboardOptions {
  kit: PageKit;
}

/** The pieces every page's routes share: the page context, sending a page, the session. */
export interface PageKit {
  /** `__Host-` cookies (and HSTS) only when served over https. */
  secure: boolean;
  sessionCookie: string;
  preSessionCookie: string;
  ctx(request: FastifyRequest): PageContext;
  send(reply: FastifyReply, body: SafeHtml, status?: number): FastifyReply;
  /** The answer to a form whose token is missing or wrong. */
  formExpired(request: FastifyRequest, reply: FastifyReply): FastifyReply;
  /** The signed-in session (routes behind `requireSession` only). */
  session(request: FastifyRequest): Session;
  /** A preHandler sending visitors without a session to the sign-in page. */
  requireSession(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined>;
}

export function createPageKit(config: Config, assetVersion: string): PageKit {
  const secure = config.PUBLIC_URL?.startsWith('https://') ?? false;
  const kit: PageKit = {
    secure,
    sessionCookie: secure ? `__Host-${sessionCookieName}` : sessionCookieName,
    preSessionCookie: secure ? '__Host-la_csrf' : 'la_csrf',
    ctx: (request) => ({
      email: request.dashboard?.session?.email ?? null,
      csrfToken: request.dashboard?.csrfToken ?? '',
      path: request.url.split('?')[0] ?? '/',
      assetVersion,
    }),
    send: (reply, body, status = 200) =>
      reply.code(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(body.value),
    formExpired: (request, reply) =>
      kit.send(
        reply,
        errorPage(
          kit.ctx(request),
          403,
          'This form has expired',
          'The form was not sent from this page, or it was open too long. Go back, reload the page and try again.',
        ),
        403,
      ),
    session: (request) => {
      const session = request.dashboard?.session;
      if (!session) throw new Error('a signed-in page was reached without a session');
      return session;
    },
    requireSession: async (request, reply) => {
      if (request.dashboard?.session) return undefined;
      const next = request.method === 'GET' ? request.url : '/search';
      return reply.redirect(`/signin?next=${encodeURIComponent(next)}`, 303);
    },
  };
  return kit;
}

/** Where links in pages point: the configured public URL, else the address the request came to. */
export function baseUrl(config: Config, request: FastifyRequest): string {
  return config.PUBLIC_URL?.replace(/\/+$/, '') ?? `${request.protocol}://${request.host}`;
}
