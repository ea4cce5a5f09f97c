/**
 * Per-place cost of the country of a point: `node --import tsx bench/borders.bench.ts`.
 * Over the points of the real OSM places (`../shared/data/osm/osm-pois-all.ndjson.gz`, nine extracts):
 * the nearest-city search without a country (what a place without a source country cost before the
 * polygons: the baseline, measured in the same run), `assignCity` now (polygon, then the nearest city of that
 * country), and the polygon look-up alone with a cold and a warm cell cache. CPU time per place, since the
 * machine is shared.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { CountryBorders } from '../src/modules/geo/borders.ts';
import { loadGazetteer } from '../src/modules/geo/gazetteer.ts';
import { osmDir } from '../test/helpers/osm.ts';

const points: Array<[number, number]> = [];
for (const line of gunzipSync(readFileSync(join(osmDir, 'osm-pois-all.ndjson.gz')))
  .toString()
  .split('\n')) {
  if (!line) continue;
  const { lat, lon } = JSON.parse(line) as { lat?: number; lon?: number };
  if (typeof lat === 'number' && typeof lon === 'number') points.push([lat, lon]);
}
const g = loadGazetteer();
const known = (code: string) => g.resolveCountry(code)?.code === code;
g.assignCity({ lat: 0.5, lon: 0.5 }); // loads country-coder outside the timings
const ROUNDS = 5;

function cpuPerPlace(label: string, run: () => void, rounds = ROUNDS): number {
  const cpu = process.cpuUsage();
  for (let r = 0; r < rounds; r++) run();
  const used = process.cpuUsage(cpu);
  const us = (used.user + used.system) / (rounds * points.length);
  console.log(`${label.padEnd(58)} ${us.toFixed(2).padStart(7)} µs CPU/place`);
  return us;
}

console.log(`${points.length} points`);
const base = cpuPerPlace('baseline: nearest city, no country', () => {
  for (const [lat, lon] of points) g.nearestCity(lat, lon);
});
const now = cpuPerPlace('assignCity (polygon, nearest city of that country)', () => {
  for (const [lat, lon] of points) g.assignCity({ lat, lon });
});
cpuPerPlace(
  'polygon only, cold cell cache (a new CountryBorders)',
  () => {
    const b = new CountryBorders(known);
    for (const [lat, lon] of points) b.at(lat, lon);
  },
  1,
);
const warm = new CountryBorders(known);
for (const [lat, lon] of points) warm.at(lat, lon);
cpuPerPlace('polygon only, warm cell cache', () => {
  for (const [lat, lon] of points) warm.at(lat, lon);
});
console.log(`assignCity / baseline: ${(now / base).toFixed(2)}×; added per place: ${(now - base).toFixed(2)} µs`);
