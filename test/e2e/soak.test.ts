import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loopDelayPercentile, soak } from '../helpers/soak.ts';

/**
 * The soak of issue 37 in 45 seconds (the issue asks for 5 minutes in the tests; the suite's 15-minute limit
 * wins, and the hour runs as bench/soak.ts): the realistic mix at 6 requests a second, sampled every 5 s.
 * Bounds catch a leak of a descriptor or of memory per request, not a drift that only an hour shows.
 */
const dir = mkdtempSync(join(tmpdir(), 'leadatlas-soak-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('45 s of the realistic mix: no 5xx but load shedding, no failed connection, file descriptors and memory do not climb', {
  timeout: 240_000,
}, async () => {
  const report = await soak({ dir, seconds: 45, sampleSeconds: 5, rate: 6 });
  const why = JSON.stringify({ slopes: report.slopes, samples: report.samples.map((s) => [s.rssMb, s.fds, s.walMb, s.loopP99Ms]) });
  assert.ok(report.requests > 150, `requests: ${report.requests}`);
  // A 503 with Retry-After is a search shed past its time budget on a starved machine (counted, and 0 on a quiet one); any other 5xx fails.
  assert.equal(report.status5xx - report.status503, 0, why);
  assert.equal(report.failed, 0, why);
  assert.ok(report.slopes.fdsPerMin < 30, `file descriptors: ${why}`);
  assert.ok(report.slopes.rssMbPerMin < 150, `resident memory: ${why}`);
  assert.ok(report.slopes.walMbPerMin < 20, `write-ahead log: ${why}`);
});

test('the event-loop delay percentile is taken over every tick of the window, not per second', () => {
  // 2,000 ticks in two seconds: 25 of them late (one second holds 20 of them). The p99 is the 20th slowest of
  // 2,000, whatever second it fell in; a mean of per-second p99s would say otherwise.
  const lines = [
    { at: 1, count: 1000, slow: [400, ...Array.from({ length: 19 }, (_, k) => 20 + k)] },
    { at: 2, count: 1000, slow: [6, 7, 8, 9, 10] },
  ];
  assert.equal(loopDelayPercentile(lines, 99), 10);
  assert.equal(loopDelayPercentile(lines, 99.9), 37);
  assert.equal(loopDelayPercentile([{ at: 1, count: 1000, slow: [] }], 99), 5);
  assert.equal(loopDelayPercentile([], 99), 0);
});
