import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.ts';
import { AppError } from '../infra/errors.ts';
import { unauthenticatedCost } from '../infra/ratelimit/costs.ts';
import { createRateLimiter, type RateLimiter } from '../infra/ratelimit/ratelimit.ts';
import { maxUrlLength } from './errors.ts';

export interface RateLimitPluginOptions {
  config: Config;
  /** Tests pass their own; otherwise chosen by REDIS_URL. */
  rateLimiter?: RateLimiter;
}

declare module 'fastify' {
  interface FastifyInstance {
    rateLimiter: RateLimiter;
    /** Charges each request to its caller's limits and announces them (RateLimit-Policy, RateLimit). */
    meter: RequestMeter;
  }
  interface FastifyContextConfig {
    /** Units this route costs against the caller's rate limit, instead of its scope's (`scopeCosts`). */
    cost?: number;
  }
}

/** A policy as announced in RateLimit-Policy (draft-ietf-httpapi-ratelimit-headers-11). */
interface Policy {
  name: string;
  quota: number;
  windowSeconds: number;
}

/** One policy's state for the RateLimit field. */
interface Standing {
  name: string;
  remaining: number;
  resetSeconds: number;
}

/** What the auth plugin knows of a token's caller when it charges the request. */
export interface TokenCharge {
  tokenId: number;
  cost: number;
  requestsPerDay: number;
  requestsToday: number;
  /** Seconds until the UTC day, and so the daily count, ends. */
  dayEndsInSeconds: number;
}

const sfString = (name: string) => `"${name}"`;

/**
 * Charges requests to their caller's budget and says so on every answer, with the structured fields of
 * draft-ietf-httpapi-ratelimit-headers-11:
 *
 * - a request with a valid token: the token's rate (`"token"`, RATE_LIMIT_TOKEN_PER_MINUTE units a
 *   minute, GCRA: all at once or spread) at the route's cost, and the account's requests of the UTC day
 *   (`"daily"`, its quota);
 * - any other request (pages, /docs, /healthz, a missing or refused token): its IP's rate (`"ip"`,
 *   RATE_LIMIT_IP_PER_MINUTE requests a minute), IPv6 addresses by their /64.
 *
 * Over a limit: 429 problem+json naming the policy in `violated-policies`, with Retry-After.
 */
export class RequestMeter {
  readonly tokenPolicy: Policy;
  readonly ipPolicy: Policy;
  private readonly ipPolicyField: string;

  constructor(
    private readonly limiter: RateLimiter,
    config: Pick<Config, 'RATE_LIMIT_TOKEN_PER_MINUTE' | 'RATE_LIMIT_IP_PER_MINUTE'>,
  ) {
    this.tokenPolicy = { name: 'token', quota: config.RATE_LIMIT_TOKEN_PER_MINUTE, windowSeconds: 60 };
    this.ipPolicy = { name: 'ip', quota: config.RATE_LIMIT_IP_PER_MINUTE, windowSeconds: 60 };
    this.ipPolicyField = policyField([this.ipPolicy]);
  }

  /** Charges a request without a valid token to its IP; the refusal to send, if over the limit. */
  async chargeIp(request: FastifyRequest, reply: FastifyReply): Promise<AppError | undefined> {
    const { quota, windowSeconds, name } = this.ipPolicy;
    const r = await this.limiter.take(`ip:${ipKey(request.ip)}`, quota, windowSeconds, unauthenticatedCost);
    reply.header('ratelimit-policy', this.ipPolicyField);
    reply.header('ratelimit', standingField([{ name, remaining: r.remaining, resetSeconds: r.resetSeconds }]));
    if (r.allowed) return undefined;
    return refuse(
      reply,
      'rate_limited',
      name,
      r.retryAfterSeconds,
      `Too many requests from this address: ${quota} a minute without a token. Retry in ${r.retryAfterSeconds} s.`,
    );
  }

