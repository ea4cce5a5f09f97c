// Loaded into `leadatlas serve` with NODE_OPTIONS=--import (by test/helpers/soak.ts): measures the event-loop
// delay of the main thread with a timer every 10 ms (how late each tick ran) and appends one JSON line a second
// to LOOP_DELAY_PROBE_FILE: the ticks counted and every delay of 5 ms or more. A reader then computes exact
// percentiles over any window (a minute, the whole run) by merging lines, which per-second percentiles cannot give.
// With LOOP_DELAY_PROBE_CPU_PROF=DIR it also profiles the main thread (`--cpu-prof` is refused in NODE_OPTIONS)
// and writes DIR/main-PID.cpuprofile when the process exits: what held the event loop.
import { appendFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
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

const profileDir = process.env.LOOP_DELAY_PROBE_CPU_PROF;
if (profileDir && isMainThread) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  // An in-thread session answers synchronously, so the profile is written before the process ends.
  process.on('exit', () =>
    session.post('Profiler.stop', (error, result) => {
      if (!error) writeFileSync(join(profileDir, `main-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    }),
  );
}
