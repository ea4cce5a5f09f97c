import tzLookup from '@photostructure/tz-lookup';
import openingHoursLib from 'opening_hours';

/**
 * Opening hours (OSM `opening_hours` syntax) evaluated in each place's own time zone (docs/opening-hours.md).
 *
 * The library works on JavaScript dates in the process's local time. Rather than depend on the process's
 * zone, every date handed to it carries the place's wall-clock time in its local fields ("wall dates"),
 * and the answers are read back the same way; that is exact whenever the process's zone has one fixed
 * offset, so `inFixedOffsetZone` switches the process to UTC for the duration of a synchronous evaluation
 * when it has not (a zone with daylight saving would skip or repeat the wall times of its own changes).
 */

const OpeningHours = openingHoursLib as unknown as typeof import('opening_hours').opening_hours;

/** The IANA time zone at a point, null without coordinates (or outside the lookup's range). */
export function timeZoneAt(lat: number | null, lon: number | null): string | null {
  if (lat === null || lon === null || !Number.isFinite(lat) || !Number.isFinite(lon)) return null;
  try {
    return tzLookup(lat, lon);
  } catch {
    return null;
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(tz, f);
  }
  return f;
}

function formattedWallClock(instantMs: number, tz: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatterOf(tz).formatToParts(new Date(instantMs))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour! % 24, parts.minute!, parts.second!);
}

const quarterMs = 900_000;
/** Offsets from UTC per zone and quarter hour: every zone changes its offset on a quarter hour, and formatting is slow. */
const offsets = new Map<string, Map<number, number>>();

/** The wall-clock time in `tz` at an instant, as milliseconds of a UTC date with those fields. */
export function wallClockOf(instantMs: number, tz: string): number {
  let zone = offsets.get(tz);
  if (!zone) {
    zone = new Map();
    offsets.set(tz, zone);
  }
  const quarter = Math.floor(instantMs / quarterMs);
  let offset = zone.get(quarter);
  if (offset === undefined) {
    if (zone.size > 200_000) zone.clear();
    offset = formattedWallClock(quarter * quarterMs, tz) - quarter * quarterMs;
    zone.set(quarter, offset);
  }
  return instantMs + offset;
}

/**
 * The instant a wall-clock time in `tz` stands for. A time the zone repeats (falling back) is its first
 * occurrence, so hours starting then cover both; a time the zone skips (springing forward) is the instant
 * of the change, the first whose wall clock is past it: hours starting at 02:30 on a night that jumps from
 * 02:00 to 03:00 open at 03:00.
 */
export function instantOfWallClock(wallMs: number, tz: string): number {
  const offsetAt = (instant: number) => wallClockOf(instant, tz) - instant;
  const first = wallMs - offsetAt(wallMs - 86_400_000);
  if (wallClockOf(first, tz) === wallMs) return first;
  const second = wallMs - offsetAt(wallMs + 86_400_000);
  if (wallClockOf(second, tz) === wallMs) return second;
  // In the gap: the change lies between the two readings, on a quarter hour.
  const [low, high] = first < second ? [first, second] : [second, first];
  for (let q = Math.ceil(low / quarterMs) * quarterMs; q <= high; q += quarterMs) if (wallClockOf(q, tz) >= wallMs) return q;
  return high;
}

/** A wall date: a Date whose local fields are the given wall-clock time (see the module comment). */
function wallDate(wallMs: number): Date {
  const d = new Date(wallMs);
  return new Date(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds());
}

function wallMsOf(date: Date): number {
  return Date.UTC(date.getFullYear(), date.getMonth(), date.getDate(), date.getHours(), date.getMinutes(), date.getSeconds());
}

function processZoneIsFixed(): boolean {
  const year = new Date().getFullYear();
  return new Date(year, 0, 1).getTimezoneOffset() === new Date(year, 6, 1).getTimezoneOffset();
}

/** Runs `fn` (synchronous) with the process in a zone of one fixed offset: UTC when its own has daylight saving. */
export function inFixedOffsetZone<T>(fn: () => T): T {
  if (processZoneIsFixed()) return fn();
  const previous = process.env.TZ;
  process.env.TZ = 'UTC';
  try {
    return fn();
  } finally {
    if (previous === undefined) delete process.env.TZ;
    else process.env.TZ = previous;
  }
}

/**
 * Runs `fn` with the library's console messages held back: it writes its own errors to `console.error`
 * before throwing them (a value naming school holidays of a country whose regions it needs), and those
 * reach the caller as the reason anyway.
 */
function quietly<T>(fn: () => T): T {
  const error = console.error;
  const warn = console.warn;
  console.error = () => {};
  console.warn = () => {};
  try {
    return fn();
  } finally {
    console.error = error;
    console.warn = warn;
  }
}

function reasonOf(err: unknown): string {
  const text = Array.isArray(err) ? err.join('; ') : err instanceof Error ? err.message : String(err);
  return text
    .replace(
      /^An error occurred during evaluation of the value ".*"\. Please (file a bug report or )?submit a pull request: \S+?\.(?= |$)/s,
      '',
    )
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 300);
}

/** Where a place is, for the library's public and school holidays. */
export interface HoursLocation {
  lat: number;
  lon: number;
  countryCode: string | null;
  region: string | null;
}

