import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HostGate, Semaphore } from './politeness.ts';
import { parseRobots, RobotsCache, type RobotsRules, robotsAgentOf } from './robots.ts';

describe('Semaphore', () => {
  test('lets at most its limit in, serves waiters in order, and drops a waiter whose signal aborts', async () => {
    const semaphore = new Semaphore(2);
    const never = new AbortController().signal;
    const first = await semaphore.acquire(never);
    const second = await semaphore.acquire(never);
    const order: string[] = [];
    const aborting = new AbortController();
    const third = semaphore.acquire(never).then((release) => (order.push('third'), release));
    const dropped = semaphore.acquire(aborting.signal).then(() => order.push('dropped'));
    const fourth = semaphore.acquire(never).then((release) => (order.push('fourth'), release));
    aborting.abort(new Error('gave up'));
    await assert.rejects(dropped, /gave up/);
    first();
    first();
    (await third)();
    second();
    (await fourth)();
    assert.deepEqual(order, ['third', 'fourth']);
  });
});

describe('HostGate', () => {
  test('runs one request at a time per host, in order, and forgets a host once it is idle', async () => {
    const gate = new HostGate();
    const signal = new AbortController().signal;
    let active = 0;
    let most = 0;
    const log: string[] = [];
    const request = (name: string) => async () => {
      active++;
      most = Math.max(most, active);
      await new Promise((r) => setImmediate(r));
      log.push(name);
      active--;
    };
    await Promise.all([
      gate.run('a.example', 0, signal, request('a1')),
      gate.run('a.example', 0, signal, request('a2')),
      gate.run('a.example', 0, signal, request('a3')),
    ]);
    assert.equal(most, 1);
    assert.deepEqual(log, ['a1', 'a2', 'a3']);
    assert.equal(gate.size, 0);
  });

  test('waits the delay after a request ends before the next one to the host starts; another host does not wait', async () => {
    const gate = new HostGate();
    const signal = new AbortController().signal;
    const log: string[] = [];
    await gate.run('b.example', 60, signal, async () => {});
    // A timer of 20 ms fires before the second request to b.example (60 ms later) and after the one to another host.
    setTimeout(() => log.push('20 ms timer'), 20);
    await Promise.all([
      gate.run('b.example', 60, signal, async () => log.push('b.example again')),
      gate.run('other.example', 60, signal, async () => log.push('other.example')),
    ]);
    assert.deepEqual(log, ['other.example', '20 ms timer', 'b.example again']);
  });

  test('a waiter whose signal aborts leaves at once without running, and the next waiter still waits for the request in progress', async () => {
    const gate = new HostGate();
    const controller = new AbortController();
    const log: string[] = [];
    let release!: () => void;
    const blocker = gate.run('c.example', 0, new AbortController().signal, () =>
      new Promise<void>((r) => (release = r)).then(() => log.push('blocker done')),
    );
    while (!release) await new Promise((r) => setImmediate(r));
    const waiting = gate.run('c.example', 0, controller.signal, async () => log.push('aborted waiter ran'));
    const next = gate.run('c.example', 0, new AbortController().signal, async () => log.push('next'));
    controller.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
    log.push('abort seen');
    release();
    await Promise.all([blocker, next]);
    assert.deepEqual(log, ['abort seen', 'blocker done', 'next']);
  });
});

describe('robotsAgentOf', () => {
  test("takes the crawler's product token, not the browser-compatibility one", () => {
    assert.equal(robotsAgentOf('Mozilla/5.0 (compatible; LeadAtlasBot/1.0; +https://leadatlas.example/bot)'), 'LeadAtlasBot');
    assert.equal(robotsAgentOf('LeadAtlas/0.1 (+https://leadatlas.example)'), 'LeadAtlas');
    assert.equal(robotsAgentOf('plainbot'), 'plainbot');
  });
});

describe('RobotsCache', () => {
  const big = (i: number) => `User-agent: *\n${Array.from({ length: 12_000 }, (_, n) => `Disallow: /s${i}/p${n}/*.html`).join('\n')}`;

  test('is bounded in bytes: hostile 300 KiB files push out the least recently used, whatever the entry bound', async () => {
    const cache = new RobotsCache<RobotsRules>({ entries: 1024, maxBytes: 2 * 1024 * 1024, weigh: (r) => r.bytes });
    const text = big(0);
    assert.ok(text.length > 250_000);
    for (let i = 0; i < 10; i++) {
      cache.set(`https://h${i}.example`, Promise.resolve(parseRobots(`https://h${i}.example/robots.txt`, big(i), 'LeadAtlasBot')));
      await Promise.resolve();
      await Promise.resolve();
    }
    assert.ok(cache.bytes <= 2 * 1024 * 1024, `${cache.bytes} bytes kept`);
    assert.equal(cache.size, 2, 'two of them fit');
    assert.ok(cache.get('https://h9.example'), 'the newest is kept');
    assert.equal(cache.get('https://h0.example'), undefined, 'the oldest went first');
  });

  test('keeps many small files up to its entry bound, and forgets what an entry weighed when it goes', async () => {
    const cache = new RobotsCache<RobotsRules>({ entries: 100, maxBytes: 16 * 1024 * 1024, weigh: (r) => r.bytes });
    for (let i = 0; i < 150; i++) {
      cache.set(
        `https://s${i}.example`,
        Promise.resolve(parseRobots(`https://s${i}.example/robots.txt`, 'User-agent: *\nDisallow: /x\n', 'a')),
      );
      await Promise.resolve();
      await Promise.resolve();
    }
    assert.equal(cache.size, 100);
    const each = parseRobots('https://s.example/robots.txt', 'User-agent: *\nDisallow: /x\n', 'a').bytes;
    assert.equal(cache.bytes, 100 * each);
    cache.delete('https://s149.example');
    assert.equal(cache.bytes, 99 * each);
  });
});
