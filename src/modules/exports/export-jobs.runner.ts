import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { PollLoop } from '../../infra/poll-loop.ts';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { asDiskFull } from '../../infra/storage.ts';
import { monthOf } from '../auth/quotas.service.ts';
import { queueDelivery } from '../webhooks/webhooks.service.ts';
import type { DownloadLinks } from './download-links.ts';
import * as repo from './export-jobs.repository.ts';
import { jobView } from './export-jobs.service.ts';
import { startExport, type StartedExport } from './exports.service.ts';
import type { ExportAllowance, ExportPermit } from '../auth/quotas.service.ts';
import { exportFormats, type ExportFormatName } from './formats/index.ts';

export interface JobRunnerOptions {
  db: Db;
  log: FastifyBaseLogger;
  /** The account's export quotas (QuotaService): the same allowance as a synchronous export's. */
  quotas: ExportAllowance & { returnRows(accountId: number, month: string, rows: number): Promise<void> };
  links: DownloadLinks;
  /** Told when a job ended with an event queued. */
  onEvent: () => void;
  dataDir: string;
  /** Bytes a job whose disk filled up asks to be freed (DISK_MIN_FREE_MB). */
  minFreeBytes: number;
  /** Jobs this process runs at once. */
  perServer: number;
  leaseSeconds: number;
  /** Pace of each job in rows a second; 0: none. */
  rowsPerSecond: number;
  /** Base of the download URLs in webhook events (PUBLIC_URL), empty for paths. */
  baseUrl: string;
  pollMs?: number;
}

type Stop = 'closing' | 'lease_lost';

/**
 * Runs export jobs from the database. A job is claimed with a lease this process renews; a process that
 * dies (`kill -9`) stops renewing, and once the lease lapses any process takes the job again and runs it
 * from scratch: the previous attempt's partial file is deleted, the rows it took from the month's quota
 * are given back, its export is logged `aborted`, and its leads, recorded as the synchronous export
 * records them, are recorded again idempotently (one row per account and place).
 *
 * A job writes `<job>.<attempt>.tmp` in the data directory through `startExport` (the synchronous
 * export's writer, ledger and quotas): each chunk counts as delivered once the file has taken it. The
 * file is synced, its leads recorded, and it is renamed to `<job>.<ext>`; only then is the job
 * `succeeded`, together with its webhook event in one transaction.
 *
 * Bounded concurrency: at most `perServer` jobs in this process, and per account the account's
 * concurrent-exports quota (the lease `startExport` takes, shared with synchronous exports): a job
 * whose account has no slot free goes back to the queue and waits.
 */
export class ExportJobRunner {
  readonly id = `run_${randomBytes(8).toString('hex')}`;
  private readonly running = new Map<number, { stop: AbortController; done: Promise<void> }>();
  private readonly loop: PollLoop;

