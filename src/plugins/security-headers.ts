import type { FastifyInstance, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';

export interface SecurityHeadersOptions {
  /** Behind an https PUBLIC_URL, HSTS is sent too. */
  publicUrl?: string;
}

/**
 * The baseline security headers (OWASP REST recommendations) as a list, for the answers that never
 * reach a route: the raw server's parser errors and Fastify's bad-URL answers.
 */
export function securityHeaders(publicUrl: string | undefined): Record<string, string> {
  return {
    // Answers to credentialed requests stay out of shared caches; a route may set its own policy.
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    // JSON is never a page: nothing may frame it or run from it. HTML routes send their own policy.
    'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
    'referrer-policy': 'no-referrer',
    ...(publicUrl?.startsWith('https://') ? { 'strict-transport-security': 'max-age=31536000; includeSubDomains' } : {}),
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Sets the baseline security headers on a reply that bypassed the hooks (framework errors). */
    applySecurityHeaders(reply: FastifyReply): void;
  }
}

/**
 * Sets the baseline security headers on every answer before any route runs, so that API answers,
 * `/docs`, `/openapi.json`, `/healthz`, 404s and errors all carry them. The dashboard's helmet
 * replaces the Content-Security-Policy with the one its pages need; `/docs` sends its own too.
 */
export const securityHeadersPlugin = fp(async function securityHeadersPlugin(app: FastifyInstance, options: SecurityHeadersOptions) {
  const headers = securityHeaders(options.publicUrl);
  app.decorate('applySecurityHeaders', (reply: FastifyReply) => {
    reply.headers(headers);
  });
  const entries = Object.entries(headers);
  // On the raw response: a route's own reply.header() and the dashboard's helmet (which also writes
  // the raw response, later) replace these, instead of these replacing theirs when the reply is sent.
  app.addHook('onRequest', (_request, reply, done) => {
    for (const [name, value] of entries) reply.raw.setHeader(name, value);
    done();
  });
});
