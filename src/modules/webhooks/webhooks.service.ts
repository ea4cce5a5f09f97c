import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../infra/db/database.ts';
import { OutboundRefused } from '../../infra/http/outbound-guard.ts';
import { PollLoop } from '../../infra/poll-loop.ts';
import { type OutboundOptions, postJson } from './outbound.ts';
import { newWebhookSecret, signatureHeader, signPayload } from './signature.ts';
import * as repo from './webhooks.repository.ts';

/**
 * The kinds of job whose end is told by webhook. A delivery's `job_id` is an id in its kind's table (no foreign
 * key: one column cannot reference several tables), and its event is `<kind>.succeeded` or `<kind>.failed`.
 * A new kind of job adds its name here and passes it to `queueDelivery` and `deliveriesOfJobs`. A monitor is not a
 * job that ends: its deliveries are `monitor.events`, one for each evaluation that found events.
 */
export const webhookJobKinds = ['export_job', 'enrichment_job', 'monitor', 'match_job'] as const;
export type WebhookJobKind = (typeof webhookJobKinds)[number];

/** A webhook delivery of a job with every attempt so far, as the account's pages show it. */
export interface DeliveryView {
  jobId: number;
  event: string;
  url: string;
  status: repo.DeliveryRow['status'];
  nextAttemptAt: string | null;
  attempts: Array<{ at: string; responseStatus: number | null; outcome: string; error: string | null; durationMs: number }>;
}

/** The deliveries of these jobs of one kind (internal ids), oldest first, each with its attempts in order. */
export async function deliveriesOfJobs(db: Db, kind: WebhookJobKind, jobIds: readonly number[]): Promise<DeliveryView[]> {
  const deliveries = await repo.deliveriesOfJobs(db, kind, jobIds);
  const attempts = await repo.attemptsOfDeliveries(
    db,
    deliveries.map((d) => d.id),
  );
  return deliveries.map((d) => ({
    jobId: d.job_id,
    event: d.event,
    url: d.url,
    status: d.status,
    nextAttemptAt: d.next_attempt_at,
    attempts: attempts
      .filter((a) => a.delivery_id === d.id)
      .map((a) => ({ at: a.at, responseStatus: a.response_status, outcome: a.outcome, error: a.error, durationMs: a.duration_ms })),
  }));
}

/** The account's signing secret, made on first use. */
export async function accountWebhookSecret(db: Db, accountId: number): Promise<string> {
  return (
    (await repo.findAccountSecret(db, accountId)) ?? repo.ensureAccountSecret(db, accountId, newWebhookSecret(), new Date().toISOString())
  );
}

/** A new secret for the account; deliveries from now on (retries too) are signed with it. */
export async function rotateWebhookSecret(db: Db, accountId: number): Promise<string> {
  const secret = newWebhookSecret();
  await repo.replaceAccountSecret(db, accountId, secret, new Date().toISOString());
  return secret;
}

/**
 * Queues the event of a job's end (`<kind>.<outcome>`) for `url`, inside the caller's transaction (the job's end
 * and its event commit together).
 */
export async function queueDelivery(
  trx: Db['kysely'],
  event: {
    accountId: number;
    jobKind: WebhookJobKind;
    jobId: number;
    url: string;
    outcome: 'succeeded' | 'failed' | 'events';
    data: unknown;
    at: Date;
  },
): Promise<string> {
  const publicId = `whd_${randomBytes(10).toString('base64url')}`;
  const type = `${event.jobKind}.${event.outcome}`;
  const body = JSON.stringify({ id: publicId, type, created: Math.floor(event.at.getTime() / 1000), data: event.data });
  await repo.insertDelivery(trx, {
    public_id: publicId,
    account_id: event.accountId,
    job_kind: event.jobKind,
    job_id: event.jobId,
    url: event.url,
    event: type,
    body,
    created_at: event.at.toISOString(),
  });
  return publicId;
}

export interface DispatcherOptions {
  db: Db;
  log: FastifyBaseLogger;
  maxAttempts: number;
  retryBaseMs: number;
  outbound: OutboundOptions;
  /** Deliveries attempted at once by this process. */
  parallel?: number;
  pollMs?: number;
}

