import { type Kysely, type Selectable, sql } from 'kysely';
import type { AccountQuotasTable, Database } from '../../infra/db/schema.ts';

export type AccountQuotasRow = Selectable<AccountQuotasTable>;

export function findAccountQuotas(db: Kysely<Database>, accountId: number): Promise<AccountQuotasRow | undefined> {
  return db.selectFrom('account_quotas').selectAll().where('account_id', '=', accountId).executeTakeFirst();
}

/** Sets the given columns of an account's quotas (null: back to the default), leaving the others. */
export async function updateAccountQuotas(
  db: Kysely<Database>,
  accountId: number,
  values: Partial<
    Pick<
      AccountQuotasRow,
      'requests_per_day' | 'export_rows_per_month' | 'concurrent_exports' | 'enrich_places_per_month' | 'match_rows_per_month'
    >
  >,
  at: string,
): Promise<void> {
  await db
    .insertInto('account_quotas')
    .values({
      account_id: accountId,
      requests_per_day: null,
      export_rows_per_month: null,
      concurrent_exports: null,
      enrich_places_per_month: null,
      match_rows_per_month: null,
      ...values,
      updated_at: at,
    })
    .onConflict((oc) => oc.column('account_id').doUpdateSet({ ...values, updated_at: at }))
    .execute();
}

export async function exportRowsInMonth(db: Kysely<Database>, accountId: number, month: string): Promise<number> {
  const row = await db
    .selectFrom('export_row_usage')
    .select('row_count')
    .where('account_id', '=', accountId)
    .where('month', '=', month)
    .executeTakeFirst();
  return Number(row?.row_count ?? 0);
}

/**
 * Takes up to `wanted` rows from what is left of `limit` this month and returns how many it took, in
 * one transaction. The first UPDATE locks the counter's row (PostgreSQL) or the database (SQLite),
 * so two exports of the account cannot both take the last rows.
 */
export function reserveExportRows(db: Kysely<Database>, accountId: number, month: string, wanted: number, limit: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await trx
      .insertInto('export_row_usage')
      .values({ account_id: accountId, month, row_count: 0 })
      .onConflict((oc) => oc.columns(['account_id', 'month']).doNothing())
      .execute();
    const counter = trx.updateTable('export_row_usage').where('account_id', '=', accountId).where('month', '=', month);
    await counter.set({ row_count: sql<number>`row_count` }).execute();
    const used = Number(
      (
        await trx
          .selectFrom('export_row_usage')
          .select('row_count')
          .where('account_id', '=', accountId)
          .where('month', '=', month)
          .executeTakeFirstOrThrow()
      ).row_count,
    );
    const granted = Math.max(0, Math.min(wanted, limit - used));
    if (granted > 0) await counter.set({ row_count: sql<number>`row_count + ${granted}` }).execute();
    return granted;
  });
}

/** Gives back rows reserved but never written (the batch in flight when a client went away). */
export async function returnExportRows(db: Kysely<Database>, accountId: number, month: string, rows: number): Promise<void> {
  if (rows <= 0) return;
  await db
    .updateTable('export_row_usage')
    .set({ row_count: sql<number>`CASE WHEN row_count > ${rows} THEN row_count - ${rows} ELSE 0 END` })
    .where('account_id', '=', accountId)
    .where('month', '=', month)
    .execute();
}

export async function enrichPlacesInMonth(db: Kysely<Database>, accountId: number, month: string): Promise<number> {
  const row = await db
    .selectFrom('enrich_usage')
    .select('place_count')
    .where('account_id', '=', accountId)
    .where('month', '=', month)
    .executeTakeFirst();
  return Number(row?.place_count ?? 0);
}

/** Takes up to `wanted` places from what is left of `limit` this month, as `reserveExportRows` takes rows (one transaction, the counter's row locked). */
export function reserveEnrichPlaces(
  db: Kysely<Database>,
  accountId: number,
  month: string,
  wanted: number,
  limit: number,
): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await trx
      .insertInto('enrich_usage')
      .values({ account_id: accountId, month, place_count: 0 })
      .onConflict((oc) => oc.columns(['account_id', 'month']).doNothing())
      .execute();
    const counter = trx.updateTable('enrich_usage').where('account_id', '=', accountId).where('month', '=', month);
    await counter.set({ place_count: sql<number>`place_count` }).execute();
    const used = Number(
      (
        await trx
          .selectFrom('enrich_usage')
          .select('place_count')
          .where('account_id', '=', accountId)
          .where('month', '=', month)
          .executeTakeFirstOrThrow()
      ).place_count,
    );
    const granted = Math.max(0, Math.min(wanted, limit - used));
    if (granted > 0) await counter.set({ place_count: sql<number>`place_count + ${granted}` }).execute();
    return granted;
  });
}

export async function returnEnrichPlaces(db: Kysely<Database>, accountId: number, month: string, places: number): Promise<void> {
  if (places <= 0) return;
  await db
    .updateTable('enrich_usage')
    .set({ place_count: sql<number>`CASE WHEN place_count > ${places} THEN place_count - ${places} ELSE 0 END` })
    .where('account_id', '=', accountId)
    .where('month', '=', month)
    .execute();
}

export async function matchRowsInMonth(db: Kysely<Database>, accountId: number, month: string): Promise<number> {
  const row = await db
    .selectFrom('match_row_usage')
    .select('row_count')
    .where('account_id', '=', accountId)
    .where('month', '=', month)
    .executeTakeFirst();
  return Number(row?.row_count ?? 0);
}

/** Takes `rows` from what is left of `limit` this month if they all fit (one transaction, the counter's row locked); else how many are left. */
export function reserveMatchRows(
  db: Kysely<Database>,
  accountId: number,
  month: string,
  rows: number,
  limit: number,
): Promise<'reserved' | number> {
  return db.transaction().execute(async (trx) => {
    await trx
      .insertInto('match_row_usage')
      .values({ account_id: accountId, month, row_count: 0 })
      .onConflict((oc) => oc.columns(['account_id', 'month']).doNothing())
      .execute();
    const counter = trx.updateTable('match_row_usage').where('account_id', '=', accountId).where('month', '=', month);
    await counter.set({ row_count: sql<number>`row_count` }).execute();
    const used = await matchRowsInMonth(trx, accountId, month);
    if (used + rows > limit) return Math.max(0, limit - used);
    await counter.set({ row_count: sql<number>`row_count + ${rows}` }).execute();
    return 'reserved';
  });
}

export async function returnMatchRows(db: Kysely<Database>, accountId: number, month: string, rows: number): Promise<void> {
  if (rows <= 0) return;
  await db
    .updateTable('match_row_usage')
    .set({ row_count: sql<number>`CASE WHEN row_count > ${rows} THEN row_count - ${rows} ELSE 0 END` })
    .where('account_id', '=', accountId)
    .where('month', '=', month)
    .execute();
}
