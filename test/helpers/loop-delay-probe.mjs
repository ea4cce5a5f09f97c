// Loaded into `leadatlas serve` with NODE_OPTIONS=--import (by test/helpers/soak.ts): appends the event-loop
// delay of the main thread, one JSON line a second (p99 and max in ms), to LOOP_DELAY_PROBE_FILE.
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

const file = process.env.LOOP_DELAY_PROBE_FILE;
if (file && isMainThread) {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  setInterval(() => {
    appendFileSync(file, `${JSON.stringify({ at: Date.now(), p99: h.percentile(99) / 1e6, max: h.max / 1e6 })}\n`);
    h.reset();
  }, 1000).unref();
}