/** The wait after failed attempt `n` (1-based): base × 2^(n−1), at most a day, with ±20 % jitter. */
export function retryDelayMs(baseMs: number, attempt: number, random = Math.random()): number {
  const plain = Math.min(86_400_000, baseMs * 2 ** (attempt - 1));
  return Math.round(plain * (0.8 + 0.4 * random));
}

/**
 * Sends queued webhook deliveries from the database: due deliveries are claimed with a short lease
 * (several processes share the queue, each delivery is attempted by one), signed with the account's
 * secret at the moment of sending, and every attempt is stored with its outcome. A non-2xx answer or a
 * network error is tried again with exponential backoff up to `maxAttempts`; a destination the
 * outbound guard refuses is recorded `refused` at once and never tried again. Pending deliveries live
 * in the database, so a restarted process goes on where the last one stopped.
 */
export class WebhookDispatcher {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly parallel: number;
  private readonly loop: PollLoop;

  constructor(private readonly options: DispatcherOptions) {
    this.parallel = options.parallel ?? 4;
    this.loop = new PollLoop(
      () => this.tick(),
      options.pollMs ?? 1000,
      (err: unknown) => options.log.error({ err }, 'webhook queue: a round failed'),
    );
  }

  start(): void {
    this.loop.schedule(0);
  }

  /** Look at the queue now (a job has just ended here). */
  poke(): void {
    this.loop.schedule(0);
  }

  async close(): Promise<void> {
    await this.loop.close();
    await Promise.allSettled([...this.inFlight]);
  }

  private async tick(): Promise<void> {
    const free = this.parallel - this.inFlight.size;
    if (free <= 0 || this.loop.closed) return;
    const now = new Date();
    const due = await repo.dueDeliveries(this.options.db, now.toISOString(), free);
    for (const delivery of due) {
      if (this.loop.closed) return;
      const leaseUntil = new Date(now.getTime() + this.options.outbound.timeoutMs + 30_000).toISOString();
      if (!(await repo.claimDelivery(this.options.db, delivery.id, now.toISOString(), leaseUntil))) continue;
      const run = this.attempt(delivery)
        .catch((err: unknown) =>
          this.options.log.error({ err, delivery: delivery.public_id }, 'webhook delivery: recording the attempt failed'),
        )
        .finally(() => {
          this.inFlight.delete(run);
          this.poke();
        });
      this.inFlight.add(run);
    }
  }

  private async attempt(delivery: repo.DeliveryRow): Promise<void> {
    const { db, log, maxAttempts, retryBaseMs, outbound } = this.options;
    const secret = await accountWebhookSecret(db, delivery.account_id);
    const started = Date.now();
    const timestamp = Math.floor(started / 1000);
    const attemptNo = delivery.attempts + 1;
    let responseStatus: number | null = null;
    let outcome: 'succeeded' | 'http_error' | 'network_error' | 'refused';
    let error: string | null = null;
    try {
      responseStatus = await postJson(
        delivery.url,
        delivery.body,
        {
          [signatureHeader]: signPayload(secret, delivery.body, timestamp),
          'user-agent': 'LeadAtlas-Webhooks/1',
          'leadatlas-event': delivery.event,
          'leadatlas-delivery': delivery.public_id,
        },
        outbound,
      );
      outcome = responseStatus >= 200 && responseStatus < 300 ? 'succeeded' : 'http_error';
    } catch (err) {
      outcome = err instanceof OutboundRefused ? 'refused' : 'network_error';
      error = (err as Error).message.slice(0, 500);
    }
    const at = new Date();
    const finalState =
      outcome === 'succeeded' ? 'succeeded' : outcome === 'refused' ? 'refused' : attemptNo >= maxAttempts ? 'failed' : null;
    await repo.recordAttempt(
      db,
      delivery,
      { at: at.toISOString(), response_status: responseStatus, outcome, error, duration_ms: Date.now() - started },
      finalState
        ? { status: finalState, next_attempt_at: null, finished_at: at.toISOString() }
        : {
            status: 'pending',
            next_attempt_at: new Date(at.getTime() + retryDelayMs(retryBaseMs, attemptNo)).toISOString(),
            finished_at: null,
          },
    );
    log.info({ delivery: delivery.public_id, attempt: attemptNo, outcome, responseStatus, error }, 'webhook delivery attempted');
  }
}
