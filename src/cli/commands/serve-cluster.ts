import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import pino from 'pino';
import type { Config } from '../../config.ts';
import { loggerOptions } from '../../infra/logger.ts';

/** The environment variable that tells a server process its rank in the cluster (0 runs the background work). */
export const WORKER_RANK_VARIABLE = 'LEADATLAS_WORKER_RANK';

/** The rank of this server process: its place in the cluster, 0 outside one. */
export function workerRank(): number {
  return cluster.isWorker ? Number(process.env[WORKER_RANK_VARIABLE] ?? 0) : 0;
}

/** A process that died this soon after it was started is restarted after a growing pause (1 s, doubled, up to 30 s). */
const QUICK_DEATH_MS = 10_000;
const MAX_PAUSE_MS = 30_000;

/**
 * `serve` with `WEB_CONCURRENCY` > 1: this process (the primary) serves nothing itself. It starts the server
 * processes, each running the same command with its rank, and puts back any that dies, with the same rank.
 * Rank 0 starts first and alone: it builds the search index from the database when the snapshot cannot serve
 * and writes it, so the others start from the snapshot. It is also the one that runs the background work
 * (app.ts's `background`). The port is shared through node:cluster (its primary accepts the connections and
 * hands them to the processes in turn), not SO_REUSEPORT: Node 20 has no `reusePort` (22.12 has), and the
 * primary is needed anyway to restart a process that died; a process takes connections only once it
 * listens, which is after its index is ready.
 *
 * On SIGTERM or SIGINT each process is told SIGTERM and stops as a single server does (its requests in flight
 * first, up to SHUTDOWN_TIMEOUT); what is left after that, and a few seconds, is killed.
 */
export async function serveCluster(config: Config, prepare: () => Promise<void>): Promise<void> {
  const log = pino(loggerOptions(config.LOG_LEVEL, config.LOG_FORMAT));
  await prepare();
  if (!config.REDIS_URL)
    log.warn(
      { processes: config.WEB_CONCURRENCY },
      'no REDIS_URL: each server process counts the rate limits on its own, so a client may get up to that many times its limit',
    );
  const workers = new Map<number, Worker>();
  const pauses = new Map<number, number>();
  let stopping = false;

  const start = (rank: number): Worker => {
    const startedAt = Date.now();
    const worker = cluster.fork({ [WORKER_RANK_VARIABLE]: String(rank) });
    workers.set(rank, worker);
    worker.once('exit', (code, signal) => {
      if (workers.get(rank) === worker) workers.delete(rank);
      if (stopping) return;
      const quick = Date.now() - startedAt < QUICK_DEATH_MS;
      const pause = quick ? Math.min(MAX_PAUSE_MS, Math.max(1000, 2 * (pauses.get(rank) ?? 0))) : 0;
      pauses.set(rank, pause);
      log.warn({ rank, worker: worker.process.pid, code, signal, restartInMs: pause }, 'server process died: starting it again');
      setTimeout(() => {
        if (!stopping) start(rank);
      }, pause);
    });
    return worker;
  };

  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal, processes: workers.size }, 'stopping the server processes');
    const left = [...workers.values()];
    const kill = setTimeout(
      () => {
        for (const w of left) if (!w.isDead()) w.process.kill('SIGKILL');
      },
      (config.SHUTDOWN_TIMEOUT + 5) * 1000,
    );
    kill.unref();
    await Promise.all(
      left.map((w) => {
        if (w.isDead()) return undefined;
        const exited = once(w, 'exit');
        w.process.kill('SIGTERM');
        return exited;
      }),
    );
    clearTimeout(kill);
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));

  const first = start(0);
  await Promise.race([once(first, 'listening'), once(first, 'exit')]);
  for (let rank = 1; rank < config.WEB_CONCURRENCY && !stopping; rank++) start(rank);
  log.info({ processes: config.WEB_CONCURRENCY, port: config.PORT }, 'serving from several processes');
}
