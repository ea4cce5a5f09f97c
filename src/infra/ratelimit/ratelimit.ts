import { Redis } from 'ioredis';

/** The outcome of counting one hit against a limit. */
export interface RateLimitResult {
  allowed: boolean;
  /** Hits left in the current window (0 when refused). */
  remaining: number;
  /** Seconds until the window resets; what a 429 sends as Retry-After. */
  retryAfterSeconds: number;
}

/**
 * Fixed-window counters keyed by any string (`login:ip:203.0.113.9`). Chosen once at start-up:
 * in memory for a single process, Redis when several processes share the limits.
 */
export interface RateLimiter {
  /** Counts one hit for `key` and says whether it was within `limit` hits per `windowSeconds`. */
  hit(key: string, limit: number, windowSeconds: number): Promise<RateLimitResult>;
  /** Forgets the hits of `key` (e.g. after a successful sign-in). */
  reset(key: string): Promise<void>;
  close(): Promise<void>;
}

export function createRateLimiter(redisUrl: string | undefined): RateLimiter {
  return redisUrl ? new RedisRateLimiter(new Redis(redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 })) : new MemoryRateLimiter();
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  private lastSweep = 0;

  constructor(private readonly now: () => number = Date.now) {}

  async hit(key: string, limit: number, windowSeconds: number): Promise<RateLimitResult> {
    const now = this.now();
    this.sweep(now);
    let window = this.windows.get(key);
    if (!window || window.resetAt <= now) {
      window = { count: 0, resetAt: now + windowSeconds * 1000 };
      this.windows.set(key, window);
    }
    window.count += 1;
    return result(window.count, limit, window.resetAt - now);
  }

  async reset(key: string): Promise<void> {
    this.windows.delete(key);
  }

  async close(): Promise<void> {
    this.windows.clear();
  }

  /** Drops finished windows now and then, so keys from one-off IPs do not accumulate. */
  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [key, w] of this.windows) if (w.resetAt <= now) this.windows.delete(key);
  }
}

export class RedisRateLimiter implements RateLimiter {
  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix = 'leadatlas:rl:',
  ) {}

  async hit(key: string, limit: number, windowSeconds: number): Promise<RateLimitResult> {
    const k = this.keyPrefix + key;
    // INCR and set the expiry only when the key is new (NX), in one round trip.
    const replies = await this.redis.multi().incr(k).pexpire(k, windowSeconds * 1000, 'NX').pttl(k).exec();
    if (!replies) throw new Error('rate limiter: Redis transaction was aborted');
    const [incr, , ttl] = replies;
    if (incr?.[0]) throw incr[0];
    const count = Number(incr?.[1]);
    const ttlMs = Number(ttl?.[1]);
    return result(count, limit, ttlMs > 0 ? ttlMs : windowSeconds * 1000);
  }

  async reset(key: string): Promise<void> {
    await this.redis.del(this.keyPrefix + key);
  }

  async close(): Promise<void> {
    await this.redis.quit();
  }
}

function result(count: number, limit: number, msLeft: number): RateLimitResult {
  return { allowed: count <= limit, remaining: Math.max(0, limit - count), retryAfterSeconds: Math.max(1, Math.ceil(msLeft / 1000)) };
}
