/**
 * The index snapshot's load (issue 35, "snapshot loaded in ≤ 10 s", "index ≤ 120 bytes a place"): a server's start
 * from the snapshot, in a fresh process each time, with its wall time, its CPU (process.cpuUsage: on a shared host the
 * CPU is the figure to read), the parts the engine logs, and the memory the index holds.
 *
 *   node --expose-gc --import tsx bench/index-snapshot.ts [--size 1000000] [--rounds 3] [--base DIR] [--by-part]
 *
 * `--base DIR`: a copy of another version's `src/` (e.g. `git archive <commit> src | tar -x -C DIR`); each round then
 * starts that version from the same snapshot file before this one, so before and after are measured in the same
 * run, alternated. The snapshot is written once by this version's build from the database (its format is shared).
 *
 * Memory (each child, after a full GC): the JavaScript heap, the array buffers (typed arrays) and the resident set,
 * before the engine starts (roaring's WebAssembly module loaded) and after, with the index; the WebAssembly memory
 * that holds the bitmaps only grows, so the resident set's growth is an upper bound (the build's peak included).
 * `--by-part`: then each part of the index built alone (CPU, heap and array buffers it adds).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { argValue } from './lib/args.ts';
import { buildCatalog } from './lib/catalog.ts';
import { root } from './lib/server.ts';

const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

interface ChildResult {
  from: string;
  places: number;
  wallMs: number;
  cpuMs: number;
  parts: Record<string, number>;
  memory: { heap: number; arrayBuffers: number; rss: number; indexBytes: number };
}

async function child(src: string, url: string, snapshotPath: string): Promise<ChildResult> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  const imp = (path: string) => import(pathToFileURL(resolve(src, path)).href);
  const { openDatabase } = await imp('infra/db/database.ts');
  const { createReadPool } = await imp('infra/db/read-pool.ts');
  const { EngineSnapshot } = await imp('modules/search/engine/engine-snapshot.ts');
  const { MemorySearchEngine } = await imp('modules/search/engine/search-engine.ts');
  const { createReadTasks, readTasksModule } = await imp('modules/search/read-tasks.ts');
  const { roaringLibraryInitialize } = await import('roaring-wasm');
  await roaringLibraryInitialize();
  const db = openDatabase(url);
  const reads = createReadPool({ db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule });
  let from = '';
  const parts: Record<string, number> = {};
  const log = {
    info: (o: { from?: string; ms?: number }, m: string) => {
      if (m === 'search index built') from = o.from!;
      if (o.ms !== undefined) parts[m] = o.ms;
    },
    warn: (o: unknown, m: string) => console.error(m, o),
  };
  const measure = () => {
    gc();
    gc();
    const m = process.memoryUsage();
    return { heap: m.heapUsed, arrayBuffers: m.arrayBuffers, rss: m.rss };
  };
  const before = measure();
  const engine = new MemorySearchEngine({ db, reads, log, snapshot: new EngineSnapshot(db, snapshotPath, log) }, 3_600_000);
  const cpu = process.cpuUsage();
  const started = performance.now();
  await engine.start();
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const after = measure();
  const places = (engine.state() as { places: number }).places;
  const indexBytes = engine.indexBytes();
  await engine.close();
  await reads.close();
  await db.close();
  return {
    from,
    places,
    wallMs,
    cpuMs: (used.user + used.system) / 1000,
    parts,
    memory: {
      heap: after.heap - before.heap,
      arrayBuffers: after.arrayBuffers - before.arrayBuffers,
      rss: after.rss - before.rss,
      indexBytes,
    },
  };
}

/**
 * Each part of the index alone, built from the snapshot's columns in this process: its CPU and what it adds to
 * the heap and the array buffers after GC (the bitmaps' WebAssembly memory is in neither).
 */
async function parts(url: string, snapshotPath: string): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc!;
  const { roaringLibraryInitialize } = await import('roaring-wasm');
  await roaringLibraryInitialize();
  const { openDatabase } = await import('../src/infra/db/database.ts');
  const { factsShape } = await import('../src/modules/search/engine/engine.repository.ts');
  const { decodeSnapshot } = await import('../src/modules/search/engine/index-snapshot.ts');
  const { BitmapIndex } = await import('../src/modules/search/engine/bitmap-index.ts');
  const { ContactIndex } = await import('../src/modules/search/engine/contact-index.ts');
  const { GeoIndex } = await import('../src/modules/search/engine/geo-index.ts');
  const { NameOrder } = await import('../src/modules/search/engine/name-order.ts');
  const { TextIndex } = await import('../src/modules/search/engine/text-index.ts');
  const { textAt } = await import('../src/modules/search/engine/fact-columns.ts');
  const db = openDatabase(url);
  const shape = (await factsShape(db))!;
  await db.close();
  const kept: unknown[] = [];
  const measure = () => {
    gc();
    gc();
    return process.memoryUsage();
  };
  let n = 0;
  const part = (label: string, make: () => unknown) => {
    const before = measure();
    const cpu = process.cpuUsage();
    kept.push(make());
    const used = process.cpuUsage(cpu);
    const after = measure();
    const per = (x: number) => (x / n).toFixed(1);
    console.log(
      `  ${label.padEnd(34)} CPU ${((used.user + used.system) / 1000).toFixed(0).padStart(6)} ms; heap +${per(after.heapUsed - before.heapUsed)} B/place, ` +
        `array buffers +${per(after.arrayBuffers - before.arrayBuffers)} B/place`,
    );
  };
  let read: ReturnType<typeof decodeSnapshot> | null = null;
  part('read and decode the file', () => {
    read = decodeSnapshot(readFileSync(snapshotPath), shape);
    if (read.ok) n = read.snapshot.facts.size;
  });
  const decoded = read as ReturnType<typeof decodeSnapshot> | null;
  if (!decoded?.ok) throw new Error('the snapshot could not be read');
  const facts = decoded.snapshot.facts;
  n = facts.size;
  const document = textAt(facts, 'document');
  const docs = Array.from({ length: n }, (_, i) => document(i) ?? '');
  part('text: documents and trigram bitmaps', () => {
    const text = new TextIndex();
    text.load(docs);
    return text;
  });
  part('contact postings', () => ContactIndex.fromColumns(facts));
  part('bitmaps and per-slot arrays, text', () => BitmapIndex.build(0, facts));
  part('the same + coordinates, k-d tree (memory: theirs)', () => {
    const geo = new GeoIndex();
    BitmapIndex.build(0, facts, () => [geo]).dispose();
    return geo;
  });
  let names: unknown;
  part('the same + name order (memory: its, + the arrays)', () => {
    BitmapIndex.build(0, facts, (index) => [(names = new NameOrder((s) => index.placeIdOf(s)))]).dispose();
    return names;
  });
  const dictionary = facts.columns.get('document');
  if (dictionary?.kind === 'text')
    console.log(`  distinct documents: ${dictionary.dictionary.length} of ${n} places (the resampled catalog repeats names)`);
}

