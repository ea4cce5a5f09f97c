import { type Selectable, sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { WebhookAttemptsTable, WebhookDeliveriesTable } from '../../infra/db/schema.ts';

export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type AttemptRow = Selectable<WebhookAttemptsTable>;
type Kdb = Db['kysely'];

export async function insertDelivery(
  db: Kdb,
  row: Pick<DeliveryRow, 'public_id' | 'account_id' | 'job_kind' | 'job_id' | 'url' | 'event' | 'body' | 'created_at'>,
): Promise<void> {
  await db
    .insertInto('webhook_deliveries')
    .values({ ...row, status: 'pending', next_attempt_at: row.created_at })
    .execute();
}

/** Pending deliveries whose next attempt is due and that no process is attempting now. */
export async function dueDeliveries(db: Db, now: string, limit: number): Promise<DeliveryRow[]> {
  const rows = await db.kysely
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .orderBy('next_attempt_at')
    .limit(limit)
    .execute();
  return rows.map(normaliseDelivery);
}

/** Takes a due delivery for one attempt; false when another process took it first. */
export async function claimDelivery(db: Db, id: number, now: string, leaseUntil: string): Promise<boolean> {
  const r = await db.kysely
    .updateTable('webhook_deliveries')
    .set({ lease_until: leaseUntil })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** One attempt and what it leaves the delivery at, in one transaction. */
export async function recordAttempt(
  db: Db,
  delivery: DeliveryRow,
  attempt: Omit<AttemptRow, 'id' | 'delivery_id' | 'attempt'>,
  next: Pick<DeliveryRow, 'status' | 'next_attempt_at' | 'finished_at'>,
): Promise<void> {
  await db.kysely.transaction().execute(async (trx) => {
    await trx
      .insertInto('webhook_attempts')
      .values({ ...attempt, delivery_id: delivery.id, attempt: delivery.attempts + 1 })
      .execute();
    await trx
      .updateTable('webhook_deliveries')
      .set({ ...next, attempts: sql<number>`attempts + 1`, lease_until: null })
      .where('id', '=', delivery.id)
      .execute();
  });
}

export async function deliveriesOfJobs(db: Db, jobKind: string, jobIds: readonly number[]): Promise<DeliveryRow[]> {
  if (jobIds.length === 0) return [];
  const rows = await db.kysely
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('job_kind', '=', jobKind)
    .where('job_id', 'in', jobIds)
    .orderBy('id')
    .execute();
  return rows.map(normaliseDelivery);
}

export async function attemptsOfDeliveries(db: Db, deliveryIds: readonly number[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  const rows = await db.kysely
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', 'in', deliveryIds)
    .orderBy('delivery_id')
    .orderBy('attempt')
    .execute();
  return rows.map((r) => ({
    ...r,
    id: Number(r.id),
    delivery_id: Number(r.delivery_id),
    attempt: Number(r.attempt),
    duration_ms: Number(r.duration_ms),
    response_status: r.response_status === null ? null : Number(r.response_status),
  }));
}

export async function findAccountSecret(db: Db, accountId: number): Promise<string | undefined> {
  return (await db.kysely.selectFrom('account_webhook_secrets').select('secret').where('account_id', '=', accountId).executeTakeFirst())
    ?.secret;
}

/** Creates the account's secret unless it has one; answers the one in force. */
export async function ensureAccountSecret(db: Db, accountId: number, secret: string, at: string): Promise<string> {
  await db.kysely
    .insertInto('account_webhook_secrets')
    .values({ account_id: accountId, secret, created_at: at })
    .onConflict((oc) => oc.column('account_id').doNothing())
    .execute();
  return (await findAccountSecret(db, accountId))!;
}

export async function replaceAccountSecret(db: Db, accountId: number, secret: string, at: string): Promise<void> {
  await db.kysely
    .insertInto('account_webhook_secrets')
    .values({ account_id: accountId, secret, created_at: at })
    .onConflict((oc) => oc.column('account_id').doUpdateSet({ secret, created_at: at }))
    .execute();
}

function normaliseDelivery(r: DeliveryRow): DeliveryRow {
  return { ...r, id: Number(r.id), account_id: Number(r.account_id), job_id: Number(r.job_id), attempts: Number(r.attempts) };
}
