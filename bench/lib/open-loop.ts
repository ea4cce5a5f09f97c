/**
 * An open-loop load generator: requests are sent at Poisson arrivals (exponential inter-arrival times at a
 * given rate), whatever the answers' pace, and each latency is counted from the request's **scheduled** time,
 * so that a server falling behind shows in the latencies instead of slowing the load (no coordinated omission).
 */
export interface OpenLoopResult {
  /** Latencies in milliseconds, from each request's scheduled time to its answer, sorted. */
  latenciesMs: number[];
  errors: number;
  sent: number;
  seconds: number;
}

/** A seeded uniform random number in (0, 1) (mulberry32): the same arrivals each run. */
function uniform(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 1) / 4294967297;
  };
}

export async function openLoop(
  ratePerSecond: number,
  seconds: number,
  send: (i: number) => Promise<boolean>,
  seed = 1,
): Promise<OpenLoopResult> {
  const random = uniform(seed);
  const start = performance.now();
  const end = start + seconds * 1000;
  const pending: Array<Promise<void>> = [];
  const latencies: number[] = [];
  let errors = 0;
  let scheduled = start;
  let i = 0;
  while (true) {
    scheduled += (-Math.log(random()) / ratePerSecond) * 1000;
    if (scheduled >= end) break;
    const at = scheduled;
    const wait = at - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const n = i++;
    pending.push(
      send(n).then(
        (ok) => {
          latencies.push(performance.now() - at);
          if (!ok) errors++;
        },
        () => {
          latencies.push(performance.now() - at);
          errors++;
        },
      ),
    );
  }
  await Promise.all(pending);
  return { latenciesMs: latencies.sort((a, b) => a - b), errors, sent: i, seconds: (performance.now() - start) / 1000 };
}

export const percentile = (sorted: readonly number[], p: number): number =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
