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
const startCpu = cpu();
const { loadEnricher } = await load('modules/importers/enricher.js');
const { detectFormat } = await load('modules/importers/import.service.js');
const { enrichPlace } = await load('modules/importers/enrich.js');
const { appendPlaceRow, emptyPlaceRows } = await load('modules/places/place-record.js');
const modulesMs = now() - at;
at = now();
const enricher = loadEnricher();
const enricherMs = now() - at;
const startCpuMs = cpu() - startCpu;
const factory = await detectFormat(file);

const result = { format: factory.format, modulesMs, enricherMs, startCpuMs, rounds: [] };
for (let round = 0; round < Number(rounds); round++) {
  // Records are read 5,000 at a time, then enriched, so that each phase is timed alone (an import
  // interleaves them record by record) and no more than a slice of the file is held at once.
  const roundCpu = cpu();
  let readMs = 0;
  let enrichMs = 0;
  let records = 0;
  let places = 0;
  let rows = emptyPlaceRows();
  at = now();
  const reader = await factory.open(file, {});
  const iterator = reader.records()[Symbol.asyncIterator]();
  readMs += now() - at;
  for (let done = false; !done; ) {
    const slice = [];
    at = now();
    while (slice.length < 5000) {
      const step = await iterator.next();
      if (step.done) {
        done = true;
        break;
      }
      slice.push(step.value);
    }
    readMs += now() - at;
    records += slice.length;
    at = now();
    for (const item of slice) {
      if (!item.ok) continue;
      const enriched = enrichPlace(reader.source, item.place, enricher);
      if (!enriched.ok) continue;
      appendPlaceRow(rows, enriched.record);
      // Chunks of 500 rows, as the import sends them.
      if (++places % 500 === 0) rows = emptyPlaceRows();
    }
    enrichMs += now() - at;
  }
  // The whole process's CPU over the round: this thread's, and V8's helpers' (compiling, collecting).
  result.rounds.push({ records, places, readMs, enrichMs, cpuMs: cpu() - roundCpu });
}
console.log(JSON.stringify(result));
