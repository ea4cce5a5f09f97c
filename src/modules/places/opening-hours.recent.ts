import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { type HoursState, type HoursWindow, type OpenAt, type OpeningHoursTables, readHoursState } from './opening-hours.reads.ts';
import { makeSchedules, placeHoursSources, windowOf } from './opening-hours.repository.ts';
import { placeChangesSince, placesVersion } from './place-changes.repository.ts';

/**
 * Whether the opening-hours tables can answer an open filter truly, and how (docs/opening-hours.md, "When the
 * tables are not ready"). The pass's rows are true of the places as they were at its places version; the places
 * changed since (the change log, `place_changes`) are evaluated here directly, with the pass's own code and
 * window, when they are few. When no pass has run, when the moment lies outside the window the last pass
 * computed, or when more places changed since than `RECENT_PLACES_MAX`, the tables cannot answer: the caller
 * waits for a pass or says so (503 `not_ready`), never reads "nothing open".
 */

/** Places changed since the last pass that a read evaluates directly at most; beyond, it needs a new pass. */
export const RECENT_PLACES_MAX = 1000;

/** The places changed since a pass, evaluated as the pass would have (with its window). */
export interface RecentHours {
  /** The pass they are relative to (`HoursState.key`), and the places version they reach. */
  key: string;
  through: number;
  /** Every place changed since the pass, ascending: the pass's rows of them are not to be trusted. */
  changed: number[];
  /** Those with hours, as `place_hours` rows (schedule ids of their own, not the pass's). */
  hours: OpeningHoursTables['place_hours'][];
  intervals: OpeningHoursTables['place_open_intervals'][];
}

export type NotReadyReason = 'no_pass' | 'outside_window' | 'behind';

export type HoursReadiness =
  | {
      ready: true;
      state: HoursState;
      recent: RecentHours;
      /** The filter to read with: the moment, with the changed places decided (`OpenAt.recent`). */
      open: OpenAt;
    }
  | { ready: false; reason: NotReadyReason; detail: string };

/** Wall-clock times are covered for every zone (UTC−12 to UTC+14) this far inside the window's instants. */
const localMarginMs = 14 * 3_600_000;

/** Whether a window's intervals hold the moment, whatever the place's zone. */
export function windowCovers(window: HoursWindow, open: OpenAt): boolean {
  const ms = open.at * 1000;
  const margin = open.clock === 'local' ? localMarginMs : 0;
  return ms >= window.fromMs + margin && ms < window.toMs - margin;
}

const recentByDb = new WeakMap<Db, { id: string; recent: Promise<RecentHours | null> }>();

/**
 * The places changed since the pass `state` describes, evaluated directly; null when they are more than `max`
 * or the change log no longer reaches back to the pass. Shared by the reads of one pass and places version.
 */
export async function recentHours(db: Db, state: HoursState, max = RECENT_PLACES_MAX): Promise<RecentHours | null> {
  const version = await placesVersion(db);
  const id = `${state.key}@${version}/${max}`;
  const known = recentByDb.get(db);
  if (known?.id === id) return known.recent;
  const recent = readRecent(db, state, max);
  recentByDb.set(db, { id, recent });
  recent.catch(() => {
    if (recentByDb.get(db)?.recent === recent) recentByDb.delete(db);
  });
  return recent;
}

async function readRecent(db: Db, state: HoursState, max: number): Promise<RecentHours | null> {
  const changes = await placeChangesSince(db, state.placesVersion, max);
  if (!changes.complete || changes.more) return null;
  const maker = await makeSchedules(state.window, await placeHoursSources(db, changes.placeIds));
  return { key: state.key, through: changes.through, changed: changes.placeIds, hours: maker.hoursRows, intervals: maker.intervalRows };
}

/** The changed places open at the moment (or, for `open.unparsed`, whose hours could not be parsed), ascending. */
export function recentMatches(recent: RecentHours, open: OpenAt): number[] {
  if (open.unparsed) return recent.hours.filter((h) => h.state === 'unparsed').map((h) => h.place_id);
  const kind = open.clock === 'utc' ? 'u' : 'l';
  const day = Math.floor(open.at / 86_400);
  const schedules = new Set<number>();
  for (const i of recent.intervals)
    if (i.kind === kind && i.day === day && i.start_s <= open.at && i.end_s > open.at) schedules.add(i.schedule_id);
  return recent.hours.filter((h) => h.state === 'ok' && schedules.has(h.schedule_id)).map((h) => h.place_id);
}

/** The filter with the changed places decided: the SQL keeps the pass's answer for the others (`openCondition`). */
export function withRecent(open: OpenAt, recent: RecentHours): OpenAt {
  return recent.changed.length === 0 ? open : { ...open, recent: { changed: recent.changed, matching: recentMatches(recent, open) } };
}

/**
 * Whether the tables answer the moment truly now. `state`: the pass to answer from (the last one by default);
 * `nowMs` and `windowDays`: what a pass run now would compute, to tell a moment no pass can reach (a saved
 * search older than the window's week back: it answers from the tables, docs/opening-hours.md "Limits") from one
 * the next pass will.
 */
export async function hoursReadiness(
  db: Db,
  open: OpenAt,
  options: { nowMs: number; windowDays: number; state?: HoursState | null; max?: number },
): Promise<HoursReadiness> {
  const state = options.state === undefined ? await readHoursState(db) : options.state;
  if (state === null) return { ready: false, reason: 'no_pass', detail: 'no opening-hours pass has finished on this database yet' };
  if (!windowCovers(state.window, open) && windowCovers(windowOf(options.nowMs, options.windowDays), open))
    return {
      ready: false,
      reason: 'outside_window',
      detail: `the last opening-hours pass (${state.computedAt}) computed ${isoDay(state.window.fromMs)} to ${isoDay(state.window.toMs)}, which does not reach the moment asked for`,
    };
  const recent = await recentHours(db, state, options.max);
  if (!recent)
    return {
      ready: false,
      reason: 'behind',
      detail: `more than ${options.max ?? RECENT_PLACES_MAX} places changed since the last opening-hours pass (${state.computedAt})`,
    };
  return { ready: true, state, recent, open: withRecent(open, recent) };
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** 503 `not_ready` with `Retry-After`: what the request needs is being prepared. */
export function hoursNotReady(readiness: { reason: NotReadyReason; detail: string }, retryAfterS: number): AppError {
  const seconds = Math.max(1, Math.ceil(retryAfterS));
  return new AppError(
    'not_ready',
    `The opening hours are being computed (${readiness.detail}): an open_now or open_at filter cannot be answered truly before that pass ends. Retry in ${seconds} s.`,
    { preparing: 'opening_hours', reason: readiness.reason, retry_after_s: seconds },
    { 'retry-after': String(seconds) },
  );
}
