import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { realHoursValues } from '../../../test/helpers/opening-hours.ts';
import {
  inFixedOffsetZone,
  instantOfWallClock,
  type OpenInterval,
  openIntervals,
  parseOpeningHours,
  scheduleIntervals,
  timeZoneAt,
  wallClockOf,
} from './opening-hours.ts';

/** The offset from UTC (ms) of a zone at an instant, read from Intl's own offset name: a path the code under test does not use. */
const offsetNames = new Map<string, Intl.DateTimeFormat>();
function oracleOffset(instantMs: number, tz: string): number {
  let format = offsetNames.get(tz);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: tz, timeZoneName: 'longOffset' });
    offsetNames.set(tz, format);
  }
  const name = format.formatToParts(new Date(instantMs)).find((p) => p.type === 'timeZoneName')?.value ?? 'GMT';
  const m = /GMT([+-])(\d\d):(\d\d)/.exec(name);
  return m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 3_600_000 + Number(m[3]) * 60_000) : 0;
}

/** The instants (ms, to the minute) at which a zone changes its offset in 2026. */
function changesOf2026(tz: string): number[] {
  const out: number[] = [];
  const start = Date.UTC(2026, 0, 1);
  const step = 86_400_000;
  for (let t = start; t < Date.UTC(2027, 0, 1); t += step) {
    if (oracleOffset(t, tz) === oracleOffset(t + step, tz)) continue;
    let low = t;
    let high = t + step;
    while (high - low > 60_000) {
      const mid = low + Math.floor((high - low) / 120_000) * 60_000;
      if (oracleOffset(mid, tz) === oracleOffset(low, tz)) low = mid;
      else high = mid;
    }
    out.push(high);
  }
  return out;
}

const dstZones = [
  'Europe/Berlin',
  'Europe/London',
  'America/New_York',
  'America/Los_Angeles',
  'America/Santiago',
  'Australia/Sydney',
  'Australia/Lord_Howe',
  'Pacific/Auckland',
  'Africa/Cairo',
  'Asia/Jerusalem',
];

describe('opening hours in each place’s time zone', () => {
  test('the time zone comes from the coordinates', () => {
    assert.equal(timeZoneAt(48.137, 11.575), 'Europe/Berlin');
    assert.equal(timeZoneAt(35.68, 139.76), 'Asia/Tokyo');
    assert.equal(timeZoneAt(40.71, -74.0), 'America/New_York');
    assert.equal(timeZoneAt(null, 11.5), null);
  });

  test('1,000 generated cases around the daylight-saving changes of 2026 in ten zones: wall clock, open now and open at all right', () => {
    // 00:30–04:00 every day: the changes of these zones fall in or next to it (at midnight in Santiago and Cairo,
    // between 01:00 and 03:00 elsewhere), and neither end lies in an hour one of them repeats (where the
    // hours run on through the repetition: see the next test).
    const opens = 30 * 60_000;
    const closes = 4 * 3_600_000;
    let cases = 0;
    for (const tz of dstZones) {
      const changes = changesOf2026(tz);
      assert.equal(changes.length, 2, `${tz} changes twice in 2026`);
      const parsed = parseOpeningHours('Mo-Su 00:30-04:00', { lat: 0, lon: 0, countryCode: null, region: null });
      assert.ok(parsed.ok);
      for (const change of changes) {
        const intervals = inFixedOffsetZone(() => openIntervals(parsed.hours, tz, change - 3 * 86_400_000, change + 3 * 86_400_000));
        assert.ok(Array.isArray(intervals));
        const list = intervals as OpenInterval[];
        for (let k = -25; k < 25; k++) {
          const instant = change + k * 6 * 60_000 + (k % 2) * 30_000;
          const wall = instant + oracleOffset(instant, tz);
          assert.equal(wallClockOf(instant, tz), wall, `${tz} ${new Date(instant).toISOString()}`);
          const timeOfDay = ((wall % 86_400_000) + 86_400_000) % 86_400_000;
          const open = timeOfDay >= opens && timeOfDay < closes;
          const s = Math.floor(instant / 1000);
          const nowOpen = list.some((i) => i.startUtc <= s && s < i.endUtc);
          assert.equal(nowOpen, open, `open now, ${tz} at ${new Date(instant).toISOString()} (wall ${new Date(wall).toISOString()})`);
          const w = Math.floor(wall / 1000);
          const atOpen = list.some((i) => i.startLocal <= w && w < i.endLocal);
          assert.equal(atOpen, open, `open at, ${tz} wall ${new Date(wall).toISOString()}`);
          cases++;
        }
      }
    }
    assert.equal(cases, 1000);
  });

  test('a wall-clock time the zone skips is the instant of the change; one it repeats is its first occurrence', () => {
    // Berlin 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC); 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00 UTC).
    assert.equal(instantOfWallClock(Date.UTC(2026, 2, 29, 2, 30), 'Europe/Berlin'), Date.UTC(2026, 2, 29, 1, 0));
    assert.equal(instantOfWallClock(Date.UTC(2026, 9, 25, 2, 30), 'Europe/Berlin'), Date.UTC(2026, 9, 25, 0, 30));
    assert.equal(instantOfWallClock(Date.UTC(2026, 6, 1, 12, 0), 'Asia/Tokyo'), Date.UTC(2026, 6, 1, 3, 0));
  });

  test('public holidays of the place’s country close it: Christmas in Munich, not in Tokyo', () => {
    const value = 'Mo-Su 10:00-18:00; PH off';
    const day = (tz: string, country: string, lat: number, lon: number) => {
      const parsed = parseOpeningHours(value, { lat, lon, countryCode: country, region: null });
      assert.ok(parsed.ok);
      const noon = instantOfWallClock(Date.UTC(2026, 11, 25, 12), tz);
      const list = inFixedOffsetZone(() => openIntervals(parsed.hours, tz, noon - 86_400_000, noon + 86_400_000)) as OpenInterval[];
      return list.some((i) => i.startUtc * 1000 <= noon && noon < i.endUtc * 1000);
    };
    assert.equal(day('Europe/Berlin', 'DE', 48.137, 11.575), false);
    assert.equal(day('Asia/Tokyo', 'JP', 35.68, 139.76), true);
  });

  test('a sample of the real extracts’ opening_hours values parses at 98 % or more; the rest carry a reason', async () => {
    const values = await realHoursValues();
    assert.ok(values.length > 2000);
    // Every fifth value here; `npm run bench:opening-hours-parse` reads them all and lists the rest.
    const sample = values.filter((_, i) => i % 5 === 0);
    const failed: Array<{ value: string; reason: string }> = [];
    inFixedOffsetZone(() => {
      for (const v of sample) {
        const tz = timeZoneAt(v.lat, v.lon)!;
        const at = { lat: v.lat, lon: v.lon, countryCode: v.country, region: null };
        const schedule = scheduleIntervals(v.value, at, tz, Date.UTC(2026, 10, 23), Date.UTC(2026, 10, 30));
        if (!schedule.ok) failed.push({ value: v.value, reason: schedule.reason });
      }
    });
    const share = 1 - failed.length / sample.length;
    assert.ok(share >= 0.98, `${(share * 100).toFixed(2)} % parsed: ${JSON.stringify(failed.slice(0, 5))}`);
    for (const f of failed) assert.ok(f.reason.length > 0, f.value);
  });
});
