import { mkdir, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { asDiskFull } from '../../infra/storage.ts';
import type { ExportAllowance, ExportPermit } from '../auth/quotas.service.ts';
import { monthOf } from '../auth/quotas.service.ts';
import { queueDelivery } from '../webhooks/webhooks.service.ts';
import type { DownloadLinks } from './download-links.ts';
import * as repo from './export-jobs.repository.ts';
import { jobView } from './export-jobs.service.ts';
import { type StartedExport, startExport } from './exports.service.ts';
import { type ExportFormatName, exportFormats } from './formats/index.ts';
import { leasedJobQueries } from './leased-jobs.repository.ts';
import { LeasedJobRunner, removeJobFiles, syncDir } from './leased-jobs.ts';

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
  private readonly queue: LeasedJobRunner<repo.ExportJobRow>;
  readonly id: string;

  constructor(private readonly o: JobRunnerOptions) {
    const { db } = o;
    this.queue = new LeasedJobRunner<repo.ExportJobRow>(
      {
        name: 'export job',
        queries: leasedJobQueries(db, 'export_jobs'),
        load: (jobId) => repo.findJobById(db, jobId),
        run: (job, { signal }) => this.run(job, signal),
      },
      { log: o.log, perServer: o.perServer, leaseSeconds: o.leaseSeconds, pollMs: o.pollMs },
    );
    this.id = this.queue.id;
  }

  start(): void {
    this.queue.start();
  }

  /** Look at the queue now (a job was just queued here). */
  poke(): void {
    this.queue.poke();
  }

  /** Stops taking jobs and puts the running ones back in the queue, for the next process to run. */
  async close(): Promise<void> {
    await this.queue.close();
  }

  private async run(job: repo.ExportJobRow, stop: AbortSignal): Promise<'ended' | 'no_slot' | 'stopped'> {
    const { db, log } = this.o;
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
          this.allowance(job, stop),
        );
      } catch (error) {
        if (
          error instanceof AppError &&
          error.code === 'quota_exceeded' &&
          (error.extras['violated-policies'] as string[] | undefined)?.includes('concurrent-exports')
        ) {
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
          if (stop.aborted) throw new Error(String(stop.reason));
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
      if (!complete || stop.aborted) throw new Error(String(stop.reason ?? 'the export did not complete'));
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
      if (stop.aborted) return 'stopped';
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
