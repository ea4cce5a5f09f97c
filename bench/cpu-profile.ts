/**
 * Where a server's CPU went during one measured run of `bench/api.ts --cpu-prof DIR`:
 *
 *   node --import tsx bench/cpu-profile.ts DIR/<run> ["type+city, distinct"] [--top 40]
 *
 * Reads every .cpuprofile of the run (the main thread's and each read thread's) and the phase windows of
 * phases.json, keeps the samples inside the named phase, and prints per thread: the time sampled, idle,
 * and the busy time by stage (each sample charged to the innermost frame of the server's own code, or
 * else to the library or runtime part it ran in), then the top functions by self time.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const dir = resolve(args[0] ?? 'var/bench/profiles');
const phaseName = args[1] && !args[1].startsWith('--') ? args[1] : 'type+city, distinct';
const top = args.includes('--top') ? Number(args[args.indexOf('--top') + 1]) : 40;
const phases = JSON.parse(readFileSync(resolve(dir, 'phases.json'), 'utf8')) as Array<{ name: string; startUs: number; endUs: number }>;
const window = phases.find((p) => p.name === phaseName);
if (!window) throw new Error(`no phase "${phaseName}" in ${dir}/phases.json (${phases.map((p) => p.name).join(', ')})`);

/** Functions whose stage is not their file's (the page's JSON is rendered in search.service.ts). */
const ownFunctions: Array<[RegExp, string]> = [[/^(pagePlacesJson|pagePlaces|searchPageJson|v1SearchJson)$/, 'JSON of the page']];

/** The stage of a frame of the server's own code (dist/…), by its file; undefined for libraries and the runtime. */
const ownStages: Array<[RegExp, string]> = [
  [/\/plugins\/auth\.js|\/modules\/auth\//, 'auth: token, quota, usage'],
  [/\/plugins\/ratelimit\.js|\/infra\/ratelimit\//, 'rate limit'],
  [/\/search\/engine\//, 'engine: bitmaps, page'],
  [/\/search\/search\.json\.js|\/search\.routes\.js/, 'JSON of the page'],
  [/\/places\/places\.schema\.js|\/contacts\//, 'row → public place'],
  [/\/search\/search\.repository\.js/, 'saved search INSERT'],
  [/\/leads\/|\/suppressions\//, 'account exclusions'],
  [/\/search\/type-resolver\.js|\/search\/business-words\.js|\/geo\/|\/taxonomy\//, 'names: type, city'],
  [/\/infra\/db\/read-pool\.js|\/infra\/db\/read-worker\.js/, 'read pool (messages)'],
  [/\/search\/search\.reads\.js|\/places\/places\.repository\.js|\/places\/places\.by-id/, 'SQL reads (rows, count)'],
  [/\/search\/search\.service\.js|\/search\/open-filter\.js/, 'search service (resolve, fallbacks)'],
  [/\/infra\/db\//, 'database (other)'],
  [/\/plugins\//, 'plugins (headers, errors, meter)'],
  [/\/infra\//, 'infra (other)'],
  [/\/modules\//, 'modules (other)'],
];

/** The part of a library or the runtime a leaf frame ran in, when no frame of the server's own code is on the stack. */
function otherStage(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(program)') return 'runtime (native, unattributed)';
  if (/node_modules\/fastify|node_modules\/find-my-way|node_modules\/avvio|node_modules\/light-my-request/.test(url))
    return 'fastify (routing, hooks, reply)';
  if (/node_modules\/fast-json-stringify|node_modules\/ajv|node_modules\/@sinclair/.test(url)) return 'fastify (schema, validation)';
  if (/node_modules\/pino|node_modules\/sonic-boom/.test(url)) return 'logging';
  if (/node_modules\/better-sqlite3|node_modules\/kysely/.test(url)) return 'database driver';
  if (/node_modules\/roaring-wasm|wasm:\/\//.test(url)) return 'engine: bitmaps, page';
  if (/node:internal\/(http|_http|streams|net|stream_base|dns|timers|process\/task_queues)|node:_http|node:net|node:http/.test(url))
    return 'node: HTTP, sockets, timers';
  if (url === '') return `runtime: ${functionName || '(anonymous)'}`;
  if (url.startsWith('node:')) return 'node: other';
  return 'other libraries';
}

/** Frameworks that call the server's code and are called by it: a sample stops at them (reply.send is fastify's). */
const framework = /node_modules\/(fastify|find-my-way|avvio|fast-json-stringify|ajv|pino|sonic-boom)\//;

/** The innermost frame of the server's own code or of the framework decides; the runtime and the drivers are transparent. */
function stageOf(stack: CallFrame[]): string {
  for (const frame of stack) {
    if (framework.test(frame.url)) return otherStage(frame);
    if (!frame.url.includes('/dist/')) continue;
    for (const [pattern, stage] of ownFunctions) if (pattern.test(frame.functionName)) return stage;
    for (const [pattern, stage] of ownStages) if (pattern.test(frame.url)) return stage;
  }
  return otherStage(stack[0]!);
}

const shortUrl = (url: string) => url.replace(/^.*\/(dist|node_modules)\//, '$1/').replace(/^file:\/\//, '');

for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
  const profile = JSON.parse(readFileSync(resolve(dir, file), 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stackOf = (id: number): CallFrame[] => {
    const out: CallFrame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) out.push(byId.get(at)!.callFrame);
    return out;
  };
  const stageCache = new Map<number, string>();
  const stages = new Map<string, number>();
  const selfTime = new Map<string, number>();
  let idle = 0;
  let sampled = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!;
    if (t < window.startUs || t > window.endUs) continue;
    const weight = profile.timeDeltas[i + 1] ?? 0;
    const id = profile.samples[i]!;
    const leaf = byId.get(id)!.callFrame;
    sampled += weight;
    if (leaf.functionName === '(idle)') {
      idle += weight;
      continue;
    }
    let stage = stageCache.get(id);
    if (stage === undefined) {
      stage = stageOf(stackOf(id));
      stageCache.set(id, stage);
    }
    stages.set(stage, (stages.get(stage) ?? 0) + weight);
    const fn = `${leaf.functionName || '(anonymous)'} ${shortUrl(leaf.url)}${leaf.url ? `:${leaf.lineNumber + 1}` : ''}`;
    selfTime.set(fn, (selfTime.get(fn) ?? 0) + weight);
  }
  if (sampled === 0) continue;
  const busy = sampled - idle;
  const msOf = (us: number) => (us / 1000).toFixed(0).padStart(7);
  const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)} %`;
  console.log(`\n${file}: ${phaseName}: sampled ${msOf(sampled)} ms, idle ${msOf(idle)} ms, busy ${msOf(busy)} ms`);
  console.log('  by stage (busy time)');
  for (const [stage, us] of [...stages].sort((a, b) => b[1] - a[1])) console.log(`  ${msOf(us)} ms ${pct(us)}  ${stage}`);
  console.log(`  top ${top} functions by self time`);
  for (const [fn, us] of [...selfTime].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${msOf(us)} ms ${pct(us)}  ${fn}`);
}
