import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from './ratelimit.ts';

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const implementations: Array<{ name: string; create: () => RateLimiter }> = [
  { name: 'memory', create: () => new MemoryRateLimiter() },
  { name: 'Redis', create: () => new RedisRateLimiter(new Redis(redisUrl), `leadatlas-test:${randomBytes(4).toString('hex')}:`) },
];

for (const impl of implementations) {
  describe(`${impl.name} rate limiter`, () => {
    const limiter = impl.create();
    after(() => limiter.close());

    test('allows the limit, refuses the next hit and says when to retry', async () => {
      const results = [];
      for (let i = 0; i < 4; i++) results.push(await limiter.hit('k1', 3, 60));
      assert.deepEqual(results.map((r) => [r.allowed, r.remaining]), [[true, 2], [true, 1], [true, 0], [false, 0]]);
      const retry = results[3]?.retryAfterSeconds ?? 0;
      assert.ok(retry >= 1 && retry <= 60, String(retry));
    });

    test('counts keys separately and forgets a key on reset', async () => {
      for (let i = 0; i < 2; i++) await limiter.hit('k2', 2, 60);
      assert.equal((await limiter.hit('k2', 2, 60)).allowed, false);
      assert.equal((await limiter.hit('k3', 2, 60)).allowed, true);
      await limiter.reset('k2');
      assert.equal((await limiter.hit('k2', 2, 60)).allowed, true);
    });
  });
}

test('the memory rate limiter starts a new window once the old one ends', async () => {
  let now = 1_000_000;
  const limiter = new MemoryRateLimiter(() => now);
  assert.equal((await limiter.hit('k', 1, 60)).allowed, true);
  assert.equal((await limiter.hit('k', 1, 60)).allowed, false);
  now += 60_000;
  assert.equal((await limiter.hit('k', 1, 60)).allowed, true);
});
