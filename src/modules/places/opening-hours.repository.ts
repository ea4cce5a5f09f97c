import { sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';
import {
  type HoursDb,
  type HoursWindow,
  type OpeningHoursTables,
  readHoursState,
  tables,
  windowDaysBefore,
} from './opening-hours.reads.ts';
import { inFixedOffsetZone, namesHolidays, scheduleIntervals, timeZoneAt } from './opening-hours.ts';
import { placesVersion } from './place-changes.repository.ts';

const dayMs = 86_400_000;

/** The window a pass on `now` computes: whole UTC days, a week back and `days` ahead. */
export function windowOf(nowMs: number, days: number): HoursWindow {
  const today = Math.floor(nowMs / dayMs) * dayMs;
  return { fromMs: today - windowDaysBefore * dayMs, toMs: today + (days + 1) * dayMs };
}

/** The days ahead a pass computed (`windowOf`'s `days`). */
export function windowDaysOfPass(window: HoursWindow): number {
  return Math.round((window.toMs - window.fromMs) / dayMs) - windowDaysBefore - 1;
}

export interface HoursPassResult {
  places: number;
  schedules: number;
  unparsed: number;
  intervals: number;
  placesVersion: number;
  window: HoursWindow;
}

const running = new WeakMap<Db, Promise<HoursPassResult>>();

/**
 * Makes the tables current for `now`: recomputed when the places version moved since the last pass or the
 * window no longer reaches `days` ahead of today (less one day, so a pass runs about once a day). One pass
 * at a time per database handle; callers arriving meanwhile wait for it. Answers whether a pass ran.
 */
export async function ensureOpeningHours(db: Db, nowMs: number, days: number): Promise<boolean> {
  if (await hoursAreCurrent(db, nowMs, days)) return false;
  await rebuildOpeningHours(db, nowMs, days);
  return true;
}

/** Whether the tables answer for `now`: computed for the current places version, over a window reaching far enough. */
export async function hoursAreCurrent(db: Db, nowMs: number, days: number): Promise<boolean> {
  const [state, version] = await Promise.all([readHoursState(db), placesVersion(db)]);
  const wanted = windowOf(nowMs, days);
  return (
    state !== null &&
    state.placesVersion === version &&
    state.window.toMs >= wanted.toMs - dayMs &&
    state.window.fromMs <= wanted.fromMs + dayMs
  );
}

/** Recomputes the three tables from `places.opening_hours` (single-flight per handle). */
export function rebuildOpeningHours(db: Db, nowMs: number, days: number): Promise<HoursPassResult> {
  const current = running.get(db);
  if (current) return current;
  const pass = rebuild(db, nowMs, days).finally(() => running.delete(db));
  running.set(db, pass);
  return pass;
}

const batch = 2000;
/** How long the pass holds the event loop at a time. */
const sliceMs = 20;

async function rebuild(db: Db, nowMs: number, days: number): Promise<HoursPassResult> {
  // Read first: a write that lands during the pass moves the version past it, and the next search recomputes.
  const version = await placesVersion(db);
  const window = windowOf(nowMs, days);
  // In id order, so that the same catalog gets the same schedule ids.
  const places = await db.kysely
    .selectFrom('places')
    .select(['id', 'opening_hours', 'lat', 'lon', 'country_code', 'region'])
    .where('opening_hours', 'is not', null)
    .where('opening_hours', '!=', '')
    .orderBy('id')
    .execute();
  const maker = await makeSchedules(window, places);
  const { hoursRows, intervalRows } = maker;
  await tables(db)
    .transaction()
    .execute(async (trx) => {
      await passLock(db)(trx);
      await trx.deleteFrom('place_hours').execute();
      await trx.deleteFrom('place_open_intervals').execute();
      for (let i = 0; i < hoursRows.length; i += batch)
        await trx
          .insertInto('place_hours')
          .values(hoursRows.slice(i, i + batch))
          .execute();
      for (let i = 0; i < intervalRows.length; i += batch)
        await trx
          .insertInto('place_open_intervals')
          .values(intervalRows.slice(i, i + batch))
          .execute();
      const state = {
        places_version: version,
        window_from: new Date(window.fromMs).toISOString(),
        window_to: new Date(window.toMs).toISOString(),
        computed_at: new Date(nowMs).toISOString(),
      };
      await trx.deleteFrom('place_hours_state').execute();
      await trx
        .insertInto('place_hours_state')
        .values({ id: 1, ...state })
        .execute();
    });
  await refreshStatistics(db);
  return {
    places: hoursRows.length,
    schedules: maker.schedules,
    unparsed: maker.unparsed,
    intervals: intervalRows.length,
    placesVersion: version,
    window,
  };
}

/** What the pass reads of a place with hours. */
export interface PlaceHoursSource {
  id: number | string;
  opening_hours: string | null;
  lat: number | null;
  lon: number | null;
  country_code: string | null;
  region: string | null;
}

/**
 * The rows of `place_hours` and `place_open_intervals` for places taken one by one over a window: places
 * sharing the value, the zone and (for values naming holidays) the country and region share a schedule,
 * parsed once. The pass takes every place with hours; `opening-hours.recent.ts` the few changed since it.
 * Call `take` inside `inFixedOffsetZone`.
 */
export class ScheduleMaker {
  readonly hoursRows: OpeningHoursTables['place_hours'][] = [];
  readonly intervalRows: OpeningHoursTables['place_open_intervals'][] = [];
  unparsed = 0;
  schedules = 0;
  private readonly known = new Map<string, { id: number; note: string | null } | { reason: string }>();

  constructor(private readonly window: HoursWindow) {}

  take(p: PlaceHoursSource): void {
    const value = p.opening_hours!.trim();
    const tz = timeZoneAt(p.lat, p.lon);
    const holidays = namesHolidays(value);
    const key = `${tz}\u0000${holidays ? `${p.country_code}\u0000${p.region}` : ''}\u0000${value}`;
    let known = this.known.get(key);
    if (!known) {
      if (tz === null) known = { reason: 'no coordinates: the time zone is unknown' };
      else {
        const at = { lat: p.lat!, lon: p.lon!, countryCode: p.country_code, region: p.region };
        const schedule = scheduleIntervals(value, at, tz, this.window.fromMs, this.window.toMs);
        if (!schedule.ok) known = { reason: schedule.reason };
        else {
          const id = ++this.schedules;
          known = { id, note: schedule.note };
          for (const interval of schedule.intervals) {
            pushSplit(this.intervalRows, 'u', id, interval.startUtc, interval.endUtc);
            pushSplit(this.intervalRows, 'l', id, interval.startLocal, interval.endLocal);
          }
        }
      }
      this.known.set(key, known);
    }
    if ('id' in known) this.hoursRows.push({ place_id: Number(p.id), schedule_id: known.id, tz, state: 'ok', reason: known.note });
    else {
      this.unparsed++;
      this.hoursRows.push({ place_id: Number(p.id), schedule_id: 0, tz, state: 'unparsed', reason: known.reason });
    }
  }
}

/**
 * The schedules of places over a window. The library's work runs in slices of the event loop's time: the
 * pass runs beside a server's requests (in the background after an import), which must not wait for the
 * whole of it.
 */
export async function makeSchedules(window: HoursWindow, places: readonly PlaceHoursSource[]): Promise<ScheduleMaker> {
  const maker = new ScheduleMaker(window);
  for (let next = 0; next < places.length; ) {
    if (next > 0) await new Promise((resolve) => setImmediate(resolve));
    const until = performance.now() + sliceMs;
    next = inFixedOffsetZone(() => {
      let i = next;
      do maker.take(places[i++]!);
      while (i < places.length && performance.now() < until);
      return i;
    });
  }
  return maker;
}

/** The places among `ids` that have hours, as the pass reads them. */
export async function placeHoursSources(db: Db, ids: readonly number[]): Promise<PlaceHoursSource[]> {
  const out: PlaceHoursSource[] = [];
  for (let i = 0; i < ids.length; i += batch)
    out.push(
      ...(await db.kysely
        .selectFrom('places')
        .select(['id', 'opening_hours', 'lat', 'lon', 'country_code', 'region'])
        .where('id', 'in', ids.slice(i, i + batch))
        .where('opening_hours', 'is not', null)
        .where('opening_hours', '!=', '')
        .execute()),
    );
  return out;
}

/**
 * One pass writes the tables at a time across processes (API nodes sharing a PostgreSQL database): a second
 * pass waits for the first to commit, then replaces its rows, instead of inserting beside them. SQLite has
 * one writer anyway.
 */
const passLock = byDialect<(trx: HoursDb) => Promise<void>>({
  sqlite: () => async () => {},
  postgres: () => async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtext('leadatlas.opening-hours'))`.execute(trx);
  },
});

/**
 * PostgreSQL plans the open filter from the tables' statistics: without them, freshly rewritten tables look
 * empty and it hashes the whole of `place_hours` for every search instead of probing it per place. SQLite's
 * plan does not depend on them.
 */
const refreshStatistics = byDialect<(db: Db) => Promise<void>>({
  sqlite: () => async () => {},
  postgres: () => async (db) => {
    // VACUUM too: the visibility map lets the set of open schedules come from the index alone.
    await sql`VACUUM ANALYZE place_hours, place_open_intervals`.execute(db.kysely);
  },
});

/** An interval cut at the day boundaries of its own clock, so a search reads one day's rows. */
function pushSplit(out: OpeningHoursTables['place_open_intervals'][], kind: 'u' | 'l', scheduleId: number, start: number, end: number) {
  for (let s = start; s < end; ) {
    const day = Math.floor(s / 86_400);
    const e = Math.min(end, (day + 1) * 86_400);
    out.push({ kind, day, start_s: s, end_s: e, schedule_id: scheduleId });
    s = e;
  }
}

/** Every unparsed value with its reason and how many places have it (for `leadatlas hours`). */
export async function unparsedHours(db: Db, limit: number): Promise<Array<{ value: string; reason: string; places: number }>> {
  const rows = await db.kysely
    .withTables<OpeningHoursTables>()
    .selectFrom('place_hours')
    .innerJoin('places', 'places.id', 'place_hours.place_id')
    .select(['places.opening_hours as value', 'place_hours.reason as reason', (eb) => eb.fn.countAll<number>().as('places')])
    .where('place_hours.state', '=', 'unparsed')
    .groupBy(['places.opening_hours', 'place_hours.reason'])
    .orderBy('places', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ value: String(r.value), reason: String(r.reason), places: Number(r.places) }));
}
