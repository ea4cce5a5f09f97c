import { sql, type Kysely, type Transaction } from 'kysely';
import { byDialect } from '../../infra/db/dialect.ts';
import type { Database } from '../../infra/db/schema.ts';
import { placeColumns } from '../places/place-record.ts';
import type { StoredPlaceText } from '../places/place-text.ts';
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

/** Whether the catalog holds a record of a source other than `source` (no candidates otherwise). */
export async function hasOtherSource(db: Conn, source: string): Promise<boolean> {
  // Two range seeks on the (source, source_id) key rather than one `<>` that may read it all.
  const below = await db.selectFrom('places').select('id').where('source', '<', source).limit(1).executeTakeFirst();
  if (below) return true;
  return (await db.selectFrom('places').select('id').where('source', '>', source).limit(1).executeTakeFirst()) !== undefined;
}

/**
 * The bulk writes of conflation, run for every record an import writes (a first import of a country writes
 * millions of keys): the records' keys out and in, and the records done taken off `place_match_due`.
 * SQLite: statements prepared once, run on the connection inside `conflationTransaction`'s open transaction
 * (no statement compiled per call: building and preparing a multi-row INSERT each time cost more than the
 * writes). PostgreSQL: one statement each, arrays through `unnest`.
 */
export interface MatchKeyStore {
  replaceKeys(conn: Conn, changed: readonly number[], keys: readonly { key: string; place_id: number }[]): Promise<void>;
  markMatched(conn: Conn, ids: readonly number[]): Promise<void>;
}

export const matchKeyStore = byDialect<MatchKeyStore>({
  sqlite: (db) => {
    const h = db.sqlite;
    const remove = h.prepare('DELETE FROM place_match_keys WHERE place_id = ?');
    const insert = h.prepare('INSERT INTO place_match_keys (key, place_id) VALUES (?, ?) ON CONFLICT (key, place_id) DO NOTHING');
    const done = h.prepare('DELETE FROM place_match_due WHERE place_id = ?');
    return {
      async replaceKeys(_conn, changed, keys) {
        for (const id of changed) remove.run(id);
        for (const k of keys) insert.run(k.key, k.place_id);
      },
      async markMatched(_conn, ids) {
        for (const id of ids) done.run(id);
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
  }),
});

/** The records of sources other than `source`, not retired, indexed under any of `keys`. */
export async function candidatesUnderKeys(db: Conn, keys: readonly string[], source: string): Promise<number[]> {
  const ids = new Set<number>();
  for (const part of slices(keys, MAX_PARAMS - 1)) {
    const rows = await db
      .selectFrom('place_match_keys as k')
      .innerJoin('places as p', 'p.id', 'k.place_id')
      .select('k.place_id')
      .distinct()
      .where('k.key', 'in', part)
      .where('p.source', '<>', source)
      .where((eb) => eb.or([eb('p.closed_reason', 'is', null), eb('p.closed_reason', '<>', 'retired')]))
      .execute();
    for (const r of rows) ids.add(r.place_id);
  }
  return [...ids];
}

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
 * Makes record `id` the first record of a place of several sources, keeping the row (its id, public id,
 * first-seen date and the leads that point at it) for the place: the record's values move to a new row
 * (`merged_into` the place, its blocking keys with it), and the row becomes the place.
 */
export async function makePlaceOf(db: Conn, id: number, now: string, text: StoredPlaceText): Promise<void> {
  const row = await db.selectFrom('places').select(['public_id', 'source_id']).where('id', '=', id).executeTakeFirstOrThrow();
  await db
    .updateTable('places')
    .set({ source_id: mergedSourceId(row.public_id), seen_run_id: null })
    .where('id', '=', id)
    .execute();
  // The place is nothing to conflate (its record, moved below, was conflated already).
  await db.deleteFrom('place_match_due').where('place_id', '=', id).execute();
  // The record, copied in SQL: its values, run, dates and state as they were.
  const copied = [
    ...placeColumns.filter((c) => c !== 'public_id' && c !== 'source_id'),
    'import_run_id',
    'seen_run_id',
    'first_seen_at',
    'updated_at',
    ...text.columns,
  ] as const;
  const inserted = await db
    .insertInto('places')
    .columns([...copied, 'public_id', 'source_id', 'merged_into', 'closed_reason', 'closed_at'])
    .expression((eb) =>
      eb
        .selectFrom('places')
        .select([
          ...copied,
          eb.val(leadRecordPublicId(row.public_id)).as('public_id'),
          eb.val(row.source_id).as('source_id'),
          eb.val(id).as('merged_into'),
          sql<string>`CASE WHEN closed_reason = 'retired' THEN 'retired' ELSE 'merged' END`.as('closed_reason'),
          sql<string>`coalesce(closed_at, ${now})`.as('closed_at'),
        ])
        .where('id', '=', id),
    )
    .returning('id')
    .executeTakeFirstOrThrow();
  await db.updateTable('place_match_keys').set({ place_id: inserted.id }).where('place_id', '=', id).execute();
}

/** Record `id` joins place `placeId`: out of search as itself, its leads moved to the place. */
export async function joinPlace(db: Conn, id: number, placeId: number, now: string): Promise<void> {
  await db
    .updateTable('places')
    .set({ merged_into: placeId, closed_reason: 'merged', closed_at: sql<string>`coalesce(closed_at, ${now})` })
    .where('id', '=', id)
    .execute();
  await moveLeads(db, id, placeId);
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
