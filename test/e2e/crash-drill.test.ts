import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { crashRepetition, type DrillInstallation, prepareInstallation, type RunningServer, startServer } from '../helpers/crash-drill.ts';

/**
 * `kill -9` of `serve` while it writes (issue 37): twice in a row on one installation, each time a new
 * server on the same database finds every acknowledged write, ends every export job and delivers its
 * webhook with one delivery id. bench/crash-drill.ts runs the same drill twenty times.
 */
const dir = mkdtempSync(join(tmpdir(), 'leadatlas-crash-drill-'));
let installation: DrillInstallation | undefined;
let server: RunningServer | undefined;
after(async () => {
  server?.child.kill('SIGKILL');
  await installation?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('after kill -9 under a writing load, every write answered with a 2xx is there, every job ends and every webhook arrives with one delivery id', {
  timeout: 420_000,
}, async () => {
  // One read thread: reads still leave the event loop as in production; a second thread adds start-up work to
  // every server the drill starts, not a case.
  installation = await prepareInstallation(dir, { DB_READ_WORKERS: '1' });
  server = await startServer(installation.env);
  let seed = 37;
  const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
  for (const rep of [1, 2]) {
    const { server: next, outcome } = await crashRepetition(installation, server, `r${rep}`, random);
    server = next;
    const a = outcome.acknowledged;
    assert.ok(
      a.searches > 0 && a.suppressions > 0 && a.exportJobs > 0 && a.monitors > 0,
      `every kind of write was acknowledged: ${JSON.stringify(a)}`,
    );
    assert.deepEqual(outcome.lost, [], `repetition ${rep}: acknowledged writes lost`);
    assert.deepEqual(outcome.problems, [], `repetition ${rep}`);
  }
  const stopped = new Promise((r) => server!.child.once('exit', r));
  server.child.kill('SIGTERM');
  await stopped;
  assert.equal(server.child.exitCode, 0);
});
