import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/** The outcome of counting a request against a limit. */
export interface RateLimitResult {
  allowed: boolean;
  /** Units left after this request (0 when refused): the RateLimit field's `r`. */
  remaining: number;
  /** Seconds until the whole limit is available again: the RateLimit field's `t`. */
  resetSeconds: number;
  /** Seconds until the refused request would be allowed: what a 429 sends as Retry-After (0 when allowed). */
  retryAfterSeconds: number;
}

/** A slot of a concurrency limit, held until released (or until its lease lapses, should the process die). */
export interface Lease {
  release(): Promise<void>;
}

/**
 * Counters keyed by any string (`login:ip:203.0.113.9`, `token:42`). Chosen once at start-up: in
 * memory for a single process, Redis when several processes share the limits.
 *
 * - `take`: a rate (GCRA, the generic cell rate algorithm): up to `limit` units at once, refilling
 *   smoothly at `limit` per `windowSeconds`; a request costs `cost` units (0 reads the state) and a
 *   refused one costs nothing. No window edge lets a client spend twice its limit in a moment.
 * - `hit`: a fixed window that starts with the key's first hit (sign-in attempts; calendar quotas put
 *   the period in the key); refused hits count too.
 * - `acquire`: at most `limit` concurrent holders of a key.
 */
export interface RateLimiter {
  take(key: string, limit: number, windowSeconds: number, cost?: number): Promise<RateLimitResult>;
  hit(key: string, limit: number, windowSeconds: number, cost?: number): Promise<RateLimitResult>;
  /** A lease on one of `limit` slots, or null when all are held; a lease lapses `leaseSeconds` after its last renewal. */
  acquire(key: string, limit: number, leaseSeconds: number): Promise<Lease | null>;
  /** How many leases of `key` are held now. */
  held(key: string): Promise<number>;
  /** Forgets `key` (e.g. the failed sign-ins of an account after a successful one). */
  reset(key: string): Promise<void>;
  /** Where the counts live, and whether that store answers now (for readiness checks). */
  health(): Promise<{ store: 'memory' | 'redis'; ok: boolean }>;
  close(): Promise<void>;
}

export interface RateLimiterOptions {
  redisUrl?: string;
  /** Prefix of every Redis key, so that deployments (and test runs) can share one Redis. */
  keyPrefix?: string;
  /** Told when Redis stops or starts answering again. */
  onRedisState?: (state: 'down' | 'up', error?: unknown) => void;
}

/**
 * Memory without REDIS_URL; otherwise Redis, falling back to memory while Redis does not answer.
 * Resolves once Redis has answered or refused its first connection.
 */
export async function createRateLimiter(options: RateLimiterOptions = {}): Promise<RateLimiter> {
  if (!options.redisUrl) return new MemoryRateLimiter();
  const redis = new Redis(options.redisUrl, {
    lazyConnect: true,
    // A command fails at once while disconnected instead of queueing behind the reconnection: the
    // request goes on with the local fallback, and ioredis keeps reconnecting in the background.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
    connectTimeout: 1000,
  });
  // Connection errors surface through the commands (and the fallback's warning), not as unhandled events.
  redis.on('error', () => {});
  const limiter = new FallbackRateLimiter(
    new RedisRateLimiter(redis, options.keyPrefix ?? 'leadatlas:rl:'),
    new MemoryRateLimiter(),
    options.onRedisState,
  );
  await limiter.connect();
  return limiter;
}

function gcraOutcome(
  now: number,
  storedTat: number | undefined,
  limit: number,
  windowMs: number,
  cost: number,
): { result: RateLimitResult; tat: number | null } {
  const interval = windowMs / limit;
  const tat = Math.max(storedTat ?? now, now);
  const newTat = tat + cost * interval;
  const allowAt = newTat - windowMs;
  if (allowAt > now || cost > limit) {
    const wait = cost > limit ? windowMs : allowAt - now;
    return {
      result: {
        allowed: false,
        remaining: Math.max(0, Math.floor((now + windowMs - tat) / interval)),
        resetSeconds: Math.ceil((tat - now) / 1000),
        retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000)),
      },
      tat: null,
    };
  }
  return {
    result: {
      allowed: true,
      remaining: Math.max(0, Math.floor((now + windowMs - newTat) / interval)),
      resetSeconds: Math.ceil((newTat - now) / 1000),
      retryAfterSeconds: 0,
    },
    tat: cost > 0 ? newTat : null,
  };
}

