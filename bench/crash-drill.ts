/**
 * The crash drill of issue 37, repeated: `leadatlas serve` (compiled when dist/ is current, as the tests run
 * it) under a writing load (saved searches, suppressions, export jobs with webhooks to a receiver on
 * loopback, monitors), killed with SIGKILL at a random moment once every kind of write has been
 * acknowledged, started again on the same database, and checked (test/helpers/crash-drill.ts):
 *
 *   npm run bench:crash-drill -- [--repetitions 20] [--seed 37]
 *
 * Prints one line per repetition and a summary; exits 1 if an acknowledged write was lost or a promise of
 * the drill did not hold. Target (issue 37): 0 acknowledged writes lost in 20 repetitions.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { crashRepetition, prepareInstallation, startServer } from '../test/helpers/crash-drill.ts';

const { values } = parseArgs({ options: { repetitions: { type: 'string', default: '20' }, seed: { type: 'string', default: '37' } } });
const repetitions = Number(values.repetitions);
let seed = Number(values.seed);
const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;

const dir = mkdtempSync(join(tmpdir(), 'leadatlas-crash-bench-'));
const installation = await prepareInstallation(dir);
let server = await startServer(installation.env);
const totals = { searches: 0, suppressions: 0, exportJobs: 0, monitors: 0, lost: 0, problems: 0, failedJobs: 0 };
const started = Date.now();
try {
  for (let rep = 1; rep <= repetitions; rep++) {
    const { server: next, outcome } = await crashRepetition(installation, server, `r${rep}`, random);
    server = next;
    const a = outcome.acknowledged;
    for (const k of ['searches', 'suppressions', 'exportJobs', 'monitors'] as const) totals[k] += a[k];
    totals.lost += outcome.lost.length;
    totals.problems += outcome.problems.length;
    totals.failedJobs += outcome.failedJobs.length;
    console.log(
      `#${rep} killed ${outcome.killedAfterMs} ms after the first of each write; acknowledged: ${a.searches} searches, ${a.suppressions} suppressions, ${a.exportJobs} export jobs, ${a.monitors} monitors; lost ${outcome.lost.length}; problems ${outcome.problems.length}; jobs failed ${outcome.failedJobs.length}`,
    );
    for (const line of [...outcome.lost, ...outcome.problems, ...outcome.failedJobs]) console.log(`   ${line}`);
  }
} finally {
  server.child.kill('SIGKILL');
  await installation.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log(
  `${repetitions} repetitions in ${((Date.now() - started) / 1000).toFixed(0)} s (load ${loadavg()[0]!.toFixed(1)}): acknowledged ${totals.searches} searches, ${totals.suppressions} suppressions, ${totals.exportJobs} export jobs, ${totals.monitors} monitors; lost ${totals.lost}; other problems ${totals.problems}; export jobs failed with a reason ${totals.failedJobs}`,
);
process.exitCode = totals.lost + totals.problems > 0 ? 1 : 0;