  /** Charges a request with a valid token: the account's daily quota first, then the token's rate. */
  async chargeToken(request: FastifyRequest, reply: FastifyReply, charge: TokenCharge): Promise<AppError | undefined> {
    const { quota, windowSeconds, name } = this.tokenPolicy;
    const daily: Policy = { name: 'daily', quota: charge.requestsPerDay, windowSeconds: 86_400 };
    reply.header('ratelimit-policy', policyField([this.tokenPolicy, daily]));
    const dailyLeft = Math.max(0, charge.requestsPerDay - charge.requestsToday);
    const overDaily = dailyLeft === 0;
    // Past the daily quota the token's rate is only read (cost 0): a refused request spends nothing.
    const r = await this.limiter.take(`token:${charge.tokenId}`, quota, windowSeconds, overDaily ? 0 : charge.cost);
    const dailyAfter = overDaily || !r.allowed ? dailyLeft : dailyLeft - 1;
    reply.header(
      'ratelimit',
      standingField([
        { name, remaining: r.remaining, resetSeconds: r.resetSeconds },
        { name: daily.name, remaining: dailyAfter, resetSeconds: charge.dayEndsInSeconds },
      ]),
    );
    if (overDaily) {
      return refuse(
        reply,
        'quota_exceeded',
        daily.name,
        charge.dayEndsInSeconds,
        `This account has made its ${charge.requestsPerDay.toLocaleString('en')} API requests of the day (UTC); the quota renews at midnight UTC.`,
      );
    }
    if (r.allowed) return undefined;
    return refuse(
      reply,
      'rate_limited',
      name,
      r.retryAfterSeconds,
      `Too many requests for this token: ${quota} units a minute, and this request costs ${charge.cost}. Retry in ${r.retryAfterSeconds} s.`,
    );
  }
}

function refuse(
  reply: FastifyReply,
  code: 'rate_limited' | 'quota_exceeded',
  policy: string,
  retryAfter: number,
  detail: string,
): AppError {
  // On the reply itself, so that any error handler (the dashboard's HTML pages too) sends it.
  reply.header('retry-after', String(retryAfter));
  return new AppError(code, detail, { 'violated-policies': [policy], retry_after: retryAfter });
}

/** `"token";q=1200;w=60, "daily";q=10000;w=86400` */
function policyField(policies: Policy[]): string {
  return policies.map((p) => `${sfString(p.name)};q=${p.quota};w=${p.windowSeconds}`).join(', ');
}

/** `"token";r=1198;t=1, "daily";r=9990;t=43200` */
function standingField(standings: Standing[]): string {
  return standings.map((s) => `${sfString(s.name)};r=${s.remaining};t=${s.resetSeconds}`).join(', ');
}

/**
 * The key an IP is counted under: IPv4 as it is, IPv6 by its /64 (one subscriber's network, which a
 * client can otherwise walk through address by address).
 */
export function ipKey(ip: string): string {
  if (!ip.includes(':')) return ip;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped?.[1]) return mapped[1];
  const [head = '', tail = ''] = ip.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = ip.includes('::') && tail ? tail.split(':') : [];
  const groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * Chooses the rate limiter (memory, or Redis with a memory fallback), and charges every request to a
 * route without a scope to its IP. Routes with a scope are charged by the auth plugin once it knows the
 * token (to the token) or has refused it (to the IP). Register before the auth plugin.
 */
export const rateLimitPlugin = fp(async function rateLimitPlugin(app: FastifyInstance, options: RateLimitPluginOptions) {
  const limiter =
    options.rateLimiter ??
    (await createRateLimiter({
      redisUrl: options.config.REDIS_URL,
      keyPrefix: options.config.REDIS_KEY_PREFIX,
      onRedisState: (state, err) =>
        state === 'down'
          ? app.log.warn({ err }, 'Redis does not answer: rate limits and quotas are counted in this process until it does')
          : app.log.info('Redis answers again: rate limits are shared again'),
    }));
  const meter = new RequestMeter(limiter, options.config);
  app.decorate('rateLimiter', limiter);
  app.decorate('meter', meter);

  app.addHook('onRequest', (request, reply, done) => {
    // A route with a scope charges its token after authentication; a URL too long to be served (414, before
    // authentication) is charged to the client's address like an anonymous request.
    if (request.routeOptions.config?.scope && request.url.length <= maxUrlLength) return done();
    meter.chargeIp(request, reply).then((refused) => done(refused), done);
  });

  app.addHook('onClose', async () => {
    if (!options.rateLimiter) await limiter.close();
  });
});
