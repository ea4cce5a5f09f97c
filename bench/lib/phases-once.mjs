// Reading and enriching one file on this thread, several rounds in one process, with a compiled build:
// round 1 is what an import worker pays (cold code, JIT warm-up), the later rounds what the same work costs warm.
// Run by bench/import-phases.ts in a fresh `node` (no tsx hooks in the timings):
//   node bench/lib/phases-once.mjs BUILD_DIR FILE ROUNDS     prints one JSON object
import { pathToFileURL } from 'node:url';

const [build, file, rounds] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(`${build}/${path}`).href);
const now = () => performance.now();
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

let at = now();
let cpuAt = cpu();
const { loadEnricher } = await load('modules/importers/enricher.js');
const { detectFormat } = await load('modules/importers/import.service.js');
const { enrichPlace } = await load('modules/importers/enrich.js');
const { appendPlaceRow, emptyPlaceRows } = await load('modules/places/place-record.js');
const modulesMs = now() - at;
at = now();
const enricher = loadEnricher();
const enricherMs = now() - at;
const startCpuMs = cpu() - cpuAt;
const factory = await detectFormat(file);

const result = { format: factory.format, modulesMs, enricherMs, startCpuMs, rounds: [] };
for (let round = 0; round < Number(rounds); round++) {
  // The records are kept between the two phases so that each is timed alone; an import interleaves them.
  const records = [];
  const cpuAt = cpu();
  at = now();
  const reader = await factory.open(file, {});
  for await (const item of reader.records()) records.push(item);
  const readMs = now() - at;
  at = now();
  let rows = emptyPlaceRows();
  let places = 0;
  for (const item of records) {
    if (!item.ok) continue;
    const enriched = enrichPlace(reader.source, item.place, enricher);
    if (!enriched.ok) continue;
    appendPlaceRow(rows, enriched.record);
    // Chunks of 500 rows, as the import sends them.
    if (++places % 500 === 0) rows = emptyPlaceRows();
  }
  const enrichMs = now() - at;
  // The whole process's CPU over the round: this thread's, and V8's helpers' (compiling, collecting).
  result.rounds.push({ records: records.length, places, readMs, enrichMs, cpuMs: cpu() - cpuAt });
}
console.log(JSON.stringify(result));
