import { type CompiledQuery, sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';
import type { SuppressionKind } from './suppressions.schema.ts';

/** A normalised entry as stored: `key` is what places are matched by, `value` what the client sent. */
export interface SuppressionEntry {
  kind: SuppressionKind;
  key: string;
  value: string;
}

export interface SuppressionListState {
  revision: number;
  counts: Record<SuppressionKind, number>;
}

export interface SuppressionRow {
  id: number;
  kind: SuppressionKind;
  key: string;
  value: string;
  created_at: string;
}

type ListStateRow = { revision: number; phone_count: number; domain_count: number; email_count: number; place_count: number };

const listStateStatements = new WeakMap<object, { get(accountId: number): unknown }>();

/**
 * Reads an account's list state. Asked on every search (what the account leaves out), so SQLite reads it
 * through one prepared statement per connection rather than building and preparing the query each time.
 */
const readListState = byDialect<(accountId: number) => Promise<ListStateRow | undefined>>({
  sqlite: (db) => {
    let statement = listStateStatements.get(db.sqlite);
    if (!statement) {
      statement = db.sqlite.prepare(
        'SELECT revision, phone_count, domain_count, email_count, place_count FROM suppression_lists WHERE account_id = ?',
      );
      listStateStatements.set(db.sqlite, statement);
    }
    const prepared = statement;
    return async (accountId) => prepared.get(accountId) as ListStateRow | undefined;
  },
  postgres: (db) => (accountId) =>
    db.kysely
      .selectFrom('suppression_lists')
      .select(['revision', 'phone_count', 'domain_count', 'email_count', 'place_count'])
      .where('account_id', '=', accountId)
      .executeTakeFirst(),
});

/** The account's list: revision and entries per kind; null when it never had one. */
export async function findListState(db: Db, accountId: number): Promise<SuppressionListState | null> {
  const row = await readListState(db)(accountId);
  if (!row) return null;
  return {
    revision: Number(row.revision),
    counts: {
      phone: Number(row.phone_count),
      domain: Number(row.domain_count),
      email: Number(row.email_count),
      place: Number(row.place_count),
    },
  };
}

/**
 * Runs compiled statements in one transaction and answers the rows each changed. SQLite: synchronously on
 * the shared connection (nothing else can run inside the transaction); PostgreSQL: a transaction of the pool.
 */
const runInTransaction = byDialect<(queries: CompiledQuery[]) => Promise<number[]>>({
  sqlite: (db) => {
    const h = db.sqlite;
    const run = h.transaction((queries: CompiledQuery[]) =>
      queries.map((q) => h.prepare(q.sql).run(...(q.parameters as unknown[])).changes),
    );
    return async (queries) => run(queries);
  },
  postgres: (db) => async (queries) =>
    db.kysely.transaction().execute(async (trx) => {
      const changed: number[] = [];
      for (const q of queries) changed.push(Number((await trx.executeQuery(q)).numAffectedRows ?? 0));
      return changed;
    }),
});

/** Brings the account's counts up to date and moves its revision (the last statement of every change). */
function refreshList(db: Db, accountId: number, at: string): CompiledQuery {
  const count = (kind: SuppressionKind) => sql<number>`coalesce(sum(CASE WHEN kind = ${kind} THEN 1 ELSE 0 END), 0)`;
  return sql`INSERT INTO suppression_lists (account_id, revision, phone_count, domain_count, email_count, place_count, updated_at)
      SELECT ${accountId}, 1, ${count('phone')}, ${count('domain')}, ${count('email')}, ${count('place')}, ${at} FROM suppressions WHERE account_id = ${accountId}
      ON CONFLICT (account_id) DO UPDATE SET revision = suppression_lists.revision + 1, phone_count = excluded.phone_count,
        domain_count = excluded.domain_count, email_count = excluded.email_count, place_count = excluded.place_count, updated_at = excluded.updated_at`.compile(
    db.kysely,
  );
}

/** Adds entries of an upload in progress (invisible to searches until `commitUpload`). */
export async function stageEntries(
  db: Db,
  upload: { id: string; accountId: number; at: string },
  firstSeq: number,
  entries: readonly SuppressionEntry[],
): Promise<void> {
  if (entries.length === 0) return;
  const rows = entries.map((e, i) => [firstSeq + i, e.kind, e.key, e.value]);
  // Within the drivers' limits on bound parameters: the rows go as one JSON text (SQLite's json_each,
  // PostgreSQL's jsonb_array_elements).
  const q = stagingInsert(db)(upload, JSON.stringify(rows));
  await runInTransaction(db)([q]);
}

const stagingInsert = byDialect<(upload: { id: string; accountId: number; at: string }, json: string) => CompiledQuery>({
  sqlite: (db) => (u, json) =>
    sql`INSERT INTO suppression_uploads (upload_id, account_id, seq, kind, key, value, created_at)
        SELECT ${u.id}, ${u.accountId}, json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'), ${u.at}
        FROM json_each(${json})`.compile(db.kysely),
  postgres: (db) => (u, json) =>
    sql`INSERT INTO suppression_uploads (upload_id, account_id, seq, kind, key, value, created_at)
        SELECT ${u.id}, ${u.accountId}, (e->>0)::bigint, e->>1, e->>2, e->>3, ${u.at}
        FROM jsonb_array_elements(${json}::jsonb) AS e`.compile(db.kysely),
});

/**
 * Moves an upload's entries into the list in one transaction (entries already there are left as they
 * are), removes the upload's rows, and updates the counts. Answers how many entries were new.
 */
export async function commitUpload(db: Db, uploadId: string, accountId: number, at: string): Promise<number> {
  // `WHERE` before ON CONFLICT: SQLite then reads ON CONFLICT as the INSERT's, not a join's.
  const move = sql`INSERT INTO suppressions (account_id, kind, key, value, created_at)
      SELECT account_id, kind, key, value, created_at FROM suppression_uploads WHERE upload_id = ${uploadId} ORDER BY seq
      ON CONFLICT (account_id, kind, key) DO NOTHING`.compile(db.kysely);
  const drop = db.kysely.deleteFrom('suppression_uploads').where('upload_id', '=', uploadId).compile();
  const [added] = await runInTransaction(db)([move, drop, refreshList(db, accountId, at)]);
  return added ?? 0;
}

/** Forgets an upload that will not be committed (refused, or its client went away). */
export async function discardUpload(db: Db, uploadId: string): Promise<void> {
  await db.kysely.deleteFrom('suppression_uploads').where('upload_id', '=', uploadId).execute();
}

/** Rows of this account's uploads that started before `before` and never finished (a crash, a kill). */
export async function discardStaleUploads(db: Db, accountId: number, before: string): Promise<void> {
  await db.kysely.deleteFrom('suppression_uploads').where('account_id', '=', accountId).where('created_at', '<', before).execute();
}

/** One page of the list in id order, after `afterId`, optionally of one kind. */
export async function listEntries(
  db: Db,
  accountId: number,
  page: { afterId: number; limit: number; kind?: SuppressionKind },
): Promise<SuppressionRow[]> {
  let q = db.kysely
    .selectFrom('suppressions')
    .select(['id', 'kind', 'key', 'value', 'created_at'])
    .where('account_id', '=', accountId)
    .where('id', '>', page.afterId);
  if (page.kind) q = q.where('kind', '=', page.kind);
  const rows = await q.orderBy('id').limit(page.limit).execute();
  return rows.map((r) => ({ ...r, id: Number(r.id), kind: r.kind as SuppressionKind }));
}

/** Removes one entry of the account; false when the account has no entry with that id. */
export async function deleteEntry(db: Db, accountId: number, id: number, at: string): Promise<boolean> {
  const remove = db.kysely.deleteFrom('suppressions').where('account_id', '=', accountId).where('id', '=', id).compile();
  // The revision moves even when nothing was removed: one transaction, and a spare revision costs nothing.
  const [removed] = await runInTransaction(db)([remove, refreshList(db, accountId, at)]);
  return (removed ?? 0) > 0;
}

/** Removes every entry of the account; answers how many. */
export async function deleteAllEntries(db: Db, accountId: number, at: string): Promise<number> {
  const remove = db.kysely.deleteFrom('suppressions').where('account_id', '=', accountId).compile();
  const [removed] = await runInTransaction(db)([remove, refreshList(db, accountId, at)]);
  return removed ?? 0;
}
