/**
 * How much of the real extracts' `opening_hours` the open filter can use (issue #26: at least 98 %), and
 * why the rest cannot be:
 *
 *   npm run bench:opening-hours-parse
 *
 * Every distinct value of ../shared/data/osm/osm-pois-all.ndjson.gz is parsed as the opening-hours pass
 * parses it (the library, with the country of its extract for public holidays, no region) and evaluated over
 * a week in the time zone of its first place (`scheduleIntervals`: without holidays where the library has none
 * for the country). Prints the share of values and of places, then each value that
 * fails with its reason.
 */
import { inFixedOffsetZone, scheduleIntervals, timeZoneAt } from '../src/modules/places/opening-hours.ts';
import { realHoursValues } from '../test/helpers/opening-hours.ts';

const started = performance.now();
const values = await realHoursValues();
const failed: Array<{ value: string; places: number; reason: string }> = [];
let withoutHolidays = 0;
inFixedOffsetZone(() => {
  for (const v of values) {
    const tz = timeZoneAt(v.lat, v.lon);
    if (!tz) {
      failed.push({ value: v.value, places: v.places, reason: 'no time zone' });
      continue;
    }
    const at = { lat: v.lat, lon: v.lon, countryCode: v.country, region: null };
    const schedule = scheduleIntervals(v.value, at, tz, Date.UTC(2026, 10, 23), Date.UTC(2026, 10, 30));
    if (!schedule.ok) failed.push({ value: v.value, places: v.places, reason: schedule.reason });
    else if (schedule.note) withoutHolidays += v.places;
  }
});
const places = values.reduce((n, v) => n + v.places, 0);
const failedPlaces = failed.reduce((n, f) => n + f.places, 0);
const pct = (a: number, b: number) => `${((100 * a) / b).toFixed(2)} %`;
console.log(
  `${new Date().toISOString()}: ${values.length} distinct values on ${places} places, in ${((performance.now() - started) / 1000).toFixed(1)} s`,
);
console.log(
  `parsed: ${pct(values.length - failed.length, values.length)} of the values, ${pct(places - failedPlaces, places)} of the places (target ≥ 98 %)`,
);
console.log(
  `of which evaluated without public holidays (the library has none for the country, or needs a region): ${withoutHolidays} places`,
);
console.log(`\nnot parsed (${failed.length} values, ${failedPlaces} places):`);
for (const f of failed.sort((a, b) => b.places - a.places || a.value.localeCompare(b.value)))
  console.log(`  ${String(f.places).padStart(3)}  ${JSON.stringify(f.value)}\n       ${f.reason}`);
