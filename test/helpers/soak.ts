import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { prepareInstallation, startServer } from './crash-drill.ts';

/**
 * The soak of issue 37, shared by bench/soak.ts (an hour) and test/e2e/soak.test.ts (under a minute): `serve`
 * under the realistic mix (searches, facets, next pages, synchronous exports, export jobs with webhooks,
 * suppressions, monitors) arriving as a Poisson process at `rate` requests a second (open loop: an arrival
 * never waits for an earlier answer), sampled every `sampleSeconds`: resident memory, open file
 * descriptors, size of the write-ahead log, the main thread's event-loop delay (a probe loaded into the
 * server), requests, 5xx and failed connections; then the least-squares slope of each per minute.
 */
export interface SoakOptions {
  dir: string;
  seconds: number;
  sampleSeconds: number;
  rate: number;
  log?: (line: string) => void;
  /** A directory for a CPU profile of the server's main thread (written when it stops). */
  cpuProfileDir?: string;
}

export interface SoakSample {
  at: number;
  rssMb: number;
  fds: number;
  walMb: number;
  loopP99Ms: number;
  loopMaxMs: number;
  requests: number;
  status5xx: number;
  /** Of the 5xx, the 503 problems a server sends when it sheds load (a search past its time budget): with Retry-After, on purpose. */
  status503: number;
  failed: number;
  latencyP99Ms: number;
}

export interface SoakReport {
  samples: SoakSample[];
  /** Per minute, least squares over the samples after the first (start-up). */
  slopes: { rssMbPerMin: number; fdsPerMin: number; walMbPerMin: number; loopP99MsPerMin: number };
  requests: number;
  status5xx: number;
  status503: number;
  failed: number;
  loopP99Ms: number;
}

function slope(points: Array<[number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return sxx === 0 ? 0 : points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0) / sxx;
}

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

/** A line of test/helpers/loop-delay-probe.mjs: the probe's ticks in one second, and their delays of 5 ms or more. */
interface ProbeLine {
  at: number;
  count: number;
  slow: number[];
}

/** The p-th percentile of the event-loop delay over the ticks of `lines` (a delay under 5 ms counts as 5 ms, an upper bound). */
export function loopDelayPercentile(lines: readonly ProbeLine[], p: number): number {
  const count = lines.reduce((n, l) => n + l.count, 0);
  if (count === 0) return 0;
  const slow = lines.flatMap((l) => l.slow).sort((x, y) => y - x);
  const rank = Math.floor(((100 - p) / 100) * count + 1e-9); // ticks slower than the percentile
  return rank < slow.length ? slow[rank]! : 5;
}

