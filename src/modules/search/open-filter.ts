import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { type OpenAt, readHoursState, windowDaysBefore } from '../places/opening-hours.reads.ts';
import { placesVersion } from '../places/place-changes.repository.ts';
import { openAnsweredTruly } from '../places/place-maintenance.ts';
import type { PlaceCriteria } from './query/criteria.ts';

/**
 * `open_now` and `open_at` (docs/opening-hours.md): what they ask for as criteria (`PlaceCriteria.open`), checked
 * before anything is read, and the opening-hours pass they need.
 */

export interface OpenParams {
  open_now?: boolean;
  open_at?: string;
}

/** How an open filter was understood, returned in `resolved.open` and stored with the search. */
export interface OpenResolution {
  /** `now`: at the instant of the search (UTC, to the minute); `at`: at that wall-clock time of each place. */
  mode: 'now' | 'at';
  at: string;
  /** Places matching the rest of the search whose hours could not be parsed: neither open nor closed, left out. */
  unparsed: number;
  /** When the opening-hours pass the answer comes from ran (ISO), null before the first (see the schema). */
  computed_at?: string | null;
}

const daySeconds = 86_400;

function bad(field: string, message: string, allowed: unknown): AppError {
  return new AppError('validation_failed', `${field}: ${message}`, { errors: [{ field, message, allowed }] });
}

/**
 * The open filter the parameters ask for, null when none. `nowMs`: the request's clock; `location`: where
 * the parameters came from (`querystring` or `body`), for the problem's field names. `open_at` must be a
 * real date and time within the window the pass computes (`OPENING_HOURS_WINDOW_DAYS` ahead, a week back).
 */
export function openFilterOf(params: OpenParams, nowMs: number, location: 'querystring' | 'body', windowDays: number): OpenAt | null {
  const today = Math.floor(nowMs / 1000 / daySeconds) * daySeconds;
  const first = today - (windowDaysBefore - 1) * daySeconds;
  const last = today + windowDays * daySeconds;
  if (params.open_at !== undefined) {
    if (params.open_now === true) throw bad(`${location}.open_at`, 'cannot be combined with open_now=true', ['open_now', 'open_at']);
    const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/.exec(params.open_at);
    const range = { format: 'YYYY-MM-DDTHH:MM', from: isoMinute(first), to: isoMinute(last - 60) };
    if (!m) throw bad(`${location}.open_at`, 'must be a local date and time YYYY-MM-DDTHH:MM', range);
    const [y, mo, d, h, mi] = m.slice(1).map(Number) as [number, number, number, number, number];
    const ms = Date.UTC(y, mo - 1, d, h, mi);
    const check = new Date(ms);
    if (h > 23 || mi > 59 || check.getUTCFullYear() !== y || check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== d)
      throw bad(`${location}.open_at`, 'is not a date and time of the calendar', range);
    const at = ms / 1000;
    if (at < first || at >= last) throw bad(`${location}.open_at`, `must lie between ${range.from} and ${range.to}`, range);
    return { clock: 'local', at };
  }
  if (params.open_now !== true) return null;
  return { clock: 'utc', at: Math.floor(nowMs / 60_000) * 60 };
}

function isoMinute(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 16);
}

/** The `at` of `resolved.open`: the instant (`…Z`) or the wall-clock time asked for. */
export function describeOpen(open: OpenAt): Pick<OpenResolution, 'mode' | 'at'> {
  return open.clock === 'utc' ? { mode: 'now', at: `${isoMinute(open.at)}Z` } : { mode: 'at', at: isoMinute(open.at) };
}

/** The same criteria selecting the places whose hours could not be parsed (their count goes in `resolved.open`). */
export function unparsedCriteria(criteria: PlaceCriteria & { open: OpenAt }): PlaceCriteria {
  return { ...criteria, open: { ...criteria.open, unparsed: true } };
}

/**
 * Criteria a bulk read (an export, the dashboard's map, enrichment of a saved search) can give the SQL with
 * their open filter answered truly: the places changed since the opening-hours pass decided directly. When the
 * tables cannot answer the moment, the pass runs first and the read waits for it (`openAnsweredTruly`): these
 * reads run in the background, in a process with no server's engine (`leadatlas enrich --search`), or after a
 * search that already waited. `windowDays`: the window of that pass; absent, the last pass's.
 */
export async function trueOpenCriteria(db: Db, criteria: PlaceCriteria, windowDays?: number, nowMs = Date.now()): Promise<PlaceCriteria> {
  return criteria.open ? { ...criteria, open: await openAnsweredTruly(db, criteria.open, windowDays, nowMs) } : criteria;
}

/**
 * The version the read pool's cache keeps an answer under (`ReadCacheOptions.version`): the places version,
 * and for a read with an open filter the opening-hours pass as well, since a pass replaces its tables without
 * moving the places version (which would drop every other cached answer).
 */
export function readCacheVersion(db: Db): (task: string, args: readonly unknown[]) => Promise<number | string> {
  return async (_task, args) => {
    const version = await placesVersion(db);
    const criteria = args[0];
    if (criteria === null || typeof criteria !== 'object' || !(criteria as Partial<PlaceCriteria>).open) return version;
    return `${version}/${(await readHoursState(db))?.key ?? 'none'}`;
  };
}
