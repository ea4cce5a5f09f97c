import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { soak } from '../helpers/soak.ts';

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
