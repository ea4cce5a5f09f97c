import { type Selectable, sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { byDialect, type SqliteDb } from '../../infra/db/dialect.ts';
import type { ExportsTable } from '../../infra/db/schema.ts';

export type ExportRow = Selectable<ExportsTable>;

export async function insertExport(
  db: Db,
  row: Pick<ExportRow, 'public_id' | 'account_id' | 'search_id' | 'format' | 'fields' | 'created_at'>,
): Promise<ExportRow> {
  return db.kysely
    .insertInto('exports')
    .values({ ...row, status: 'running', finished_at: null })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Records one exported batch in one short transaction: each place becomes (or stays) a lead of the
 * account, and the export's row count grows by the batch, so leads and `row_count` never disagree.
 */
export interface LeadRecorder {
  recordBatch(exp: ExportRow, placeIds: readonly number[], at: string): Promise<void>;
}

export const createLeadRecorder = byDialect<LeadRecorder>({
  sqlite: (db) => new SqliteLeadRecorder(db),
  postgres: (db) => new KyselyLeadRecorder(db),
});

/**
 * SQLite: one prepared INSERT … SELECT over `json_each` of the batch's ids, in one synchronous transaction
 * with the counter. SQLite loops over the ids itself: about half the time of one statement call per
 * row, and far less than building a 5,000-parameter INSERT per batch.
 */
class SqliteLeadRecorder implements LeadRecorder {
  private readonly record: (exp: ExportRow, placeIds: readonly number[], at: string) => void;

  constructor(db: SqliteDb) {
    const h = db.sqlite;
    // `WHERE true` tells the parser that ON CONFLICT belongs to the INSERT, not to a join of the SELECT.
    const upsert = h.prepare(
      `INSERT INTO leads (account_id, place_id, search_id, export_id, first_exported_at, last_exported_at)
       SELECT ?, value, ?, ?, ?, ? FROM json_each(?) WHERE true
       ON CONFLICT (account_id, place_id) DO UPDATE SET
         search_id = excluded.search_id, export_id = excluded.export_id, last_exported_at = excluded.last_exported_at`,
    );
    const count = h.prepare('UPDATE exports SET row_count = row_count + ? WHERE id = ?');
    this.record = h.transaction((exp: ExportRow, placeIds: readonly number[], at: string) => {
      upsert.run(exp.account_id, exp.search_id, exp.id, at, at, JSON.stringify(placeIds));
      count.run(placeIds.length, exp.id);
    });
  }

  async recordBatch(exp: ExportRow, placeIds: readonly number[], at: string): Promise<void> {
    if (placeIds.length > 0) this.record(exp, placeIds, at);
  }
}

/** PostgreSQL: one multi-row upsert and the counter in one transaction. */
class KyselyLeadRecorder implements LeadRecorder {
  constructor(private readonly db: Db) {}

  async recordBatch(exp: ExportRow, placeIds: readonly number[], at: string): Promise<void> {
    // One INSERT … ON CONFLICT may not touch a row twice.
    const ids = [...new Set(placeIds)];
    if (ids.length === 0) return;
    await this.db.kysely.transaction().execute(async (trx) => {
      await trx
        .insertInto('leads')
        .values(
          ids.map((placeId) => ({
            account_id: exp.account_id,
            place_id: placeId,
            search_id: exp.search_id,
            export_id: exp.id,
            first_exported_at: at,
            last_exported_at: at,
          })),
        )
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
}

export type ExportStatus = Exclude<ExportRow['status'], 'running'>;

export async function finishExport(db: Db, id: number, status: ExportStatus, at: string): Promise<void> {
  await db.kysely.updateTable('exports').set({ status, finished_at: at }).where('id', '=', id).execute();
}

export async function findExport(db: Db, accountId: number, publicId: string): Promise<ExportRow | undefined> {
  return db.kysely
    .selectFrom('exports')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('public_id', '=', publicId)
    .executeTakeFirst();
}

/** The account's most recent exports, newest first. */
export function listRecentExports(db: Db, accountId: number, limit: number) {
  return db.kysely
    .selectFrom('exports')
    .select(['public_id', 'search_id', 'format', 'row_count', 'status', 'created_at', 'finished_at'])
    .where('account_id', '=', accountId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}