  constructor(private readonly o: JobRunnerOptions) {
    this.loop = new PollLoop(
      () => this.tick(),
      o.pollMs ?? 1000,
      (err: unknown) => o.log.error({ err }, 'export jobs: a round of the queue failed'),
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
    for (const { stop } of this.running.values()) stop.abort('closing' satisfies Stop);
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }

  private async tick(): Promise<void> {
    if (this.running.size >= this.o.perServer) return;
    const now = new Date();
    const candidates = await repo.runnableJobs(this.o.db, now.toISOString(), 50);
    const busy = new Set<number>();
    for (const job of candidates) {
      if (this.loop.closed || this.running.size >= this.o.perServer) return;
      if (busy.has(job.account_id)) continue;
      const claimedAt = new Date();
      if (!(await repo.claimJob(this.o.db, job, this.id, claimedAt.toISOString(), this.leaseFrom(claimedAt)))) continue;
      const stop = new AbortController();
      const done = this.run(job, stop.signal)
        .then((outcome) => {
          if (outcome === 'no_slot') busy.add(job.account_id);
        })
        .catch((err: unknown) => this.o.log.error({ err, job: job.public_id }, 'export job: ending it failed'))
        .finally(() => {
          this.running.delete(job.id);
          this.loop.schedule(100);
        });
      this.running.set(job.id, { stop, done });
      // Wait for the job to have its export slot (or not) before looking at the next one of the account.
      await Promise.race([done, sleep(200, undefined, { ref: false })]);
    }
  }

  private leaseFrom(at: Date): string {
    return new Date(at.getTime() + this.o.leaseSeconds * 1000).toISOString();
  }

  private async run(job: repo.ExportJobRow, signal: AbortSignal): Promise<'ended' | 'no_slot' | 'stopped'> {
    const { db, log } = this.o;
    const stop = new AbortController();
    signal.addEventListener('abort', () => stop.abort(signal.reason), { once: true });
    const renew = setInterval(
      () => {
        void repo.renewLease(db, job.id, this.id, this.leaseFrom(new Date())).then(
          (held) => {
            if (!held) stop.abort('lease_lost' satisfies Stop);
          },
          (err: unknown) => log.warn({ err, job: job.public_id }, 'export job: renewing the lease failed'),
        );
      },
      (this.o.leaseSeconds * 1000) / 3,
    );
    renew.unref();
    let tmp: string | undefined;
    let started: StartedExport | undefined;
    let finished = false;
    try {
      await this.abandonPrevious(job);
      await mkdir(this.o.dataDir, { recursive: true });
      const format = exportFormats[job.format as ExportFormatName];
      try {
        started = await startExport(
          db,
          { accountId: job.account_id, searchId: job.search_id, format: job.format as ExportFormatName, fields: job.fields ?? undefined },
          this.allowance(job, stop.signal),
        );
      } catch (error) {
        if (
          error instanceof AppError &&
          error.code === 'quota_exceeded' &&
          (error.extras['violated-policies'] as string[] | undefined)?.includes('concurrent-exports')
        ) {
          await repo.requeueJob(db, job.id, this.id, true);
          return 'no_slot';
        }
        if (error instanceof AppError) {
          await this.end(job, { status: 'failed', failure: `${error.code}: ${error.message}` });
          return 'ended';
        }
        throw error;
      }
      const exp = await repo.exportRowById(db, started.exportId);
      await repo.updateRunningJob(db, job.id, this.id, { export_id: exp?.id ?? null });
      log.info({ job: job.public_id, exportId: started.exportId, attempt: job.attempts + 1 }, 'export job started');
      tmp = join(this.o.dataDir, `${job.public_id}.${job.attempts + 1}.tmp`);
      let complete = false;
      let bytes = 0;
      const file = await open(tmp, 'w');
      try {
        // Leaving the loop early must not destroy the body with an error (that would log the export
        // `failed`): a stopped job's export is cut short, and the body is closed below without one.
        for await (const chunk of started.body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer | string>) {
          if (stop.signal.aborted) throw new Error(String(stop.signal.reason));
          const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
          await file.write(buf);
          bytes += buf.length;
          // The file has taken these bytes (the operating system holds them): they count as delivered.
          started.delivery.bodyFlushed(buf.length);
        }
        await file.sync();
        complete = true;
      } finally {
        if (!complete) started.body.destroy();
        await file.close();
        finished = true;
        await started.finish(complete).catch((err: unknown) => {
          complete = false;
          log.error({ err, job: job.public_id }, 'export job: recording its leads failed');
        });
      }
      if (!complete || stop.signal.aborted) throw new Error(String(stop.signal.reason ?? 'the export did not complete'));
      const fileName = `${job.public_id}.${format.extension}`;
      await rename(tmp, join(this.o.dataDir, fileName));
      tmp = undefined;
      await syncDir(this.o.dataDir);
      const final = await repo.exportRowById(db, started.exportId);
      await this.end(job, {
        status: 'succeeded',
        row_count: final?.row_count ?? 0,
        limited: final?.status === 'limited' ? 1 : 0,
        file_name: fileName,
        file_bytes: bytes,
        download_name: started.contentDisposition,
      });
      return 'ended';
    } catch (error) {
      // Whatever failed before the file was closed: the export ends, its slot and unused rows go back.
      if (started && !finished) started.body.destroy();
      if (started && !finished)
        await started.finish(false).catch((err: unknown) => log.error({ err, job: job.public_id }, 'export job: ending its export failed'));
      if (tmp) await rm(tmp, { force: true });
      const reason = stop.signal.reason as Stop | undefined;
      if (reason === 'closing') {
        await repo.requeueJob(db, job.id, this.id, false);
        return 'stopped';
      }
      if (reason === 'lease_lost') return 'stopped';
      log.error({ err: error, job: job.public_id }, 'export job failed');
      const diskFull = asDiskFull(error, this.o.dataDir, this.o.minFreeBytes, `export job ${job.public_id}`);
      await this.end(job, {
        status: 'failed',
        failure:
          diskFull instanceof AppError
            ? `${diskFull.code}: ${diskFull.message}`
            : 'internal: the file could not be written; see the server log',
      });
      return 'ended';
    } finally {
      clearInterval(renew);
    }
  }

  /**
   * A job taken again after its process died, or put back in the queue: undoes what the last attempt
   * left. Its leads stay (the new attempt records the same places again, which changes nothing).
   */
  private async abandonPrevious(job: repo.ExportJobRow): Promise<void> {
    const { db, quotas } = this.o;
    if (job.charged_rows > 0 && job.charged_month) await quotas.returnRows(job.account_id, job.charged_month, job.charged_rows);
    if (job.export_id !== null) await repo.abortExportAttempt(db, job.export_id, new Date().toISOString());
    if (job.charged_rows > 0 || job.export_id !== null)
      await repo.updateRunningJob(db, job.id, this.id, { charged_rows: 0, charged_month: null, export_id: null });
    await removeJobFiles(this.o.dataDir, job.public_id);
  }

  /**
   * The account's allowance as a job sees it: what the attempt takes from the month's quota is also
   * written on the job (so a successor can give back what a dead process took), and the pace is kept.
   */
  private allowance(job: repo.ExportJobRow, signal: AbortSignal): ExportAllowance {
    const { db, quotas, rowsPerSecond } = this.o;
    return {
      open: async (accountId): Promise<ExportPermit> => {
        const permit = await quotas.open(accountId);
        let reserved = 0;
        let delivered = 0;
        let month = monthOf(new Date());
        const began = Date.now();
        return {
          reserve: async (wanted) => {
            if (rowsPerSecond > 0) {
              const wait = began + (reserved / rowsPerSecond) * 1000 - Date.now();
              // Cut short when the job is stopped, without an error: the writing loop sees the stop and
              // ends the export as cut short (`aborted`), not as a failure.
              if (wait > 0) await sleep(wait, undefined, { signal }).catch(() => {});
            }
            month = monthOf(new Date());
            const granted = await permit.reserve(wanted);
            reserved += granted;
            await repo.updateRunningJob(db, job.id, this.id, { charged_rows: reserved, charged_month: month });
            return granted;
          },
          delivered: (rows) => {
            delivered += rows;
            permit.delivered(rows);
          },
          close: async () => {
            await permit.close();
            // The permit gave back what was reserved and not delivered.
            await repo.updateRunningJob(db, job.id, this.id, { charged_rows: delivered, charged_month: month });
          },
        };
      },
    };
  }

  /** Ends the job and queues its webhook event, in one transaction. */
  private async end(
    job: repo.ExportJobRow,
    values: {
      status: 'succeeded' | 'failed';
      failure?: string;
      row_count?: number;
      limited?: number;
      file_name?: string;
      file_bytes?: number;
      download_name?: string;
    },
  ): Promise<void> {
    const { db } = this.o;
    const at = new Date();
    const ended = {
      status: values.status,
      failure: values.failure ?? null,
      row_count: values.row_count ?? 0,
      limited: values.limited ?? 0,
      file_name: values.file_name ?? null,
      file_bytes: values.file_bytes ?? null,
      download_name: values.download_name ?? null,
      finished_at: at.toISOString(),
    };
    let queued = false;
    // Before the transaction: the link's key may need a query of its own (SQLite has one connection).
    const view = job.webhook_url
      ? await jobView({ ...job, ...ended, attempts: job.attempts + 1, rows_done: ended.row_count }, this.o.links, this.o.baseUrl)
      : null;
    await db.kysely.transaction().execute(async (trx) => {
      if (!(await repo.endJob(trx, job.id, this.id, ended))) return;
      if (job.webhook_url) {
        await queueDelivery(trx, {
          accountId: job.account_id,
          jobKind: 'export_job',
          jobId: job.id,
          url: job.webhook_url,
          outcome: values.status,
          data: { job: view },
          at,
        });
        queued = true;
      }
    });
    this.o.log.info({ job: job.public_id, status: values.status, rows: ended.row_count, failure: ended.failure }, 'export job ended');
    if (queued) this.o.onEvent();
  }
}

/** Deletes every file of a job in the data directory (a partial file of a dead attempt, an old result). */
async function removeJobFiles(dir: string, jobId: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  await Promise.all(names.filter((n) => n.startsWith(`${jobId}.`)).map((n) => rm(join(dir, n), { force: true })));
}

/** Makes a rename in `dir` durable. */
async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