export type ParsedHours = { ok: true; hours: InstanceType<typeof OpeningHours> } | { ok: false; reason: string };

/** Whether a value names public or school holidays (then its schedule depends on the country and region). */
export function namesHolidays(value: string): boolean {
  return /\b(PH|SH)\b/.test(value);
}

/**
 * Parses a value with the library, for a place's country and region (its holidays); `at` null: no holidays
 * known (a `PH` never falls). Never throws.
 */
export function parseOpeningHours(value: string, at: HoursLocation | null): ParsedHours {
  try {
    const hours = quietly(
      () =>
        new OpeningHours(
          value,
          at && { lat: at.lat, lon: at.lon, address: { country_code: (at.countryCode ?? '').toLowerCase(), state: at.region ?? '' } },
          { mode: 0, tag_key: 'opening_hours', map_value: false, warnings_severity: 4, locale: 'en' },
        ),
    );
    return { ok: true, hours };
  } catch (err) {
    return { ok: false, reason: reasonOf(err) };
  }
}

/** An open interval, in seconds: instants (UTC) and the place's wall clock. */
export interface OpenInterval {
  startUtc: number;
  endUtc: number;
  startLocal: number;
  endLocal: number;
}

/**
 * When parsed hours are open (not `unknown`) between two instants, in `tz`; `{reason}` when the library
 * cannot evaluate them there (school holidays of a country it knows only by region, and no region). Call
 * inside `inFixedOffsetZone`.
 */
export function openIntervals(
  hours: InstanceType<typeof OpeningHours>,
  tz: string,
  fromMs: number,
  toMs: number,
): OpenInterval[] | { reason: string } {
  const out: OpenInterval[] = [];
  const fromWall = wallClockOf(fromMs, tz);
  const toWall = wallClockOf(toMs, tz);
  let wall: Array<[number, number]>;
  try {
    wall = quietly(() => wallIntervals(hours, fromWall, toWall));
  } catch (err) {
    return { reason: reasonOf(err) };
  }
  for (const [startLocal, endLocal] of wall) {
    out.push({
      startUtc: Math.floor(instantOfWallClock(startLocal, tz) / 1000),
      endUtc: Math.floor(instantOfWallClock(endLocal, tz) / 1000),
      startLocal: startLocal / 1000,
      endLocal: endLocal / 1000,
    });
  }
  return out;
}

const weekMs = 7 * 86_400_000;

/**
 * The open (not unknown) intervals in wall-clock milliseconds. The library's evaluation costs about as much
 * per day as the whole rest of the pass, so hours that repeat every week (`isWeekStable`: no holidays,
 * dates or months) are evaluated for one week, which is then repeated across the window.
 */
function wallIntervals(hours: InstanceType<typeof OpeningHours>, fromWall: number, toWall: number): Array<[number, number]> {
  const read = (from: number, to: number): Array<[number, number]> =>
    hours
      .getOpenIntervals(wallDate(from), wallDate(to))
      .filter(([, , unknown]) => !unknown)
      .map(([a, b]): [number, number] => [wallMsOf(a), wallMsOf(b)])
      .filter(([a, b]) => b > a);
  if (toWall - fromWall <= weekMs || !hours.isWeekStable()) return read(fromWall, toWall);
  const week = read(fromWall, fromWall + weekMs);
  const out: Array<[number, number]> = [];
  for (let shift = 0; fromWall + shift < toWall; shift += weekMs)
    for (const [a, b] of week) {
      const start = a + shift;
      const end = Math.min(b + shift, toWall);
      if (start < toWall && end > start) out.push([start, end]);
    }
  return out;
}

/** A schedule's open intervals, or why there are none (`unparsed`); `note` when its holidays are not known. */
export type ScheduleIntervals = { ok: true; intervals: OpenInterval[]; note: string | null } | { ok: false; reason: string };

/**
 * Parses and evaluates a value for a place between two instants. Holidays count where the library knows
 * them for the place's country (and region): where it has none (Liechtenstein, Andorra) or keys them by a
 * region the place lacks (Great Britain), the value is evaluated with no holiday, and `note` says so. Call
 * inside `inFixedOffsetZone`.
 */
export function scheduleIntervals(value: string, at: HoursLocation, tz: string, fromMs: number, toMs: number): ScheduleIntervals {
  const evaluate = (where: HoursLocation | null): OpenInterval[] | { reason: string } => {
    const parsed = parseOpeningHours(value, where);
    return parsed.ok ? openIntervals(parsed.hours, tz, fromMs, toMs) : parsed;
  };
  const first = evaluate(at);
  if (Array.isArray(first)) return { ok: true, intervals: first, note: null };
  if (!/no holidays/i.test(first.reason)) return { ok: false, reason: first.reason };
  const retried = evaluate(null);
  return Array.isArray(retried)
    ? { ok: true, intervals: retried, note: `evaluated without holidays: ${first.reason}` }
    : { ok: false, reason: first.reason };
}

/** Whether parsed hours are open at an instant in `tz` (the library's own answer, for checks and tests). */
export function isOpenAt(hours: InstanceType<typeof OpeningHours>, tz: string, instantMs: number): boolean | { reason: string } {
  try {
    return inFixedOffsetZone(() => quietly(() => hours.getState(wallDate(wallClockOf(instantMs, tz)))));
  } catch (err) {
    return { reason: reasonOf(err) };
  }
}
