import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { type Session, verifyCsrf } from '../auth/accounts.service.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A multipart dashboard route that checks the form token itself, from the parts before the file. */
    csrfInParts?: boolean;
  }
}

export interface CsrfOptions {
  /** The double-submit cookie of the forms shown before there is a session (sign-in, sign-up). */
  cookieName: string;
  secure: boolean;
  /** The session of the request, null when signed out (read by an earlier hook). */
  sessionOf: (request: FastifyRequest) => Session | null;
  /** Keeps the request's form token where the pages read it. */
  setToken: (request: FastifyRequest, token: string) => void;
  /** Answers a POST whose token is missing or wrong (the "form has expired" page). */
  refuse: (request: FastifyRequest, reply: FastifyReply) => FastifyReply;
}

/**
 * CSRF for the dashboard's forms: signed-in forms carry the session's synchroniser token; the sign-in and
 * sign-up forms (no session yet) use a double-submit cookie. Every POST is checked before its handler runs,
 * except a multipart route marked `csrfInParts`, which checks the token read from the parts before the file
 * with `formTokenMatches` (any other route given a multipart body finds no `_csrf` and is refused here).
 * Registered with fastify-plugin so its hook applies to every route of the dashboard that registers it.
 */
export const csrfPlugin = fp(async function csrfPlugin(app: FastifyInstance, options: CsrfOptions) {
  app.addHook('preHandler', async (request, reply) => {
    if (request.url.startsWith('/assets/')) return;
    const session = options.sessionOf(request);
    let token: string;
    if (session) token = session.csrfToken;
    else {
      token = request.cookies[options.cookieName] ?? '';
      if (!/^[\w-]{43}$/.test(token)) {
        token = randomBytes(32).toString('base64url');
        reply.setCookie(options.cookieName, token, { httpOnly: true, secure: options.secure, sameSite: 'strict', path: '/' });
      }
    }
    options.setToken(request, token);
    if (request.method === 'POST' && !(request.isMultipart() && request.routeOptions.config.csrfInParts === true)) {
      const { body } = request;
      const submitted = body !== null && typeof body === 'object' && '_csrf' in body ? body._csrf : undefined;
      if (!formTokenMatches(session, token, submitted)) return options.refuse(request, reply);
    }
  });
});

/** The submitted `_csrf` is the session's token, or (signed out) the double-submit cookie's. */
export function formTokenMatches(session: Session | null, token: string, submitted: unknown): boolean {
  return session ? verifyCsrf(session, submitted) : typeof submitted === 'string' && constantTimeEqual(submitted, token);
}

function constantTimeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
