import { type Kysely, sql } from 'kysely';
import type { Database } from '../../infra/db/schema.ts';

export interface UsageIncrement {
  accountId: number;
  day: string;
  route: string;
  count: number;
}

/** Adds counts to the daily rows, creating them as needed (one upsert per row, one transaction). */
export async function addUsage(db: Kysely<Database>, increments: UsageIncrement[]): Promise<void> {
  if (increments.length === 0) return;
  await db.transaction().execute(async (trx) => {
    for (const i of increments) {
      await trx
        .insertInto('usage_daily')
        .values({ account_id: i.accountId, day: i.day, route: i.route, count: i.count })
        .onConflict((oc) =>
          oc.columns(['account_id', 'day', 'route']).doUpdateSet({ count: sql<number>`usage_daily.count + excluded.count` }),
        )
        .execute();
    }
  });
}

export function usageByDay(
  db: Kysely<Database>,
  accountId: number,
  fromDay: string,
  toDay: string,
): Promise<Array<{ day: string; count: number }>> {
  return db
    .selectFrom('usage_daily')
    .select(['day', (eb) => eb.fn.sum<number>('count').as('count')])
    .where('account_id', '=', accountId)
    .where('day', '>=', fromDay)
    .where('day', '<=', toDay)
    .groupBy('day')
    .orderBy('day')
    .execute();
}

export async function requestsOnDay(db: Kysely<Database>, accountId: number, day: string): Promise<number> {
  const row = await db
    .selectFrom('usage_daily')
    .select((eb) => eb.fn.sum<number>('count').as('count'))
    .where('account_id', '=', accountId)
    .where('day', '=', day)
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}
