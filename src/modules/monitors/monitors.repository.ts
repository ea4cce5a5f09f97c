import type { Selectable, Transaction } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { Database, MonitorEventsTable, MonitorsTable } from '../../infra/db/schema.ts';
import { filtered } from '../search/query/criteria.sql.ts';
import type { PlaceCriteria } from '../search/query/criteria.ts';

export type MonitorRow = Selectable<MonitorsTable>;
export type MonitorEventRow = Selectable<MonitorEventsTable>;

/** The fields a `changed` event names: what a place's record says of the business. */
export const watchedFields = [
  'name',
  'category',
  'phone_e164',
  'website',
  'email',
  'street',
  'housenumber',
  'postcode',
  'city_id',
  'lat',
  'lon',
  'opening_hours',
  'rating',
  // The trust pass's verdicts (issue 33): a website gone dead, an email domain without MX (`statusFields`).
  'email_status',
  'website_status',
] as const;

/**
 * Watched fields that are verdicts rather than the record's content: a change counts between two verdicts only,
 * not the first one (null → a status, when the trust pass first judges a place) nor a value gone (its email or
 * website changed, which the record's own fields say).
 */
export const statusFields: ReadonlySet<string> = new Set(['email_status', 'website_status']);

/** A place as a monitor compares it: its content hash and its watched fields. */
export interface PlaceState {
  id: number;
  hash: string;
  snapshot: string;
}

const stateColumns = ['places.id', 'places.content_hash', ...watchedFields.map((f) => `places.${f}` as const)] as const;

function toState(row: Record<string, unknown>): PlaceState {
  const fields: Record<string, unknown> = {};
  for (const f of watchedFields) fields[f] = row[f] ?? null;
  return { id: Number(row.id), hash: String(row.content_hash), snapshot: JSON.stringify(fields) };
}

/** The places a search holds now, among `ids` when given; at most `limit` (the caller asks one more than it allows). */
export async function matchingPlaces(db: Db, criteria: PlaceCriteria, options: { ids?: number[]; limit?: number }): Promise<PlaceState[]> {
  let query = filtered(db, criteria).select(stateColumns);
  if (options.ids) query = query.where('places.id', 'in', options.ids);
  if (options.limit !== undefined) query = query.orderBy('places.id').limit(options.limit);
  return (await query.execute()).map((r) => toState(r as Record<string, unknown>));
}

/** What the prefilter of an evaluation knows of a changed place. */
export interface ChangedPlace {
  id: number;
  category: string | null;
  city_id: number | null;
  country_code: string | null;
}

export async function changedPlaces(db: Db, ids: number[]): Promise<ChangedPlace[]> {
  const out: ChangedPlace[] = [];
  for (let i = 0; i < ids.length; i += 5000) {
    const rows = await db.kysely
      .selectFrom('places')
      .select(['id', 'category', 'city_id', 'country_code'])
      .where('id', 'in', ids.slice(i, i + 5000))
      .execute();
    for (const r of rows) out.push({ ...r, id: Number(r.id) });
  }
  return out;
}

/** Which monitors hold which of these places: place id → monitor ids. */
export async function membersAmong(db: Db, ids: number[]): Promise<Map<number, number[]>> {
  const out = new Map<number, number[]>();
  for (let i = 0; i < ids.length; i += 5000) {
    const rows = await db.kysely
      .selectFrom('monitor_places')
      .select(['monitor_id', 'place_id'])
      .where('place_id', 'in', ids.slice(i, i + 5000))
      .execute();
    for (const r of rows) {
      const list = out.get(Number(r.place_id));
      if (list) list.push(Number(r.monitor_id));
      else out.set(Number(r.place_id), [Number(r.monitor_id)]);
    }
  }
  return out;
}

export async function monitorMembers(db: Db, monitorId: number, ids?: number[]): Promise<PlaceState[]> {
  let query = db.kysely.selectFrom('monitor_places').select(['place_id', 'content_hash', 'snapshot']).where('monitor_id', '=', monitorId);
  if (ids) query = query.where('place_id', 'in', ids);
  return (await query.execute()).map((r) => ({ id: Number(r.place_id), hash: r.content_hash, snapshot: r.snapshot }));
}

export async function insertMonitor(db: Db, row: Omit<MonitorRow, 'id' | 'place_count'>, members: PlaceState[]): Promise<MonitorRow> {
  return db.kysely.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto('monitors')
      .values({ ...row, place_count: members.length })
      .returningAll()
      .executeTakeFirstOrThrow();
    await addMembers(trx, inserted.id, members);
    return inserted;
  });
}

async function addMembers(trx: Transaction<Database>, monitorId: number, members: PlaceState[]): Promise<void> {
  for (let i = 0; i < members.length; i += 500)
    await trx
      .insertInto('monitor_places')
      .values(members.slice(i, i + 500).map((m) => ({ monitor_id: monitorId, place_id: m.id, content_hash: m.hash, snapshot: m.snapshot })))
      .execute();
}

