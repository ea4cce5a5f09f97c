import { sql, type Selectable } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { ExportsTable } from '../../infra/db/schema.ts';

export type ExportRow = Selectable<ExportsTable>;

export async function insertExport(
  db: Db,
  row: Pick<ExportRow, 'public_id' | 'account_id' | 'search_id' | 'format' | 'fields' | 'created_at'>,
): Promise<ExportRow> {
  return db.kysely.insertInto('exports').values({ ...row, status: 'running', finished_at: null }).returningAll().executeTakeFirstOrThrow();
}

/**
 * Records one exported batch in one short transaction: each place becomes (or stays) a lead of the
 * account, and the export's row count grows by the batch, so leads and `row_count` never disagree.
 */
export async function recordExportedBatch(db: Db, exp: ExportRow, placeIds: readonly number[], at: string): Promise<void> {
  const ids = [...new Set(placeIds)];
  if (ids.length === 0) return;
  await db.kysely.transaction().execute(async (trx) => {
    await trx
      .insertInto('leads')
      .values(ids.map((placeId) => ({
        account_id: exp.account_id,
        place_id: placeId,
        search_id: exp.search_id,
        export_id: exp.id,
        first_exported_at: at,
        last_exported_at: at,
      })))
      .onConflict((oc) =>
        oc.columns(['account_id', 'place_id']).doUpdateSet((eb) => ({
          search_id: eb.ref('excluded.search_id'),
          export_id: eb.ref('excluded.export_id'),
          last_exported_at: eb.ref('excluded.last_exported_at'),
        })),
      )
      .execute();
    await trx
      .updateTable('exports')
      .set({ row_count: sql<number>`row_count + ${placeIds.length}` })
      .where('id', '=', exp.id)
      .execute();
  });
}

export async function finishExport(db: Db, id: number, status: 'done' | 'aborted' | 'failed', at: string): Promise<void> {
  await db.kysely.updateTable('exports').set({ status, finished_at: at }).where('id', '=', id).execute();
}

export async function findExport(db: Db, accountId: number, publicId: string): Promise<ExportRow | undefined> {
  return db.kysely.selectFrom('exports').selectAll().where('account_id', '=', accountId).where('public_id', '=', publicId).executeTakeFirst();
}
