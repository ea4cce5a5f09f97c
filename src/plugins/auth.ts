import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.ts';
import type { Db } from '../infra/db/database.ts';
import { AppError } from '../infra/errors.ts';
import { scopeCosts } from '../infra/ratelimit/costs.ts';
import { AccountService } from '../modules/auth/accounts.service.ts';
import type { AuthContext, Scope } from '../modules/auth/auth.types.ts';
import { nextUtcDay, QuotaService, secondsUntil } from '../modules/auth/quotas.service.ts';
import { TokenService, type TokenServiceOptions, type VerifyFailure, type VerifyResult } from '../modules/auth/tokens.service.ts';
import { UsageRecorder } from '../modules/auth/usage.service.ts';

export interface AuthPluginOptions {
  db: Db;
  config: Config;
  tokenOptions?: TokenServiceOptions;
  usageFlushIntervalMs?: number;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Accounts and dashboard sessions (sign-up, sign-in, sign-out, change password). */
    accounts: AccountService;
    /** Personal access tokens; revoke and rotate through this instance so its cache forgets them at once. */
    tokens: TokenService;
    /** API requests per account and day, for the dashboard's usage chart and the daily quota. */
    usage: UsageRecorder;
    /** Per-account quotas (requests a day, exported rows a month, concurrent exports). */
    quotas: QuotaService;
    /**
     * The check of a protected route, for an operation that is not a route of its own (a message to /mcp):
     * the bearer token, the scope, the charge. Resolves to the refusal to send (401, 403, 429), or nothing.
     */
    authorizeOperation(request: FastifyRequest, reply: FastifyReply, operation: Operation): Promise<AppError | undefined>;
  }
}

