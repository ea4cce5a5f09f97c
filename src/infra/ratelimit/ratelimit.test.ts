import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from '../../../test/helpers/cli.ts';
import { createRateLimiter, type FallbackRateLimiter, MemoryRateLimiter, type RateLimiter, RedisRateLimiter } from './ratelimit.ts';

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const testPrefix = () => `leadatlas-test:${randomBytes(4).toString('hex')}:`;

const implementations: Array<{ name: string; create: () => RateLimiter }> = [
  { name: 'memory', create: () => new MemoryRateLimiter() },
  { name: 'Redis', create: () => new RedisRateLimiter(new Redis(redisUrl), testPrefix()) },
];

for (const impl of implementations) {
  describe(`${impl.name} rate limiter`, () => {
    const limiter = impl.create();
    after(() => limiter.close());

    test('a fixed window allows the limit, refuses the next hit and says when to retry', async () => {
      const results = [];
      for (let i = 0; i < 4; i++) results.push(await limiter.hit('k1', 3, 60));
      assert.deepEqual(
        results.map((r) => [r.allowed, r.remaining]),
        [
          [true, 2],
          [true, 1],
          [true, 0],
          [false, 0],
        ],
      );
      const retry = results[3]?.retryAfterSeconds ?? 0;
      assert.ok(retry >= 1 && retry <= 60, String(retry));
    });

    test('a fixed window counts keys separately and forgets a key on reset', async () => {
      for (let i = 0; i < 2; i++) await limiter.hit('k2', 2, 60);
      assert.equal((await limiter.hit('k2', 2, 60)).allowed, false);
      assert.equal((await limiter.hit('k3', 2, 60)).allowed, true);
      await limiter.reset('k2');
      assert.equal((await limiter.hit('k2', 2, 60)).allowed, true);
    });

    test('a rate allows a burst of its limit in units of cost, then refuses without spending', async () => {
      const first = await limiter.take('r1', 100, 60, 30);
      assert.deepEqual([first.allowed, first.remaining], [true, 70]);
      assert.ok(first.resetSeconds >= 17 && first.resetSeconds <= 19, String(first.resetSeconds));
      assert.equal((await limiter.take('r1', 100, 60, 60)).remaining, 10);
      const refused = await limiter.take('r1', 100, 60, 30);
      assert.equal(refused.allowed, false);
      // 20 more units refill at 100 a minute: 12 seconds.
      assert.ok(refused.retryAfterSeconds >= 12 && refused.retryAfterSeconds <= 13, String(refused.retryAfterSeconds));
      // The refused request spent nothing: the last 10 units are still there.
      assert.deepEqual([(await limiter.take('r1', 100, 60, 10)).allowed, (await limiter.take('r1', 100, 60, 0)).remaining], [true, 0]);
    });

    test('a rate read with cost 0 changes nothing, and a cost above the limit is never allowed', async () => {
      assert.equal((await limiter.take('r2', 5, 60, 0)).remaining, 5);
      assert.equal((await limiter.take('r2', 5, 60, 0)).remaining, 5);
      const tooBig = await limiter.take('r2', 5, 60, 6);
      assert.equal(tooBig.allowed, false);
      assert.equal(tooBig.retryAfterSeconds, 60);
    });

    test('a concurrency limit hands out its slots once each and takes them back on release', async () => {
      const a = await limiter.acquire('c1', 2, 30);
      const b = await limiter.acquire('c1', 2, 30);
      assert.ok(a && b);
      assert.equal(await limiter.acquire('c1', 2, 30), null);
      assert.equal(await limiter.held('c1'), 2);
      await a.release();
      await a.release();
      const c = await limiter.acquire('c1', 2, 30);
      assert.ok(c);
      assert.equal(await limiter.acquire('c1', 2, 30), null);
      await Promise.all([b.release(), c.release()]);
    });
  });
}

test('the memory rate limiter starts a new window once the old one ends, and refills a rate over time', async () => {
  let now = 1_000_000;
  const limiter = new MemoryRateLimiter(() => now);
  assert.equal((await limiter.hit('k', 1, 60)).allowed, true);
  assert.equal((await limiter.hit('k', 1, 60)).allowed, false);
  assert.equal((await limiter.take('r', 6, 60, 6)).allowed, true);
  assert.equal((await limiter.take('r', 6, 60, 1)).allowed, false);
  now += 10_000;
  assert.deepEqual([(await limiter.take('r', 6, 60, 1)).allowed, (await limiter.take('r', 6, 60, 1)).allowed], [true, false]);
  now += 50_000;
  assert.equal((await limiter.hit('k', 1, 60)).allowed, true);
  assert.equal((await limiter.take('r', 6, 60, 0)).remaining, 5);
});

test('a Redis lease lapses when its holder stops renewing it (a process that died)', async () => {
  const prefix = testPrefix();
  const dying = new RedisRateLimiter(new Redis(redisUrl), prefix);
  const survivor = new RedisRateLimiter(new Redis(redisUrl), prefix);
  try {
    assert.ok(await dying.acquire('exports:1', 1, 1));
    assert.equal(await survivor.acquire('exports:1', 1, 1), null);
    await dying.close();
    await sleep(1_300);
    const lease = await survivor.acquire('exports:1', 1, 1);
    assert.ok(lease, "the dead holder's slot is free again");
    await lease.release();
  } finally {
    await survivor.close();
  }
});

/** A private redis-server on a free port, so the test can stop and start it. */
async function startRedis(port: number): Promise<ChildProcess> {
  const server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no', '--bind', '127.0.0.1'], {
    stdio: 'ignore',
  });
  for (let i = 0; i < 50; i++) {
    const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    const up = await probe.connect().then(
      () => true,
      () => false,
    );
    probe.disconnect();
    if (up) return server;
    await sleep(100);
  }
  server.kill('SIGKILL');
  throw new Error('redis-server did not start');
}

test('while Redis is unreachable the limiter counts in memory and says so once, then returns to Redis', async () => {
  const port = await freePort();
  const states: string[] = [];
  const limiter = (await createRateLimiter({
    redisUrl: `redis://127.0.0.1:${port}`,
    keyPrefix: testPrefix(),
    onRedisState: (s) => states.push(s),
  })) as FallbackRateLimiter;
  let server: ChildProcess | undefined;
  try {
    assert.deepEqual(states, ['down']);
    assert.equal(limiter.usingFallback, true);
    // Limits still hold, per process.
    assert.equal((await limiter.take('k', 2, 60, 2)).allowed, true);
    assert.equal((await limiter.take('k', 2, 60, 1)).allowed, false);
    assert.deepEqual(states, ['down']);
    server = await startRedis(port);
    // ioredis reconnects in the background; the limiter asks Redis again 5 s after the failure.
    let back = false;
    for (let i = 0; i < 80 && !back; i++) {
      await sleep(100);
      await limiter.take('probe', 10, 60, 0);
      back = !limiter.usingFallback;
    }
    assert.equal(back, true, 'Redis is used again');
    assert.deepEqual(states, ['down', 'up']);
    // Redis has its own (empty) count for the key.
    assert.equal((await limiter.take('k', 2, 60, 2)).allowed, true);
    server.kill('SIGKILL');
    await sleep(200);
    assert.equal((await limiter.take('other', 2, 60, 1)).allowed, true);
    assert.deepEqual(states, ['down', 'up', 'down']);
  } finally {
    server?.kill('SIGKILL');
    await limiter.close();
  }
});
