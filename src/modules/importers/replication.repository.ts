import type { Transaction } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { Database } from '../../infra/db/schema.ts';

/** Where a dataset stands in the replication feed it follows (`replication_state`, migration 0030). */
export interface FeedPosition {
  dataset: string;
  source: string;
  url: string;
  sequence: number;
  timestamp: string;
}

export async function feedPosition(db: Db, dataset: string): Promise<FeedPosition | undefined> {
  const row = await db.kysely
    .selectFrom('replication_state')
    .select(['dataset', 'source', 'url', 'sequence', 'timestamp'])
    .where('dataset', '=', dataset)
    .executeTakeFirst();
  return row ? { ...row, sequence: Number(row.sequence) } : undefined;
}

/** Records the last change file applied; called in the transaction that completes its import run. */
export async function saveFeedPosition(trx: Transaction<Database>, position: FeedPosition, at: string): Promise<void> {
  await trx
    .insertInto('replication_state')
    .values({ ...position, updated_at: at })
    .onConflict((oc) =>
      oc.column('dataset').doUpdateSet({
        source: position.source,
        url: position.url,
        sequence: position.sequence,
        timestamp: position.timestamp,
        updated_at: at,
      }),
    )
    .execute();
}