export async function countAccountMonitors(db: Db, accountId: number): Promise<number> {
  const row = await db.kysely
    .selectFrom('monitors')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function listAccountMonitors(db: Db, accountId: number, after: number | null, limit: number): Promise<MonitorRow[]> {
  let query = db.kysely.selectFrom('monitors').selectAll().where('account_id', '=', accountId);
  if (after !== null) query = query.where('id', '<', after);
  return query.orderBy('id', 'desc').limit(limit).execute();
}

export async function findAccountMonitor(db: Db, accountId: number, publicId: string): Promise<MonitorRow | undefined> {
  return db.kysely
    .selectFrom('monitors')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('public_id', '=', publicId)
    .executeTakeFirst();
}

export async function setMonitorStatus(db: Db, id: number, status: MonitorRow['status'], at: string): Promise<void> {
  await db.kysely.updateTable('monitors').set({ status, updated_at: at }).where('id', '=', id).execute();
}

export async function deleteMonitor(db: Db, id: number): Promise<void> {
  await db.kysely.transaction().execute(async (trx) => {
    await trx.deleteFrom('monitor_events').where('monitor_id', '=', id).execute();
    await trx.deleteFrom('monitor_places').where('monitor_id', '=', id).execute();
    await trx.deleteFrom('monitors').where('id', '=', id).execute();
  });
}

/** Monitors not at the places version `version` (behind it, or ahead of it in a copied database), oldest version first. */
export async function monitorsNotAt(db: Db, version: number): Promise<MonitorRow[]> {
  return db.kysely.selectFrom('monitors').selectAll().where('version', '!=', version).orderBy('version').orderBy('id').execute();
}

/** The events of a monitor after `after` (its keyset), oldest first. */
export async function monitorEvents(db: Db, monitorId: number, after: number, limit: number): Promise<MonitorEventRow[]> {
  return db.kysely
    .selectFrom('monitor_events')
    .selectAll()
    .where('monitor_id', '=', monitorId)
    .where('id', '>', after)
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** The latest events of these monitors, newest first, at most `perMonitor` each (the dashboard). */
export async function latestEvents(db: Db, monitorIds: number[], perMonitor: number): Promise<MonitorEventRow[]> {
  const out: MonitorEventRow[] = [];
  for (const id of monitorIds)
    out.push(
      ...(await db.kysely
        .selectFrom('monitor_events')
        .selectAll()
        .where('monitor_id', '=', id)
        .orderBy('id', 'desc')
        .limit(perMonitor)
        .execute()),
    );
  return out;
}

/** What one evaluation of one monitor found, written with its new version in one transaction. */
export interface Evaluation {
  monitorId: number;
  from: number;
  to: number;
  added: PlaceState[];
  left: number[];
  changed: Array<PlaceState & { fields: string[] }>;
  /** false: the monitor is paused; its members follow the search, its events are not recorded. */
  record: boolean;
  events: ReadonlySet<string>;
}

/**
 * Writes evaluations in one transaction; an evaluation whose monitor is no longer at `from` (another process
 * evaluated it, or it was deleted) is skipped whole. Returns, per monitor written, the ids of the events stored.
 */
export async function saveEvaluations(
  db: Db,
  evaluations: Evaluation[],
  at: string,
  afterEvents?: (trx: Transaction<Database>, monitorId: number, eventIds: number[]) => Promise<void>,
): Promise<Map<number, number[]>> {
  return db.kysely.transaction().execute(async (trx) => {
    const stored = new Map<number, number[]>();
    for (const e of evaluations) {
      const moved = await trx
        .updateTable('monitors')
        .set((eb) => ({
          version: e.to,
          place_count: eb('place_count', '+', e.added.length - e.left.length),
        }))
        .where('id', '=', e.monitorId)
        .where('version', '=', e.from)
        .executeTakeFirst();
      if (Number(moved.numUpdatedRows) === 0) continue;
      for (let i = 0; i < e.left.length; i += 5000)
        await trx
          .deleteFrom('monitor_places')
          .where('monitor_id', '=', e.monitorId)
          .where('place_id', 'in', e.left.slice(i, i + 5000))
          .execute();
      await addMembers(trx, e.monitorId, e.added);
      for (const c of e.changed)
        await trx
          .updateTable('monitor_places')
          .set({ content_hash: c.hash, snapshot: c.snapshot })
          .where('monitor_id', '=', e.monitorId)
          .where('place_id', '=', c.id)
          .execute();
      if (!e.record) continue;
      const rows = [
        ...(e.events.has('added') ? e.added.map((p) => ({ kind: 'added' as const, place_id: p.id, changed_fields: '[]' })) : []),
        ...(e.events.has('closed') ? e.left.map((id) => ({ kind: 'closed' as const, place_id: id, changed_fields: '[]' })) : []),
        ...(e.events.has('changed')
          ? e.changed.map((p) => ({ kind: 'changed' as const, place_id: p.id, changed_fields: JSON.stringify(p.fields) }))
          : []),
      ].map((r) => ({ ...r, monitor_id: e.monitorId, version: e.to, created_at: at }));
      const ids: number[] = [];
      for (let i = 0; i < rows.length; i += 500) {
        const inserted = await trx
          .insertInto('monitor_events')
          .values(rows.slice(i, i + 500))
          .returning('id')
          .execute();
        for (const r of inserted) ids.push(Number(r.id));
      }
      if (ids.length > 0) {
        stored.set(e.monitorId, ids);
        await afterEvents?.(trx, e.monitorId, ids);
      }
    }
    return stored;
  });
}
