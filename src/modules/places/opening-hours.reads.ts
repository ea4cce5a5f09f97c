import { type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { Database } from '../../infra/db/schema.ts';

/**
 * The read model of the opening-hours tables (migration 0031) for the other modules: what the open filter
 * asks of them as SQL (`openCondition`, `openSchedulesAt`), the state of the last pass, and each place's
 * schedule for the search engine's copy. The pass that writes them is opening-hours.repository.ts's.
 */

/** Tables of migration 0031 (see its comment). */
export type OpeningHoursTables = {
  place_hours: { place_id: number; schedule_id: number; tz: string | null; state: 'ok' | 'unparsed'; reason: string | null };
  place_open_intervals: { kind: 'u' | 'l'; day: number; start_s: number; end_s: number; schedule_id: number };
  place_hours_state: { id: number; places_version: number; window_from: string; window_to: string; computed_at: string };
};

export type HoursDb = Kysely<Database & OpeningHoursTables>;
export const tables = (db: Db): HoursDb => db.kysely.withTables<OpeningHoursTables>();

/** Days before the pass's own day that the intervals still cover (saved searches made then still export). */
export const windowDaysBefore = 7;
/** Default days ahead (`OPENING_HOURS_WINDOW_DAYS`). */
export const defaultWindowDays = 42;

export interface HoursWindow {
  /** First and last instant covered (ms). */
  fromMs: number;
  toMs: number;
}

export interface HoursState {
  placesVersion: number;
  window: HoursWindow;
  /** When the pass ran (its clock, ISO). */
  computedAt: string;
  /**
   * Which pass wrote the tables: schedule ids are given anew by each pass, so whatever holds them (the search
   * engine's copy) is valid for one key only.
   */
  key: string;
}

export async function readHoursState(db: Db): Promise<HoursState | null> {
  const row = await tables(db).selectFrom('place_hours_state').selectAll().where('id', '=', 1).executeTakeFirst();
  return row
    ? {
        placesVersion: Number(row.places_version),
        window: { fromMs: Date.parse(row.window_from), toMs: Date.parse(row.window_to) },
        computedAt: row.computed_at,
        key: `${row.places_version}/${row.window_from}/${row.window_to}/${row.computed_at}`,
      }
    : null;
}

/** Each place's schedule as the last pass left it: `schedule` 0 where its hours could not be parsed. */
export interface PlaceSchedules {
  /** The pass (`HoursState.key`), null before the first. */
  key: string | null;
  computedAt: string | null;
  state: HoursState | null;
  placeIds: Int32Array;
  schedules: Int32Array;
}

/**
 * Every row of `place_hours`, read in place id batches, with the key of the pass that wrote them: read again
 * after the rows, and the whole read retried when a pass committed meanwhile.
 */
export async function placeSchedules(db: Db, batchSize = 50_000): Promise<PlaceSchedules> {
  for (let attempt = 0; ; attempt++) {
    const state = await readHoursState(db);
    const ids: number[] = [];
    const schedules: number[] = [];
    for (let after = -1; ; ) {
      const rows = await tables(db)
        .selectFrom('place_hours')
        .select(['place_id', 'schedule_id'])
        .where('place_id', '>', after)
        .orderBy('place_id')
        .limit(batchSize)
        .execute();
      for (const r of rows) {
        ids.push(Number(r.place_id));
        schedules.push(Number(r.schedule_id));
      }
      if (rows.length < batchSize) break;
      after = ids.at(-1)!;
    }
    const again = await readHoursState(db);
    if ((again?.key ?? null) === (state?.key ?? null) || attempt >= 3)
      return {
        key: again?.key ?? null,
        computedAt: again?.computedAt ?? null,
        state: again,
        placeIds: Int32Array.from(ids),
        schedules: Int32Array.from(schedules),
      };
  }
}

/** The schedules open at a moment (`openSchedulesAt`, the open filter's own set), and the pass they belong to. */
export async function schedulesOpenAt(db: Db, open: OpenAt): Promise<{ key: string | null; schedules: number[] }> {
  const { rows } = await sql<{ schedule_id: number }>`SELECT DISTINCT s.schedule_id FROM ${openSchedulesAt(open)} AS s`.execute(db.kysely);
  // Read after the set: a pass that committed before or during it shows here, and the caller does not mix passes.
  const state = await readHoursState(db);
  return { key: state?.key ?? null, schedules: rows.map((r) => Number(r.schedule_id)) };
}

/**
 * Open at a moment (`open_now`, `open_at`): `clock` 'utc', `at` an instant; 'local', `at` a wall-clock time of
 * each place (both in seconds since 1970 on that clock, docs/opening-hours.md). `unparsed`: the places whose
 * hours could not be parsed instead. The opening-hours tables are this module's; search asks through these.
 */
export interface OpenAt {
  clock: 'utc' | 'local';
  at: number;
  unparsed?: true;
  /**
   * The places changed since the opening-hours pass, decided without its tables (`opening-hours.recent.ts`):
   * `changed` all of them, `matching` those open at the moment (or unparsed). Added as a read runs, never saved.
   */
  recent?: { changed: number[]; matching: number[] };
}

/**
 * The places open at the moment (migration 0031): a probe of `place_hours`' primary key per place (a place has
 * one schedule), the schedule checked against the set of schedules open then, which the database reads once
 * per statement from one day of `place_open_intervals` (a few thousand schedules at most, whatever the
 * catalog's size).
 */
export function openCondition(open: OpenAt): RawBuilder<SqlBool> {
  const byPass = open.unparsed
    ? sql<SqlBool>`EXISTS (SELECT 1 FROM place_hours AS oh WHERE oh.place_id = places.id AND oh.schedule_id = 0 AND oh.state = 'unparsed')`
    : // The place's schedule (one probe of place_hours' primary key) looked up in the set: both databases build the
      // set once per statement. As EXISTS with the set inside, SQLite probed one (place, schedule) pair per open
      // schedule and PostgreSQL drove the query from every open place of the catalog.
      sql<SqlBool>`(SELECT oh.schedule_id FROM place_hours AS oh WHERE oh.place_id = places.id) IN ${openSchedulesAt(open)}`;
  const recent = open.recent;
  if (!recent || recent.changed.length === 0) return byPass;
  // The places changed since the pass: its rows of them are stale or missing, so they are decided by `matching`.
  const ids = (list: number[]) => sql.join(list.map((id) => sql.lit(id)));
  const kept = sql<SqlBool>`(places.id NOT IN (${ids(recent.changed)}) AND ${byPass})`;
  return recent.matching.length === 0 ? kept : sql<SqlBool>`(${kept} OR places.id IN (${ids(recent.matching)}))`;
}

/**
 * The schedules open at the moment, as a subquery: one day of one kind of `place_open_intervals`. The search
 * engine reads the same set (`schedulesOpenAt`) to answer the open filter from its index.
 */
export function openSchedulesAt(open: OpenAt): RawBuilder<{ schedule_id: number }> {
  const day = Math.floor(open.at / 86_400);
  return sql`(SELECT oi.schedule_id FROM place_open_intervals AS oi WHERE oi.kind = ${open.clock === 'utc' ? 'u' : 'l'} AND oi.day = ${day} AND oi.start_s <= ${open.at} AND oi.end_s > ${open.at})`;
}
