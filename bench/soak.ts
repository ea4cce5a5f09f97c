/**
 * The soak of issue 37 (test/helpers/soak.ts): `leadatlas serve` (compiled when dist/ is current) on Munich's
 * extract under the realistic mix at a paced rate with Poisson arrivals, reporting every `--sample-seconds`
 * resident memory, open file descriptors, WAL size, event-loop delay (p99 of the main thread), requests,
 * 5xx and failures, then the slope of each per minute:
 *
 *   npm run bench:soak -- [--minutes 60] [--rate 5] [--sample-seconds 60] [--cpu-prof DIR]
 *
 * `--cpu-prof DIR` writes a CPU profile of the server's main thread into DIR when it stops: what held the event
 * loop under the mix.
 *
 * Targets (issue 37): RSS and file descriptors flat (slope within noise), event-loop delay p99 < 50 ms, 0 × 5xx.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { soak } from '../test/helpers/soak.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '60' },
    rate: { type: 'string', default: '5' },
    'sample-seconds': { type: 'string', default: '60' },
    'cpu-prof': { type: 'string' },
  },
});
const dir = mkdtempSync(join(tmpdir(), 'leadatlas-soak-'));
try {
  const report = await soak({
    dir,
    seconds: Number(values.minutes) * 60,
    rate: Number(values.rate),
    sampleSeconds: Number(values['sample-seconds']),
    log: (line) => console.log(line),
    ...(values['cpu-prof'] ? { cpuProfileDir: values['cpu-prof'] } : {}),
  });
  const s = report.slopes;
  console.log(
    `${values.minutes} min at ${values.rate} req/s (load ${loadavg()[0]!.toFixed(1)}): ${report.requests} requests, ${report.status5xx} × 5xx (${report.status503} of them 503 shedding load), ${report.failed} failed; event-loop delay p99 ${report.loopP99Ms.toFixed(1)} ms; slopes per minute: RSS ${s.rssMbPerMin.toFixed(2)} MB, fds ${s.fdsPerMin.toFixed(2)}, WAL ${s.walMbPerMin.toFixed(3)} MB, loop p99 ${s.loopP99MsPerMin.toFixed(2)} ms`,
  );
  process.exitCode = report.status5xx + report.failed > 0 ? 1 : 0;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