export async function soak(o: SoakOptions): Promise<SoakReport> {
  const probeFile = join(o.dir, 'loop-delay.jsonl');
  const installation = await prepareInstallation(o.dir);
  const server = await startServer({
    ...installation.env,
    NODE_OPTIONS: `--import=${pathToFileURL(join(import.meta.dirname, 'loop-delay-probe.mjs')).href}`,
    LOOP_DELAY_PROBE_FILE: probeFile,
    ...(o.cpuProfileDir ? { LOOP_DELAY_PROBE_CPU_PROF: o.cpuProfileDir } : {}),
  });
  const pid = server.child.pid!;
  const dbFile = installation.env.DATABASE_URL!.replace(/^sqlite:/, '');
  const headers = { authorization: installation.authorization, 'content-type': 'application/json' };
  const searchIds: string[] = [];
  const nextPages: string[] = [];
  let interval = { requests: 0, status5xx: 0, status503: 0, failed: 0, latencies: [] as number[] };
  const all = { requests: 0, status5xx: 0, status503: 0, failed: 0 };
  const types = ['restaurant', 'cafe', 'bar', 'bakery', 'pharmacy', 'hotel', 'supermarket', 'hairdresser'];
  let n = 0;

  const request = async (path: string, body?: unknown) => {
    const started = performance.now();
    interval.requests++;
    all.requests++;
    try {
      const res = await fetch(
        `${server.base}${path}`,
        body === undefined ? { headers } : { method: 'POST', headers, body: JSON.stringify(body) },
      );
      const text = await res.text();
      interval.latencies.push(performance.now() - started);
      if (res.status >= 500) {
        interval.status5xx++;
        all.status5xx++;
        if (res.status === 503) {
          interval.status503++;
          all.status503++;
        }
        if (res.status !== 503) o.log?.(`5xx ${res.status} ${path}: ${text.slice(0, 200)}`);
      }
      return res.ok && res.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as Record<string, unknown>) : null;
    } catch (error) {
      interval.failed++;
      all.failed++;
      o.log?.(`failed ${path}: ${(error as Error).message}`);
      return null;
    }
  };

  /** One arrival of the mix: mostly reads, a few writes. */
  const arrive = async () => {
    const i = n++;
    const pick = i % 20;
    const saved = searchIds.length ? searchIds[i % searchIds.length] : undefined;
    if (pick < 8 || !saved) {
      const r = await request(`/api/v2/map/search?type=${types[i % types.length]}&city=M%C3%BCnchen&per_page=${1 + (i % 25)}`);
      if (r) {
        if (searchIds.length < 200) searchIds.push(String(r.search_id));
        const next = (r.links as { next?: string } | undefined)?.next;
        if (next && nextPages.length < 200) nextPages.push(next);
      }
    } else if (pick < 11) await request(`/api/v2/map/facets?type=${types[i % types.length]}&city=M%C3%BCnchen`);
    else if (pick < 14 && nextPages.length) {
      const next = new URL(nextPages[i % nextPages.length]!, 'http://x');
      await request(`${next.pathname}${next.search}`);
    } else if (pick < 15) await request(`/api/v2/map/export?search_id=${saved}&format=csv`);
    else if (pick < 16) await request('/api/v2/exports', { search_id: saved, format: 'ndjson', webhook_url: installation.receiver.url });
    else if (pick < 18) await request('/api/v1/user-api/suppressions', { entries: [`soak-${i}@example.com`] });
    else if (pick < 19) await request('/api/v2/monitors', { search_id: saved });
    else await request('/api/v2/exports?per_page=10');
  };

  const samples: SoakSample[] = [];
  const probeLines = () =>
    existsSync(probeFile)
      ? readFileSync(probeFile, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as ProbeLine)
      : [];
  let probeSeen = 0;
  const sample = () => {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const loop = probeLines().slice(probeSeen);
    probeSeen += loop.length;
    const s: SoakSample = {
      at: Date.now(),
      rssMb: Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0) / 1024,
      fds: readdirSync(`/proc/${pid}/fd`).length,
      walMb: existsSync(`${dbFile}-wal`) ? statSync(`${dbFile}-wal`).size / 1048576 : 0,
      loopP99Ms: loopDelayPercentile(loop, 99),
      loopMaxMs: Math.max(0, ...loop.flatMap((l) => l.slow)),
      requests: interval.requests,
      status5xx: interval.status5xx,
      status503: interval.status503,
      failed: interval.failed,
      latencyP99Ms: percentile(interval.latencies, 99),
    };
    interval = { requests: 0, status5xx: 0, status503: 0, failed: 0, latencies: [] };
    samples.push(s);
    o.log?.(
      `${new Date(s.at).toISOString()} rss ${s.rssMb.toFixed(1)} MB, fds ${s.fds}, wal ${s.walMb.toFixed(2)} MB, loop p99 ${s.loopP99Ms.toFixed(1)} ms (max ${s.loopMaxMs.toFixed(0)}), ${s.requests} requests, ${s.status5xx} 5xx (${s.status503} of them 503), ${s.failed} failed, latency p99 ${s.latencyP99Ms.toFixed(0)} ms`,
    );
  };

  const inFlight = new Set<Promise<void>>();
  const started = Date.now();
  const end = started + o.seconds * 1000;
  let nextSample = started + o.sampleSeconds * 1000;
  let nextArrival = started;
  try {
    while (Date.now() < end) {
      const now = Date.now();
      if (now >= nextSample) {
        sample();
        nextSample += o.sampleSeconds * 1000;
      }
      if (now >= nextArrival) {
        const p = arrive().finally(() => inFlight.delete(p));
        inFlight.add(p);
        nextArrival += (-Math.log(1 - Math.random()) / o.rate) * 1000;
      }
      await sleep(Math.max(1, Math.min(nextArrival, nextSample, end) - Date.now()));
    }
    await Promise.all(inFlight);
    sample();
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => server.child.once('exit', r));
    await installation.close();
  }
  const steady = samples.slice(1);
  const minutes = (s: SoakSample) => (s.at - started) / 60_000;
  return {
    samples,
    slopes: {
      rssMbPerMin: slope(steady.map((s) => [minutes(s), s.rssMb])),
      fdsPerMin: slope(steady.map((s) => [minutes(s), s.fds])),
      walMbPerMin: slope(steady.map((s) => [minutes(s), s.walMb])),
      loopP99MsPerMin: slope(steady.map((s) => [minutes(s), s.loopP99Ms])),
    },
    ...all,
    // After the first sample: the first interval holds the start-up (the search index built on the event loop).
    loopP99Ms: loopDelayPercentile(
      probeLines().filter((l) => l.at > (samples[0]?.at ?? 0)),
      99,
    ),
  };
}
