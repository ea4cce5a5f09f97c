import type { FastifyInstance, FastifyRequest, HookHandlerDoneFunction, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.ts';
import type { Db } from '../infra/db/database.ts';
import { AppError } from '../infra/errors.ts';
import { createRateLimiter, type RateLimiter } from '../infra/ratelimit/ratelimit.ts';
import { AccountService } from '../modules/auth/accounts.service.ts';
import type { Scope } from '../modules/auth/auth.types.ts';
import { TokenService, type TokenServiceOptions, type VerifyFailure, type VerifyResult } from '../modules/auth/tokens.service.ts';
import { UsageRecorder } from '../modules/auth/usage.service.ts';

export interface AuthPluginOptions {
  db: Db;
  config: Config;
  /** Tests pass their own; otherwise chosen by REDIS_URL. */
  rateLimiter?: RateLimiter;
  tokenOptions?: TokenServiceOptions;
  usageFlushIntervalMs?: number;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Accounts and dashboard sessions (sign-up, sign-in, sign-out, change password). */
    accounts: AccountService;
    /** Personal access tokens; revoke and rotate through this instance so its cache forgets them at once. */
    tokens: TokenService;
    /** API requests per account and day, for the dashboard's usage chart. */
    usage: UsageRecorder;
    rateLimiter: RateLimiter;
  }
}

const realm = 'leadatlas';

const failures: Record<'missing' | VerifyFailure, string> = {
  missing: 'The request has no Authorization: Bearer token',
  malformed: 'The Authorization header does not hold a LeadAtlas token (Bearer la_pat_...) with a valid checksum',
  unknown: 'The token is not valid',
  expired: 'The token has expired',
  revoked: 'The token has been revoked',
};

/**
 * Bearer-token authentication for every route that declares `config: { scope }`, answering
 * 401/403 problem+json itself (RFC 6750 WWW-Authenticate) and counting the account's usage.
 */
export const authPlugin = fp(async function authPlugin(app: FastifyInstance, options: AuthPluginOptions) {
  const rateLimiter = options.rateLimiter ?? createRateLimiter(options.config.REDIS_URL);
  const tokens = new TokenService(options.db, {
    onBackgroundError: (err) => app.log.warn({ err }, 'recording a token use failed'),
    ...options.tokenOptions,
  });
  const usage = new UsageRecorder(options.db, {
    flushIntervalMs: options.usageFlushIntervalMs ?? 10_000,
    onError: (err) => app.log.warn({ err }, 'writing API usage failed'),
  });
  app.decorate('rateLimiter', rateLimiter);
  app.decorate('accounts', new AccountService(options.db, rateLimiter));
  app.decorate('tokens', tokens);
  app.decorate('usage', usage);
  app.decorateRequest('auth', null);

  /**
   * The last Authorization header a keep-alive connection presented successfully, with its token
   * hash: the connection's next request with the same header skips the SHA-256. It holds only
   * what that connection itself sent, and is re-checked against the token cache every time, so
   * revocation and expiry apply at once.
   */
  const connectionMemo = new WeakMap<object, { header: string; tokenHash: string }>();

  // The check is attached only to routes that declare a scope, when they are added: other routes
  // pay nothing, and the scope and route pattern are known once instead of looked up per request.
  app.addHook('onRoute', (route) => {
    const scope = route.config?.scope;
    if (!scope) return;
    const routeUrl = route.url;
    const settle = (request: FastifyRequest, result: VerifyResult, done: HookHandlerDoneFunction, header: string) => {
      if (!result.ok) return done(unauthorized(result.reason));
      connectionMemo.set(request.raw.socket, { header, tokenHash: result.tokenHash });
      if (!result.auth.scopes.has(scope)) return done(forbidden(scope));
      request.auth = result.auth;
      usage.record(result.auth.accountId, routeUrl);
      done();
    };
    // Callback style, not async: a token seen in the last seconds is answered without a promise hop.
    const authenticate: onRequestHookHandler = (request, reply, done) => {
      const header = request.headers.authorization;
      if (header === undefined || header.trim() === '') return done(unauthorized('missing'));
      const memo = connectionMemo.get(request.raw.socket);
      if (memo && memo.header === header) {
        const again = tokens.verifyHashNow(memo.tokenHash, request.ip);
        if (again) return settle(request, again, done, header);
      }
      const match = /^Bearer +([^\s]+) *$/i.exec(header);
      if (!match?.[1]) return done(unauthorized('malformed'));
      const immediate = tokens.verifyTokenNow(match[1], request.ip);
      if (immediate) return settle(request, immediate, done, header);
      tokens.verifyToken(match[1], request.ip).then((result) => settle(request, result, done, header), done);
    };
    route.onRequest = route.onRequest ? [authenticate, ...[route.onRequest].flat()] : [authenticate];
  });

  app.addHook('onClose', async () => {
    await usage.close();
    await tokens.close();
    if (!options.rateLimiter) await rateLimiter.close();
  });
});

function unauthorized(reason: 'missing' | VerifyFailure): AppError {
  const detail = failures[reason];
  // RFC 6750 §3.1: a request without credentials gets the challenge alone, without an error code.
  const challenge = reason === 'missing' ? `Bearer realm="${realm}"` : `Bearer realm="${realm}", error="invalid_token", error_description="${detail}"`;
  return new AppError('unauthorized', detail, { reason }, { 'www-authenticate': challenge });
}

function forbidden(scope: Scope): AppError {
  return new AppError('forbidden', `This token lacks the "${scope}" scope this route needs`, { reason: 'insufficient_scope', scope }, {
    'www-authenticate': `Bearer realm="${realm}", error="insufficient_scope", error_description="The token lacks the ${scope} scope", scope="${scope}"`,
  });
}
