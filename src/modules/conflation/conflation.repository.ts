import { type Kysely, sql, type Transaction } from 'kysely';
import { byDialect } from '../../infra/db/dialect.ts';
import type { Database } from '../../infra/db/schema.ts';
import { placeColumns } from '../places/place-record.ts';
import { storedPlaceText } from '../places/place-text.ts';
import type { MemberRecord } from './merge.ts';

/** A connection or a transaction: every function here runs inside the caller's transaction. */
export type Conn = Kysely<Database> | Transaction<Database>;

/** A stored record with what conflation needs to know about its place. */
export type StoredRecord = MemberRecord & {
  merged_into: number | null;
  closed_reason: string | null;
  /** Non-null on a place of several sources (not a record). */
  sources: string | null;
};

const recordColumns = ['id', ...placeColumns, 'merged_into', 'closed_reason', 'sources'] as const;

/**
 * A transaction of conflation, one at a time across processes (two imports at once): each reads the records
 * due only once it holds the lock, so a record is conflated once. SQLite: `BEGIN IMMEDIATE` takes the write
 * lock first (a deferred transaction that read, then wrote after another process's commit, would fail);
 * the statements run on the connection and join it. PostgreSQL: a transaction-level advisory lock.
 */
export const conflationTransaction = byDialect<<T>(work: (conn: Conn) => Promise<T>) => Promise<T>>({
  sqlite: (db) => async (work) => {
    const h = db.sqlite;
    h.exec('BEGIN IMMEDIATE');
    try {
      const result = await work(db.kysely);
      h.exec('COMMIT');
      return result;
    } catch (error) {
      if (h.inTransaction) h.exec('ROLLBACK');
      throw error;
    }
  },
  postgres: (db) => (work) =>
    db.kysely.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(${CONFLATION_LOCK})`.execute(trx);
      return work(trx);
    }),
});

/** The advisory lock of conflation on PostgreSQL (any constant no other part of LeadAtlas uses). */
const CONFLATION_LOCK = 0x1ea0c0f1;

/** Bound parameters per statement, well under SQLite's and PostgreSQL's limits. */
const MAX_PARAMS = 8000;

function* slices<T>(items: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}

/** What conflation reads of a record due: what the matcher reads, and where the record stands. */
const pendingColumns = [
  'id',
  'source',
  'name',
  'names',
  'category',
  'categories',
  'phone_e164',
  'website_domain',
  'lat',
  'lon',
  'street',
  'housenumber',
  'address',
  'merged_into',
  'closed_reason',
  'sources',
] as const;
export type PendingRecord = Pick<StoredRecord, (typeof pendingColumns)[number]> & {
  /** 1: changed since it was last conflated (its old keys go first); 0: new. */
  changed: number;
};

/** Up to `limit` records due for conflation (`place_match_due`), after row `afterId`, in id order. */
export async function pendingRecords(db: Conn, afterId: number, limit: number): Promise<PendingRecord[]> {
  return (await db
    .selectFrom('place_match_due as d')
    .innerJoin('places', 'places.id', 'd.place_id')
    .select([...pendingColumns.map((c) => `places.${c}` as const), 'd.changed'])
    .where('d.place_id', '>', afterId)
    .orderBy('d.place_id')
    .limit(limit)
    .execute()) as unknown as PendingRecord[];
}

/** The records of places of several sources, by place. */
export async function membersOf(db: Conn, placeIds: readonly number[]): Promise<Map<number, StoredRecord[]>> {
  const out = new Map<number, StoredRecord[]>();
  for (const part of slices(placeIds, MAX_PARAMS)) {
    const rows = (await db
      .selectFrom('places')
      .select(recordColumns)
      .where('merged_into', 'in', part)
      .orderBy('id')
      .execute()) as unknown as StoredRecord[];
    for (const r of rows) {
      const list = out.get(r.merged_into!) ?? [];
      list.push(r);
      out.set(r.merged_into!, list);
    }
  }
  return out;
}

/** The source and state of every record of places of several sources, by place: what a record may join. */
export async function memberSourcesOf(
  db: Conn,
  placeIds: readonly number[],
): Promise<Map<number, Array<{ source: string; closed_reason: string | null }>>> {
  const out = new Map<number, Array<{ source: string; closed_reason: string | null }>>();
  for (const part of slices(placeIds, MAX_PARAMS)) {
    const rows = await db
      .selectFrom('places')
      .select(['merged_into', 'source', 'closed_reason'])
      .where('merged_into', 'in', part)
      .orderBy('id')
      .execute();
    for (const r of rows) {
      const list = out.get(r.merged_into!) ?? [];
      list.push({ source: r.source, closed_reason: r.closed_reason });
      out.set(r.merged_into!, list);
    }
  }
  return out;
}

/** Whether the catalog holds a record of a source other than `source` (no candidates otherwise). */
export async function hasOtherSource(db: Conn, source: string): Promise<boolean> {
  // Two range seeks on the (source, source_id) key rather than one `<>` that may read it all.
  const below = await db.selectFrom('places').select('id').where('source', '<', source).limit(1).executeTakeFirst();
  if (below) return true;
  return (await db.selectFrom('places').select('id').where('source', '>', source).limit(1).executeTakeFirst()) !== undefined;
}

/**
 * The bulk writes of conflation: the keys of every record an import writes (a first import of a country writes
 * millions), the records done taken off `place_match_due`, and the merges of a window of records decided
 * together (`makePlaces`, `joinPlaces`, `writePlaces`), so that a merge costs no statement of its own
 * on PostgreSQL and no statement compiled and prepared on SQLite. SQLite: statements prepared once, run on
 * the connection inside `conflationTransaction`'s open transaction (building and preparing a statement per
 * call cost more than the writes). PostgreSQL: one statement each, arrays through `unnest`, rows through
 * `json_populate_recordset`.
 */
export interface ConflationWriter {
  replaceKeys(conn: Conn, changed: readonly number[], keys: readonly { key: string; place_id: number }[]): Promise<void>;
  markMatched(conn: Conn, ids: readonly number[]): Promise<void>;
  /**
   * Makes each record of `ids` the first record of a place of several sources, keeping its row (id, public
   * id, first-seen date, the leads that point at it) for the place: its `source_id` becomes
   * `merged:<public id>`, and the record's values, run, dates and state move to a new row (`merged_into`
   * the place, public id `rec:<public id>`) with its blocking keys. New rows are made in the order of `ids`.
   * Returns each place's new record row.
   */
  makePlaces(conn: Conn, ids: readonly number[], now: string): Promise<Map<number, number>>;
  /** Each record `id` joins place `placeId`: out of search as itself (its leads are `moveLeadsToPlaces`'). */
  joinPlaces(conn: Conn, joins: readonly { id: number; placeId: number }[], now: string): Promise<void>;
  /** Writes the merge of each place (`PlaceWrite`). */
  writePlaces(conn: Conn, rows: readonly PlaceWrite[]): Promise<void>;
}

/** What a merge writes on a place's row, beside the stored text columns of the dialect (`StoredPlaceText`). */
export const placeWriteColumns = [
  ...placeColumns.filter((c) => c !== 'public_id' && c !== 'source_id'),
  'sources',
  'field_sources',
  'merge_state',
  'closed_reason',
  'closed_at',
] as const;

/** A place's merge as written: its id, `placeWriteColumns` and text columns, and `updated_at` (null: unchanged). */
export type PlaceWrite = { id: number; updated_at: string | null } & Record<string, unknown>;

/** The columns of a record copied to its new row when its row becomes a place (`makePlaces`). */
const copiedColumns = (textColumns: readonly string[]): string[] => [
  ...placeColumns.filter((c) => c !== 'public_id' && c !== 'source_id'),
  'import_run_id',
  'seen_run_id',
  'first_seen_at',
  'updated_at',
  ...textColumns,
];

const quoted = (columns: readonly string[], prefix = ''): string => columns.map((c) => `${prefix}"${c}"`).join(', ');
const copiedStateSql = (row: string) =>
  `CASE WHEN ${row}closed_reason = 'retired' THEN 'retired' ELSE 'merged' END, coalesce(${row}closed_at, `;

export const conflationWriter = byDialect<ConflationWriter>({
  sqlite: (db) => {
    const h = db.sqlite;
    const remove = h.prepare('DELETE FROM place_match_keys WHERE place_id = ?');
    const insert = h.prepare('INSERT INTO place_match_keys (key, place_id) VALUES (?, ?) ON CONFLICT (key, place_id) DO NOTHING');
    const done = h.prepare('DELETE FROM place_match_due WHERE place_id = ?');
    const textColumns = storedPlaceText(db).columns;
    const copied = copiedColumns(textColumns);
    const identity = h.prepare<[number], { public_id: string; source_id: string }>('SELECT public_id, source_id FROM places WHERE id = ?');
    const asPlace = h.prepare('UPDATE places SET source_id = ?, seen_run_id = NULL WHERE id = ?');
    // Reads the row after `asPlace` (as one statement after the other would): the record keeps no run.
    const copy = h.prepare<[string, string, string, number], { id: number }>(
      `INSERT INTO places (${quoted(copied)}, public_id, source_id, merged_into, closed_reason, closed_at)
       SELECT ${quoted(copied)}, ?, ?, id, ${copiedStateSql('')}?) FROM places WHERE id = ? RETURNING id`,
    );
    const moveKeys = h.prepare('UPDATE place_match_keys SET place_id = ? WHERE place_id = ?');
    const join = h.prepare("UPDATE places SET merged_into = ?, closed_reason = 'merged', closed_at = coalesce(closed_at, ?) WHERE id = ?");
    const written = [...placeWriteColumns, ...textColumns];
    const write = h.prepare(
      `UPDATE places SET ${written.map((c) => `"${c}" = ?`).join(', ')}, updated_at = coalesce(?, updated_at) WHERE id = ?`,
    );
    return {
      async replaceKeys(_conn, changed, keys) {
        for (const id of changed) remove.run(id);
        for (const k of keys) insert.run(k.key, k.place_id);
      },
      async markMatched(_conn, ids) {
        for (const id of ids) done.run(id);
      },
      async makePlaces(_conn, ids, now) {
        const out = new Map<number, number>();
        for (const id of ids) {
          const row = identity.get(id)!;
          asPlace.run(mergedSourceId(row.public_id), id);
          // The place is nothing to conflate (its record, moved, was conflated already).
          done.run(id);
          const record = copy.get(leadRecordPublicId(row.public_id), row.source_id, now, id)!.id;
          moveKeys.run(record, id);
          out.set(id, record);
        }
        return out;
      },
      async joinPlaces(_conn, joins, now) {
        for (const j of joins) join.run(j.placeId, now, j.id);
      },
      async writePlaces(_conn, rows) {
        for (const r of rows) write.run(...written.map((c) => r[c] ?? null), r.updated_at, r.id);
      },
    };
  },
  postgres: () => ({
    async replaceKeys(conn, changed, keys) {
      if (changed.length > 0) await sql`DELETE FROM place_match_keys WHERE place_id = ANY(${changed}::bigint[])`.execute(conn);
      for (const part of slices(keys, 50_000)) {
        await sql`INSERT INTO place_match_keys (key, place_id) SELECT * FROM unnest(${part.map((k) => k.key)}::text[], ${part.map((k) => k.place_id)}::bigint[])
          ON CONFLICT (key, place_id) DO NOTHING`.execute(conn);
      }
    },
    async markMatched(conn, ids) {
      if (ids.length > 0) await sql`DELETE FROM place_match_due WHERE place_id = ANY(${ids}::bigint[])`.execute(conn);
    },
    async makePlaces(conn, ids, now) {
      const out = new Map<number, number>();
      if (ids.length === 0) return out;
      const identity = new Map(
        (
          await sql<{
            id: number;
            public_id: string;
            source_id: string;
          }>`SELECT id, public_id, source_id FROM places WHERE id = ANY(${ids}::bigint[])`.execute(conn)
        ).rows.map((r) => [r.id, r]),
      );
      const publicIds = ids.map((id) => identity.get(id)!.public_id);
      const sourceIds = ids.map((id) => identity.get(id)!.source_id);
      await sql`UPDATE places p SET source_id = v.source_id, seen_run_id = NULL
        FROM unnest(${ids}::bigint[], ${publicIds.map(mergedSourceId)}::text[]) v(id, source_id) WHERE p.id = v.id`.execute(conn);
      await sql`DELETE FROM place_match_due WHERE place_id = ANY(${ids}::bigint[])`.execute(conn);
      const copied = copiedColumns([]);
      const inserted = await sql<{
        id: number;
        merged_into: number;
      }>`INSERT INTO places (${sql.raw(quoted(copied))}, public_id, source_id, merged_into, closed_reason, closed_at)
        SELECT ${sql.raw(quoted(copied, 'p.'))}, v.public_id, v.source_id, p.id, ${sql.raw(copiedStateSql('p.'))}${now})
        FROM unnest(${ids}::bigint[], ${publicIds.map(leadRecordPublicId)}::text[], ${sourceIds}::text[]) WITH ORDINALITY v(id, public_id, source_id, ord)
        JOIN places p ON p.id = v.id ORDER BY v.ord
        RETURNING id, merged_into`.execute(conn);
      for (const r of inserted.rows) out.set(r.merged_into, r.id);
      await sql`UPDATE place_match_keys k SET place_id = v.record
        FROM unnest(${ids}::bigint[], ${ids.map((id) => out.get(id)!)}::bigint[]) v(place, record) WHERE k.place_id = v.place`.execute(
        conn,
      );
      return out;
    },
    async joinPlaces(conn, joins, now) {
      if (joins.length === 0) return;
      await sql`UPDATE places p SET merged_into = v.place, closed_reason = 'merged', closed_at = coalesce(p.closed_at, ${now})
        FROM unnest(${joins.map((j) => j.id)}::bigint[], ${joins.map((j) => j.placeId)}::bigint[]) v(id, place) WHERE p.id = v.id`.execute(
        conn,
      );
    },
    async writePlaces(conn, rows) {
      if (rows.length === 0) return;
      const set = placeWriteColumns.map((c) => `"${c}" = v."${c}"`).join(', ');
      for (const part of slices(rows, 2000)) {
        await sql`UPDATE places p SET ${sql.raw(set)}, updated_at = coalesce(v.updated_at, p.updated_at)
          FROM json_populate_recordset(NULL::places, ${JSON.stringify(part)}::json) v WHERE p.id = v.id`.execute(conn);
      }
    },
  }),
});

/**
 * The records under any of `keys` that are not retired, with their source: the candidates of a batch of
 * records read in one statement per slice (a record keeps those of other sources), instead of one per record.
 */
export async function recordsUnderKeys(db: Conn, keys: readonly string[]): Promise<Array<{ key: string; id: number; source: string }>> {
  const out: Array<{ key: string; id: number; source: string }> = [];
  for (const part of slices(keys, MAX_PARAMS)) {
    const rows = await db
      .selectFrom('place_match_keys as k')
      .innerJoin('places as p', 'p.id', 'k.place_id')
      .select(['k.key', 'k.place_id', 'p.source'])
      .where('k.key', 'in', part)
      .where((eb) => eb.or([eb('p.closed_reason', 'is', null), eb('p.closed_reason', '<>', 'retired')]))
      .execute();
    for (const r of rows) out.push({ key: r.key, id: r.place_id, source: r.source });
  }
  return out;
}

/** What the matcher reads of a record, and where it stands. */
const candidateColumns = [
  'id',
  'source',
  'source_id',
  'name',
  'names',
  'category',
  'categories',
  'phone_e164',
  'website_domain',
  'lat',
  'lon',
  'street',
  'housenumber',
  'address',
  'merged_into',
  'closed_reason',
  'sources',
  'content_hash',
] as const;
export type Candidate = Pick<StoredRecord, (typeof candidateColumns)[number]>;

export async function candidatesById(db: Conn, ids: readonly number[]): Promise<Candidate[]> {
  const out: Candidate[] = [];
  for (const part of slices(ids, MAX_PARAMS)) {
    out.push(...((await db.selectFrom('places').select(candidateColumns).where('id', 'in', part).execute()) as unknown as Candidate[]));
  }
  return out;
}

/** How many records carry each key (a phone or domain many carry is a brand's). */
export async function keyCounts(db: Conn, keys: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const part of slices(keys, MAX_PARAMS)) {
    const rows = await db
      .selectFrom('place_match_keys')
      .select(['key', sql<number>`count(*)`.as('n')])
      .where('key', 'in', part)
      .groupBy('key')
      .execute();
    for (const r of rows) out.set(r.key, Number(r.n));
  }
  return out;
}

/** `source_id` of a place of several sources: never a record's, so no import or change file writes or retires it. */
export const mergedSourceId = (publicId: string): string => `merged:${publicId}`;
/** Public id of the record a place of several sources was made from, once the place has taken its own. */
export const leadRecordPublicId = (publicId: string): string => `rec:${publicId}`;

/**
 * The leads of records that joined places (`joinPlaces`) move to their places, in the order of `joins`: one
 * statement finds the records that have any (few do: a record is usually new when it joins).
 */
export async function moveLeadsToPlaces(db: Conn, joins: readonly { id: number; placeId: number }[]): Promise<void> {
  const withLeads = new Set<number>();
  for (const part of slices(
    joins.map((j) => j.id),
    MAX_PARAMS,
  )) {
    for (const r of await db.selectFrom('leads').select('place_id').distinct().where('place_id', 'in', part).execute())
      withLeads.add(r.place_id);
  }
  for (const j of joins) if (withLeads.has(j.id)) await moveLeads(db, j.id, j.placeId);
}

/**
 * An account's lead of the record becomes its lead of the place (one lead per account and place: the
 * earlier first export and the later last export are kept), so lead lists and `only_new` exports count
 * the business once.
 */
async function moveLeads(db: Conn, fromId: number, toId: number): Promise<void> {
  const leads = await db.selectFrom('leads').selectAll().where('place_id', '=', fromId).execute();
  for (const lead of leads) {
    const existing = await db
      .selectFrom('leads')
      .selectAll()
      .where('account_id', '=', lead.account_id)
      .where('place_id', '=', toId)
      .executeTakeFirst();
    if (!existing) {
      await db.updateTable('leads').set({ place_id: toId }).where('id', '=', lead.id).execute();
      continue;
    }
    const latest = existing.last_exported_at >= lead.last_exported_at ? existing : lead;
    await db
      .updateTable('leads')
      .set({
        first_exported_at: existing.first_exported_at <= lead.first_exported_at ? existing.first_exported_at : lead.first_exported_at,
        last_exported_at: latest.last_exported_at,
        search_id: latest.search_id,
        export_id: latest.export_id,
      })
      .where('id', '=', existing.id)
      .execute();
    await db.deleteFrom('leads').where('id', '=', lead.id).execute();
  }
}

export interface PlaceState {
  id: number;
  public_id: string;
  content_hash: string;
  merge_state: string | null;
  closed_reason: string | null;
  closed_at: string | null;
}

export async function placeStates(db: Conn, ids: readonly number[]): Promise<Map<number, PlaceState>> {
  const out = new Map<number, PlaceState>();
  for (const part of slices(ids, MAX_PARAMS)) {
    const rows = await db
      .selectFrom('places')
      .select(['id', 'public_id', 'content_hash', 'merge_state', 'closed_reason', 'closed_at'])
      .where('id', 'in', part)
      .execute();
    for (const r of rows) out.set(r.id, r);
  }
  return out;
}

export async function writePlace(db: Conn, id: number, set: Record<string, unknown>): Promise<void> {
  await db.updateTable('places').set(set).where('id', '=', id).execute();
}

/** The id, content hash and closed reason of every record of a place of several sources, by place. */
export async function allMemberStates(db: Conn): Promise<Map<number, { id: number; hash: string; reason: string | null }[]>> {
  const rows = await db
    .selectFrom('places')
    .select(['id', 'merged_into', 'content_hash', 'closed_reason'])
    .where('merged_into', 'is not', null)
    .orderBy('merged_into')
    .orderBy('id')
    .execute();
  const out = new Map<number, { id: number; hash: string; reason: string | null }[]>();
  for (const r of rows) {
    const list = out.get(r.merged_into!) ?? [];
    list.push({ id: r.id, hash: r.content_hash, reason: r.closed_reason });
    out.set(r.merged_into!, list);
  }
  return out;
}
