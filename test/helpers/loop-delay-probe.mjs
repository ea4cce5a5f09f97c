// Loaded into `leadatlas serve` with NODE_OPTIONS=--import (by test/helpers/soak.ts): measures the event-loop
// delay of the main thread with a timer every 10 ms (how late each tick ran) and appends one JSON line a second
// to LOOP_DELAY_PROBE_FILE: the ticks counted and every delay of 5 ms or more. A reader then computes exact
// percentiles over any window (a minute, the whole run) by merging lines, which per-second percentiles cannot give.
import { appendFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const file = process.env.LOOP_DELAY_PROBE_FILE;
if (file && isMainThread) {
  const resolutionMs = 10;
  let count = 0;
  let slow = [];
  let expected = performance.now() + resolutionMs;
  const tick = () => {
    const now = performance.now();
    count++;
    const delay = now - expected;
    if (delay >= 5) slow.push(Math.round(delay * 10) / 10);
    expected = now + resolutionMs;
    setTimeout(tick, resolutionMs).unref();
  };
  setTimeout(tick, resolutionMs).unref();
  setInterval(() => {
    appendFileSync(file, `${JSON.stringify({ at: Date.now(), count, slow })}\n`);
    count = 0;
    slow = [];
  }, 1000).unref();
}