if (process.argv.includes('--parts')) {
  await parts(argValue('--url', ''), argValue('--snapshot', ''));
  process.exit(0);
}

if (process.argv.includes('--child')) {
  const result = await child(argValue('--src', ''), argValue('--url', ''), argValue('--snapshot', ''));
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

const size = Number(argValue('--size', '1000000'));
const rounds = Number(argValue('--rounds', '3'));
const base = process.argv.includes('--base') ? resolve(argValue('--base', '')) : null;
const here = resolve(root, 'src');
const log = (m: string) => console.log(m);
const catalog = await buildCatalog({ size, dir: resolve(root, 'var/bench'), dataDir: resolve(root, '../shared/data'), log });
const snapshotPath = resolve(root, `var/bench/index-snapshot-bench-${size}.search-index`);
log(`catalog: ${catalog.path}, ${catalog.rows} places; load average ${loadAverage()}`);

function run(src: string): ChildResult {
  const out = spawnSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', import.meta.filename, '--child', '--src', src, '--url', catalog.url, '--snapshot', snapshotPath],
    { encoding: 'utf8', maxBuffer: 1 << 26 },
  );
  if (out.status !== 0) throw new Error(`child failed: ${out.stderr}`);
  return JSON.parse(out.stdout.trim().split('\n').at(-1)!) as ChildResult;
}

const mb = (n: number) => (n / 1e6).toFixed(0);
const show = (label: string, r: ChildResult) => {
  const per = (n: number) => (n / r.places).toFixed(1);
  log(
    `  ${label}: from the ${r.from}, ${r.places} places: wall ${(r.wallMs / 1000).toFixed(1)} s, CPU ${(r.cpuMs / 1000).toFixed(1)} s ` +
      `(${((r.cpuMs * 1000) / r.places).toFixed(1)} µs a place); parts ${JSON.stringify(r.parts)} ms; load ${loadAverage()}`,
  );
  log(
    `    memory with the index (after GC, less before): heap +${mb(r.memory.heap)} MB (${per(r.memory.heap)} B/place), array buffers ` +
      `+${mb(r.memory.arrayBuffers)} MB (${per(r.memory.arrayBuffers)}), rss +${mb(r.memory.rss)} MB (${per(r.memory.rss)}); ` +
      `the index's own count ${per(r.memory.indexBytes)} B/place`,
  );
};

if (!existsSync(snapshotPath)) {
  const written = run(here);
  if (written.from !== 'database') throw new Error(`expected a build from the database, got ${written.from}`);
  show('write (build from the database)', written);
}
log(`snapshot: ${mb(statSync(snapshotPath).size)} MB (${(statSync(snapshotPath).size / catalog.rows).toFixed(0)} bytes/place)`);
const totals: Record<string, { wall: number[]; cpu: number[] }> = { base: { wall: [], cpu: [] }, this: { wall: [], cpu: [] } };
for (let r = 0; r < rounds; r++) {
  log(`round ${r + 1}`);
  for (const [label, src] of [...(base ? [['base', resolve(base, 'src')] as const] : []), ['this', here] as const]) {
    const result = run(src);
    if (result.from !== 'snapshot') throw new Error(`${label}: expected a load from the snapshot, got ${result.from}`);
    show(label, result);
    totals[label]!.wall.push(result.wallMs);
    totals[label]!.cpu.push(result.cpuMs);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [label, t] of Object.entries(totals))
  if (t.wall.length > 0)
    log(
      `${label}: median load wall ${(median(t.wall) / 1000).toFixed(1)} s, CPU ${(median(t.cpu) / 1000).toFixed(1)} s over ${t.wall.length} rounds`,
    );
if (process.argv.includes('--by-part')) {
  log("the index's parts, each built alone from the snapshot's columns (this version):");
  const out = spawnSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', import.meta.filename, '--parts', '--url', catalog.url, '--snapshot', snapshotPath],
    { encoding: 'utf8', maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  log(out.stdout.trimEnd());
}
if (base && totals.base!.cpu.length > 0)
  log(
    `CPU base / this: ${(median(totals.base!.cpu) / median(totals.this!.cpu)).toFixed(2)}×, wall ${(median(totals.base!.wall) / median(totals.this!.wall)).toFixed(2)}×`,
  );