function windowOutcome(count: number, limit: number, msLeft: number): RateLimitResult {
  const allowed = count <= limit;
  const resetSeconds = Math.max(1, Math.ceil(msLeft / 1000));
  return { allowed, remaining: Math.max(0, limit - count), resetSeconds, retryAfterSeconds: allowed ? 0 : resetSeconds };
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  /** Theoretical arrival time of each GCRA key, and when the key may be forgotten. */
  private readonly rates = new Map<string, { tat: number; forgetAt: number }>();
  private readonly slots = new Map<string, Map<string, number>>();
  private lastSweep = 0;

  constructor(private readonly now: () => number = Date.now) {}

  async take(key: string, limit: number, windowSeconds: number, cost = 1): Promise<RateLimitResult> {
    const now = this.now();
    this.sweep(now);
    const { result, tat } = gcraOutcome(now, this.rates.get(key)?.tat, limit, windowSeconds * 1000, cost);
    if (tat !== null) this.rates.set(key, { tat, forgetAt: tat });
    return result;
  }

  async hit(key: string, limit: number, windowSeconds: number, cost = 1): Promise<RateLimitResult> {
    const now = this.now();
    this.sweep(now);
    let window = this.windows.get(key);
    if (!window || window.resetAt <= now) {
      window = { count: 0, resetAt: now + windowSeconds * 1000 };
      this.windows.set(key, window);
    }
    window.count += cost;
    return windowOutcome(window.count, limit, window.resetAt - now);
  }

  async acquire(key: string, limit: number, leaseSeconds: number): Promise<Lease | null> {
    const now = this.now();
    const held = this.slots.get(key) ?? new Map<string, number>();
    for (const [id, expiresAt] of held) if (expiresAt <= now) held.delete(id);
    if (held.size >= limit) return null;
    const id = randomBytes(8).toString('hex');
    held.set(id, now + leaseSeconds * 1000);
    this.slots.set(key, held);
    return new RenewedLease(
      leaseSeconds,
      async () => void held.set(id, this.now() + leaseSeconds * 1000),
      async () => {
        held.delete(id);
        if (held.size === 0 && this.slots.get(key) === held) this.slots.delete(key);
      },
    );
  }

  async held(key: string): Promise<number> {
    const now = this.now();
    return [...(this.slots.get(key)?.values() ?? [])].filter((expiresAt) => expiresAt > now).length;
  }

  async reset(key: string): Promise<void> {
    this.windows.delete(key);
    this.rates.delete(key);
  }

  async health(): Promise<{ store: 'memory'; ok: boolean }> {
    return { store: 'memory', ok: true };
  }

  async close(): Promise<void> {
    this.windows.clear();
    this.rates.clear();
    this.slots.clear();
  }

  /** Drops finished windows and refilled rates now and then, so keys from one-off IPs do not accumulate. */
  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [key, w] of this.windows) if (w.resetAt <= now) this.windows.delete(key);
    for (const [key, r] of this.rates) if (r.forgetAt <= now) this.rates.delete(key);
  }
}

/** Renews its lease every third of its lifetime until released. */
class RenewedLease implements Lease {
  private readonly timer: NodeJS.Timeout;
  private released = false;

  constructor(
    leaseSeconds: number,
    renew: () => Promise<void>,
    private readonly drop: () => Promise<void>,
  ) {
    this.timer = setInterval(() => void renew().catch(() => {}), (leaseSeconds * 1000) / 3);
    this.timer.unref();
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearInterval(this.timer);
    await this.drop();
  }
}

// The scripts read Redis's clock (TIME), so that servers whose clocks disagree still share one budget.
const gcraScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local interval = window / limit
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local newTat = tat + cost * interval
if newTat - window > now or cost > limit then
  return {0, math.floor((now + window - tat) / interval), math.ceil(tat - now), math.ceil(newTat - window - now)}
end
if cost > 0 then redis.call('SET', KEYS[1], tostring(newTat), 'PX', math.ceil(newTat - now) + 1) end
return {1, math.floor((now + window - newTat) / interval), math.ceil(newTat - now), 0}`;

const acquireScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1`;

const renewScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[2]) == 1 then redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1])) end
return 1`;

const heldScript = `
local t = redis.call('TIME')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
return redis.call('ZCARD', KEYS[1])`;

type ScriptedRedis = Redis & {
  heldSlots(key: string): Promise<number>;
  gcra(key: string, limit: number, windowMs: number, cost: number): Promise<[number, number, number, number]>;
  acquireSlot(key: string, limit: number, leaseMs: number, id: string): Promise<number>;
  renewSlot(key: string, leaseMs: number, id: string): Promise<number>;
};

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: ScriptedRedis;

  constructor(
    redis: Redis,
    private readonly keyPrefix = 'leadatlas:rl:',
  ) {
    redis.defineCommand('gcra', { numberOfKeys: 1, lua: gcraScript });
    redis.defineCommand('acquireSlot', { numberOfKeys: 1, lua: acquireScript });
    redis.defineCommand('renewSlot', { numberOfKeys: 1, lua: renewScript });
    redis.defineCommand('heldSlots', { numberOfKeys: 1, lua: heldScript });
    this.redis = redis as ScriptedRedis;
  }

  private closed = false;

  /** Connects now (commands fail fast while disconnected); resolves either way. */
  async connect(): Promise<boolean> {
    if (this.redis.status === 'ready') return true;
    // A health check still in flight when the limiter closes must not open the connection again: ioredis
    // would then reconnect forever and keep the process alive.
    if (this.closed) return false;
    // While ioredis is (re)connecting on its own, a second connect() would open a parallel connection and
    // leave ioredis's pending reconnection timer behind.
    if (this.redis.status !== 'wait' && this.redis.status !== 'end') return false;
    try {
      await this.redis.connect();
      return true;
    } catch {
      return false;
    }
  }

  async take(key: string, limit: number, windowSeconds: number, cost = 1): Promise<RateLimitResult> {
    const [allowed, remaining, resetMs, retryMs] = await this.redis.gcra(this.keyPrefix + key, limit, windowSeconds * 1000, cost);
    return {
      allowed: allowed === 1,
      remaining: Math.max(0, remaining),
      resetSeconds: Math.max(0, Math.ceil(resetMs / 1000)),
      retryAfterSeconds: allowed === 1 ? 0 : Math.max(1, Math.ceil((cost > limit ? windowSeconds * 1000 : retryMs) / 1000)),
    };
  }

  async hit(key: string, limit: number, windowSeconds: number, cost = 1): Promise<RateLimitResult> {
    const k = this.keyPrefix + key;
    // INCRBY and set the expiry only when the key is new (NX), in one round trip.
    const replies = await this.redis
      .multi()
      .incrby(k, cost)
      .pexpire(k, windowSeconds * 1000, 'NX')
      .pttl(k)
      .exec();
    if (!replies) throw new Error('rate limiter: Redis transaction was aborted');
    const [incr, , ttl] = replies;
    if (incr?.[0]) throw incr[0];
    const ttlMs = Number(ttl?.[1]);
    return windowOutcome(Number(incr?.[1]), limit, ttlMs > 0 ? ttlMs : windowSeconds * 1000);
  }

  async acquire(key: string, limit: number, leaseSeconds: number): Promise<Lease | null> {
    const k = this.keyPrefix + key;
    const id = randomBytes(8).toString('hex');
    const leaseMs = leaseSeconds * 1000;
    if ((await this.redis.acquireSlot(k, limit, leaseMs, id)) !== 1) return null;
    return new RenewedLease(
      leaseSeconds,
      async () => void (await this.redis.renewSlot(k, leaseMs, id)),
      async () => void (await this.redis.zrem(k, id)),
    );
  }

  held(key: string): Promise<number> {
    return this.redis.heldSlots(this.keyPrefix + key);
  }

  async reset(key: string): Promise<void> {
    await this.redis.del(this.keyPrefix + key);
  }

  async health(): Promise<{ store: 'redis'; ok: boolean }> {
    try {
      return { store: 'redis', ok: (await this.redis.ping()) === 'PONG' };
    } catch {
      // Not connected: try to, so that a Redis that came back is seen by the next check.
      return { store: 'redis', ok: await this.connect() };
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => {});
    // Also clears a reconnection ioredis may still have scheduled.
    this.redis.disconnect();
  }
}

/**
 * Redis while it answers, this process's memory while it does not: the API keeps serving with limits
 * per process (fail open, with a warning) rather than answering 503 because the counters are away.
 * After a failure Redis is left alone for `retryMs`, so a hung Redis costs one timeout, not one per request.
 */
export class FallbackRateLimiter implements RateLimiter {
  private downSince: number | null = null;

  constructor(
    private readonly primary: RedisRateLimiter,
    private readonly fallback: MemoryRateLimiter,
    private readonly onState: (state: 'down' | 'up', error?: unknown) => void = () => {},
    private readonly retryMs = 5_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Connects to Redis; while it cannot, the fallback serves (and the state callback says so). */
  async connect(): Promise<void> {
    if (!(await this.primary.connect())) this.markDown(new Error('Redis is not reachable'));
  }

  get usingFallback(): boolean {
    return this.downSince !== null;
  }

  take(key: string, limit: number, windowSeconds: number, cost?: number): Promise<RateLimitResult> {
    return this.run((l) => l.take(key, limit, windowSeconds, cost));
  }

  hit(key: string, limit: number, windowSeconds: number, cost?: number): Promise<RateLimitResult> {
    return this.run((l) => l.hit(key, limit, windowSeconds, cost));
  }

  acquire(key: string, limit: number, leaseSeconds: number): Promise<Lease | null> {
    return this.run((l) => l.acquire(key, limit, leaseSeconds));
  }

  held(key: string): Promise<number> {
    return this.run((l) => l.held(key));
  }

  async reset(key: string): Promise<void> {
    await this.fallback.reset(key);
    await this.run((l) => l.reset(key));
  }

  /** Whether Redis answers, whatever the fallback does meanwhile. */
  health(): Promise<{ store: 'redis'; ok: boolean }> {
    return this.primary.health();
  }

  async close(): Promise<void> {
    await Promise.all([this.primary.close(), this.fallback.close()]);
  }

  private async run<T>(op: (limiter: RateLimiter) => Promise<T>): Promise<T> {
    if (this.downSince !== null && this.now() - this.downSince < this.retryMs) return op(this.fallback);
    try {
      const result = await op(this.primary);
      if (this.downSince !== null) {
        this.downSince = null;
        this.onState('up');
      }
      return result;
    } catch (error) {
      this.markDown(error);
      return op(this.fallback);
    }
  }

  private markDown(error: unknown): void {
    const first = this.downSince === null;
    this.downSince = this.now();
    if (first) this.onState('down', error);
  }
}
