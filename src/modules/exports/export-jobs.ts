import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { WebhookDispatcher } from '../webhooks/webhooks.service.ts';
import { DownloadLinks } from './download-links.ts';
import { ExportJobRunner, type JobRunnerOptions } from './export-jobs.runner.ts';

/** The export jobs of one process: download links, the job runner and the webhook queue. */
export interface ExportJobs {
  links: DownloadLinks;
  runner: ExportJobRunner;
  webhooks: WebhookDispatcher;
  start(): void;
  close(): Promise<void>;
}

export function createExportJobs(o: {
  db: Db;
  config: Config;
  log: FastifyBaseLogger;
  quotas: JobRunnerOptions['quotas'];
  pollMs?: number;
}): ExportJobs {
  const { db, config, log } = o;
  const links = new DownloadLinks(db, config);
  const webhooks = new WebhookDispatcher({
    db,
    log,
    maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
    retryBaseMs: config.WEBHOOK_RETRY_BASE_MS,
    outbound: { allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS, timeoutMs: config.WEBHOOK_TIMEOUT_MS },
    pollMs: o.pollMs,
  });
  const runner = new ExportJobRunner({
    db,
    log,
    quotas: o.quotas,
    links,
    onEvent: () => webhooks.poke(),
    dataDir: config.EXPORT_DATA_DIR,
    minFreeBytes: config.DISK_MIN_FREE_MB * 1048576,
    perServer: config.EXPORT_JOBS_PER_SERVER,
    leaseSeconds: config.EXPORT_JOB_LEASE,
    rowsPerSecond: config.EXPORT_JOB_ROWS_PER_SECOND,
    baseUrl: config.PUBLIC_URL?.replace(/\/$/, '') ?? '',
    pollMs: o.pollMs,
  });
  return {
    links,
    runner,
    webhooks,
    start() {
      runner.start();
      webhooks.start();
    },
    async close() {
      await runner.close();
      await webhooks.close();
    },
  };
}