/** A protected operation: the scope a token needs (null: any valid token), its cost in units, the route it is counted under. */
export interface Operation {
  scope: Scope | null;
  cost: number;
  routeUrl: string;
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
 * 401/403 problem+json itself (RFC 6750 WWW-Authenticate), charging the request to the token's rate
 * limit and the account's daily quota (or, refused, to its IP; see plugins/ratelimit.ts) and counting
 * the account's usage. Also provides the account, token, usage and quota services to the dashboard.
 * Register after the rate-limit plugin.
 */
export const authPlugin = fp(async function authPlugin(app: FastifyInstance, options: AuthPluginOptions) {
  const { rateLimiter, meter } = app;
  const { config } = options;
  const tokens = new TokenService(options.db, {
    onBackgroundError: (err) => app.log.warn({ err }, 'recording a token use failed'),
    ...options.tokenOptions,
  });
  const usage = new UsageRecorder(options.db, {
    flushIntervalMs: options.usageFlushIntervalMs ?? 10_000,
    onError: (err) => app.log.warn({ err }, 'writing API usage failed'),
  });
  const quotas = new QuotaService(
    options.db,
    rateLimiter,
    {
      requestsPerDay: config.QUOTA_REQUESTS_PER_DAY,
      exportRowsPerMonth: config.QUOTA_EXPORT_ROWS_PER_MONTH,
      concurrentExports: config.QUOTA_CONCURRENT_EXPORTS,
      enrichPlacesPerMonth: config.QUOTA_ENRICH_PLACES_PER_MONTH,
      matchRowsPerMonth: config.QUOTA_MATCH_ROWS_PER_MONTH,
    },
    usage,
  );
  app.decorate(
    'accounts',
    new AccountService(options.db, rateLimiter, undefined, {
      perIpPerHour: config.SIGNUP_LIMIT_PER_IP_PER_HOUR,
      perHour: config.SIGNUP_LIMIT_PER_HOUR,
    }),
  );
  app.decorate('tokens', tokens);
  app.decorate('usage', usage);
  app.decorate('quotas', quotas);

  /** The daily quota and the token's rate; counts the request for the usage chart once it is let through. */
  const charge = async (
    request: FastifyRequest,
    reply: FastifyReply,
    auth: AuthContext,
    cost: number,
    routeUrl: string,
  ): Promise<AppError | undefined> => {
    const accountQuotas = quotas.forAccountNow(auth.accountId) ?? (await quotas.forAccount(auth.accountId));
    const requestsToday = usage.requestsTodayNow(auth.accountId) ?? (await usage.requestsToday(auth.accountId));
    const now = new Date();
    const refused = await meter.chargeToken(request, reply, {
      tokenId: auth.tokenId ?? 0,
      cost,
      requestsPerDay: accountQuotas.requestsPerDay,
      requestsToday,
      dayEndsInSeconds: secondsUntil(now, nextUtcDay(now)),
    });
    if (!refused) usage.record(auth.accountId, routeUrl);
    return refused;
  };
  app.decorateRequest('auth', null);

  /**
   * The last Authorization header a keep-alive connection presented successfully, with its token
   * hash: the connection's next request with the same header skips the SHA-256. It holds only
   * what that connection itself sent, and is re-checked against the token cache every time, so
   * revocation and expiry apply at once.
   */
  const connectionMemo = new WeakMap<object, { header: string; tokenHash: string }>();

  /**
   * What every protected operation runs before its handler: verify the bearer token, check `operation.scope`
   * (none: any valid token), then charge `operation.cost` to the token's rate and the account's daily quota
   * (a cost of 0 only verifies: the operation is charged where it runs, as /mcp's tool calls are by the route
   * they call). Sets `request.auth`; calls back with the refusal to send (401, 403, 429), or nothing.
   * Callback style, not async: a token seen in the last seconds is verified without a promise hop.
   */
  const authorize = (request: FastifyRequest, reply: FastifyReply, operation: Operation, done: (refusal?: Error) => void) => {
    const { scope, cost, routeUrl } = operation;
    /** A refused credential costs its IP a request (or answers 429 once the IP is over its limit). */
    const refuse = (error: AppError) => {
      meter.chargeIp(request, reply).then((limited) => done(limited ?? error), done);
    };
    const settle = (result: VerifyResult, header: string) => {
      if (!result.ok) return refuse(unauthorized(result.reason));
      connectionMemo.set(request.raw.socket, { header, tokenHash: result.tokenHash });
      if (scope !== null && !result.auth.scopes.has(scope)) return refuse(forbidden(scope));
      request.auth = result.auth;
      if (cost === 0) return done();
      charge(request, reply, result.auth, cost, routeUrl).then((refused) => done(refused), done);
    };
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') return refuse(unauthorized('missing'));
    const memo = connectionMemo.get(request.raw.socket);
    if (memo && memo.header === header) {
      const again = tokens.verifyHashNow(memo.tokenHash, request.ip);
      if (again) return settle(again, header);
    }
    const match = /^Bearer +([^\s]+) *$/i.exec(header);
    if (!match?.[1]) return refuse(unauthorized('malformed'));
    const immediate = tokens.verifyTokenNow(match[1], request.ip);
    if (immediate) return settle(immediate, header);
    tokens.verifyToken(match[1], request.ip).then((result) => settle(result, header), done);
  };
  app.decorate(
    'authorizeOperation',
    (request: FastifyRequest, reply: FastifyReply, operation: Operation) =>
      new Promise<AppError | undefined>((resolve, reject) =>
        authorize(request, reply, operation, (refusal) =>
          refusal === undefined || refusal instanceof AppError ? resolve(refusal) : reject(refusal),
        ),
      ),
  );

  // The check is attached only to routes that declare a scope, when they are added: other routes
  // pay nothing, and the scope and route pattern are known once instead of looked up per request.
  app.addHook('onRoute', (route) => {
    const scope = route.config?.scope;
    if (!scope) return;
    const operation: Operation = { scope, cost: route.config?.cost ?? scopeCosts[scope], routeUrl: route.url };
    const authenticate: onRequestHookHandler = (request, reply, done) => authorize(request, reply, operation, done);
    route.onRequest = route.onRequest ? [authenticate, ...[route.onRequest].flat()] : [authenticate];
  });

  app.addHook('onClose', async () => {
    await usage.close();
    await tokens.close();
  });
});

function unauthorized(reason: 'missing' | VerifyFailure): AppError {
  const detail = failures[reason];
  // RFC 6750 §3.1: a request without credentials gets the challenge alone, without an error code.
  const challenge =
    reason === 'missing' ? `Bearer realm="${realm}"` : `Bearer realm="${realm}", error="invalid_token", error_description="${detail}"`;
  return new AppError('unauthorized', detail, { reason }, { 'www-authenticate': challenge });
}

function forbidden(scope: Scope): AppError {
  return new AppError(
    'forbidden',
    `This token lacks the "${scope}" scope this route needs`,
    { reason: 'insufficient_scope', scope },
    {
      'www-authenticate': `Bearer realm="${realm}", error="insufficient_scope", error_description="The token lacks the ${scope} scope", scope="${scope}"`,
    },
  );
}
