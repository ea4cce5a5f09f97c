/**
 * What reading and enriching a file costs on one thread, cold and warm: the import worker's work without
 * the thread, the hand-over or the writer. One fresh `node` process (compiled build, no tsx hooks) loads
 * the modules and the enricher, then reads the file and enriches its places `--rounds` times over (5,000
 * records read, then enriched, and so on: each phase timed alone, memory bounded). Round 1
 * is what every import pays, code cold and V8 compiling it on its helper threads; the last round is the
 * same work once it is compiled. The gap between them, and each round's CPU beyond its wall time (other
 * threads'), is what JIT warm-up costs a file of this size. The thread waits for nothing, so a round's wall
 * time is this thread's CPU.
 *
 *   node --import tsx bench/import-phases.ts [FILE] [--rounds 4]
 *
 * FILE defaults to the merged `osm-pois-all.osm.pbf` (BENCH_OSM_DIR, default ../shared/data/osm).
 */
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { argValue } from './lib/args.ts';
import { compileTree } from './lib/build.ts';

const root = resolve(import.meta.dirname, '..');
const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && all[i - 1] !== '--rounds');
const osmDir = resolve(process.env.BENCH_OSM_DIR ?? resolve(root, '../shared/data/osm'));
const file = resolve(positional[0] ?? join(osmDir, 'osm-pois-all.osm.pbf'));
const rounds = Number(argValue('--rounds', '4'));
if (!Number.isInteger(rounds) || rounds < 2 || rounds > 20) throw new Error('--rounds must be a whole number from 2 to 20');

const build = compileTree(root, 'bench-build');
const run = spawnSync(process.execPath, [join(root, 'bench/lib/phases-once.mjs'), build, file, String(rounds)], { encoding: 'utf8' });
if (run.status !== 0) throw new Error(`phases-once failed:\n${run.stderr}`);

interface Round {
  records: number;
  places: number;
  readMs: number;
  enrichMs: number;
  cpuMs: number;
}
const r = JSON.parse(run.stdout) as { format: string; modulesMs: number; enricherMs: number; startCpuMs: number; rounds: Round[] };
const ms = (v: number) => v.toFixed(0).padStart(6);
const perPlace = (v: number, n: number) => ((v * 1000) / n).toFixed(1).padStart(6);
console.log(`${file} (${r.format}): ${r.rounds[0]!.records} records, ${r.rounds[0]!.places} places`);
console.log(
  `loading the modules ${ms(r.modulesMs)} ms, the enricher (taxonomy, gazetteer) ${ms(r.enricherMs)} ms; process CPU ${ms(r.startCpuMs)} ms`,
);
console.log('round   read ms  enrich ms  µs a place  process CPU ms  of it on other threads');
r.rounds.forEach((round, i) => {
  const wall = round.readMs + round.enrichMs;
  // CPU beyond the round's wall time ran on other threads: V8 compiling and collecting beside this one.
  console.log(
    `${String(i + 1).padStart(5)}  ${ms(round.readMs)}     ${ms(round.enrichMs)}      ${perPlace(wall, round.places)}          ${ms(round.cpuMs)}                  ${ms(Math.max(0, round.cpuMs - wall))}`,
  );
});
const first = r.rounds[0]!;
const last = r.rounds.at(-1)!;
console.log(`cold ÷ warm: ${((first.readMs + first.enrichMs) / (last.readMs + last.enrichMs)).toFixed(2)}`);
