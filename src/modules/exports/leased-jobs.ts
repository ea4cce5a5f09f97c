import { randomBytes } from 'node:crypto';
import { open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { PollLoop } from '../../infra/poll-loop.ts';
import type { LeasedJobQueries, LeasedJobRow } from './leased-jobs.repository.ts';

/** Why a running job was stopped: its process is closing (the job goes back to the queue), or another took it. */
export type JobStop = 'closing' | 'lease_lost';

/** What a kind of background job tells the runner (export jobs, match jobs). */
export interface LeasedJobKind<Job extends LeasedJobRow> {
  /** In log lines: `export job`, `match job`. */
  name: string;
  queries: LeasedJobQueries;
  /** The job's row as it is before it is claimed. */
  load(jobId: number): Promise<Job | undefined>;
  /**
   * Runs a job this process has claimed. `signal` aborts with a `JobStop`: the kind cleans up what the
   * attempt left and returns `stopped`. `no_slot`: the account cannot run it now; the runner puts it back in
   * the queue (its attempt undone) and passes over the account's other jobs this round.
   */
  run(job: Job, ctx: { runner: string; signal: AbortSignal }): Promise<'ended' | 'no_slot' | 'stopped'>;
}

export interface LeasedJobRunnerOptions {
  log: FastifyBaseLogger;
  /** Jobs this process runs at once (0: none). */
  perServer: number;
  leaseSeconds: number;
  pollMs?: number;
}

/**
 * Runs the jobs of one kind from their table. A job is claimed with a lease this process renews; a
 * process that dies (`kill -9`) stops renewing, and once the lease lapses any process takes the job again
 * and runs it from scratch (the kind undoes what the dead attempt left). A process that closes stops its
 * jobs and puts them back in the queue at once. At most `perServer` jobs run in this process, and one job
 * of an account is started at a time, so a job that finds its account's slots taken does not let the
 * account's next job overtake it.
 */
export class LeasedJobRunner<Job extends LeasedJobRow> {
  readonly id = `run_${randomBytes(8).toString('hex')}`;
  private readonly running = new Map<number, { stop: AbortController; done: Promise<void> }>();
  private readonly loop: PollLoop;

  constructor(
    private readonly kind: LeasedJobKind<Job>,
    private readonly o: LeasedJobRunnerOptions,
  ) {
    this.loop = new PollLoop(
      () => this.tick(),
      o.pollMs ?? 1000,
      (err: unknown) => o.log.error({ err }, `${kind.name}s: a round of the queue failed`),
    );
  }

  start(): void {
    if (this.o.perServer > 0) this.loop.schedule(0);
  }

  /** Look at the queue now (a job was just queued here). */
  poke(): void {
    if (this.o.perServer > 0) this.loop.schedule(0);
  }

  /** Stops taking jobs and puts the running ones back in the queue, for the next process to run. */
  async close(): Promise<void> {
    await this.loop.close();
    for (const { stop } of this.running.values()) stop.abort('closing' satisfies JobStop);
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }

  private async tick(): Promise<void> {
    if (this.running.size >= this.o.perServer) return;
    const ids = await this.kind.queries.runnableIds(new Date().toISOString(), 50);
    const busy = new Set<number>();
    for (const id of ids) {
      if (this.loop.closed || this.running.size >= this.o.perServer) return;
      if (this.running.has(id)) continue;
      const job = await this.kind.load(id);
      if (!job || busy.has(job.account_id)) continue;
      const claimedAt = new Date();
      if (!(await this.kind.queries.claim(job.id, this.id, claimedAt.toISOString(), this.leaseFrom(claimedAt)))) continue;
      const stop = new AbortController();
      const done = this.run(job, stop.signal)
        .then((outcome) => {
          if (outcome === 'no_slot') busy.add(job.account_id);
        })
        .catch((err: unknown) => this.o.log.error({ err, job: job.public_id }, `${this.kind.name}: ending it failed`))
        .finally(() => {
          this.running.delete(job.id);
          this.loop.schedule(100);
        });
      this.running.set(job.id, { stop, done });
      // Wait for the job to have its slot (or not) before looking at the next one of the account.
      await Promise.race([done, sleep(200, undefined, { ref: false })]);
    }
  }

  private leaseFrom(at: Date): string {
    return new Date(at.getTime() + this.o.leaseSeconds * 1000).toISOString();
  }

  private async run(job: Job, signal: AbortSignal): Promise<'ended' | 'no_slot' | 'stopped'> {
    const { log } = this.o;
    const { queries } = this.kind;
    const stop = new AbortController();
    signal.addEventListener('abort', () => stop.abort(signal.reason), { once: true });
    const renew = setInterval(
      () => {
        void queries.renew(job.id, this.id, this.leaseFrom(new Date())).then(
          (held) => {
            if (!held) stop.abort('lease_lost' satisfies JobStop);
          },
          (err: unknown) => log.warn({ err, job: job.public_id }, `${this.kind.name}: renewing the lease failed`),
        );
      },
      (this.o.leaseSeconds * 1000) / 3,
    );
    renew.unref();
    try {
      const outcome = await this.kind.run(job, { runner: this.id, signal: stop.signal });
      if (outcome === 'no_slot') await queries.requeue(job.id, this.id, true);
      else if (outcome === 'stopped' && stop.signal.reason === ('closing' satisfies JobStop)) await queries.requeue(job.id, this.id, false);
      return outcome;
    } finally {
      clearInterval(renew);
    }
  }
}

/** Deletes every file of a job in the data directory (a partial file of a dead attempt, an old result). */
export async function removeJobFiles(dir: string, jobId: string, keep: readonly string[] = []): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  await Promise.all(names.filter((n) => n.startsWith(`${jobId}.`) && !keep.includes(n)).map((n) => rm(join(dir, n), { force: true })));
}

/** Makes a rename in `dir` durable. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
