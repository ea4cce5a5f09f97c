/**
 * What conflation costs per record, this tree against a base commit measured in the same run.
 *   npm run bench:conflation-cost -- [--base main] [--head HEAD] [--twin-lines 5000] [--rounds 1] [--dialects sqlite,postgres]
 *
 * Both commits are checked out in temporary git worktrees (this tree's node_modules linked in), so what is
 * measured is what was committed, whatever the working tree holds meanwhile. For each tree,
 * dialect and case, a fresh database: the first source imported conflating (it only writes blocking keys),
 * the second with `--no-conflate` (its records left due), then `conflate(db)` of that tree timed alone in a
 * process of its own:
 * - no merges: Overture Boulder, then the global Foursquare sample (10,000 records, none of them in Boulder):
 *   what a record of a second source costs when it finds nothing;
 * - every record merges: the first `--twin-lines` named OSM POIs, then the same file as a second source
 *   (`--source twin`): every record finds its twin and becomes a place of two sources.
 * PostgreSQL: a schema of its own in TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import pg from 'pg';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
};
const base = arg('base', 'main');
const headCommit = arg('head', 'HEAD');
const twinLines = Number(arg('twin-lines', '5000'));
const rounds = Number(arg('rounds', '1'));
const dialects = arg('dialects', 'sqlite,postgres').split(',');
const adminUrl = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const repo = resolve(import.meta.dirname, '..');
const data = resolve(repo, '../shared/data');
const work = mkdtempSync(join(tmpdir(), 'conflation-cost-'));

interface Case {
  name: string;
  first: string[];
  second: string[];
  /** Figure per record of the second source, or per merged record. */
  per: 'record' | 'merged';
}

function twinFile(): string {
  const lines = gunzipSync(readFileSync(join(data, 'osm/osm-pois-all.ndjson.gz')))
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(0, twinLines);
  const path = join(work, 'osm-twin.ndjson');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

const twin = twinFile();
const cases: Case[] = [
  {
    name: 'no merges (Overture Boulder, then the global Foursquare sample)',
    first: [join(data, 'places/overture-places-boulder-3545.parquet')],
    second: [join(data, 'places/fsq-os-places-sample-10k-2024-11-19.parquet')],
    per: 'record',
  },
  {
    name: `every record merges (${twinLines} OSM POIs, then the same as source twin)`,
    first: [twin],
    second: [twin, '--source', 'twin', '--dataset', 'twin'],
    per: 'merged',
  },
];

function checkout(commit: string, name: string): string {
  const dir = join(work, name);
  const r = spawnSync('git', ['-C', repo, 'worktree', 'add', '--detach', dir, commit], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git worktree add ${commit}: ${r.stderr}`);
  symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

async function freshDatabase(dialect: string): Promise<{ url: string; drop: () => Promise<void> }> {
  if (dialect === 'sqlite') {
    const path = join(work, `${randomBytes(4).toString('hex')}.db`);
    return { url: `sqlite:${path}`, drop: async () => rmSync(path, { force: true }) };
  }
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  return {
    url: `${adminUrl}${adminUrl.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`,
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP SCHEMA ${schema} CASCADE`);
      await c.end();
    },
  };
}

function run(tree: string, args: string[], url: string): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', ...args], {
    cwd: tree,
    env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn', TREE: tree },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`${args.join(' ')} in ${tree}: ${r.stderr}`);
  return r.stdout;
}

/** Conflation of what is due, timed in a process of its own with the tree's code. */
const timing = `
const { openDatabase } = await import(process.env.TREE + '/src/infra/db/database.ts');
const { conflate } = await import(process.env.TREE + '/src/modules/conflation/conflation.service.ts');
const db = openDatabase(process.env.DATABASE_URL);
const started = performance.now();
const summary = await conflate(db);
const ms = performance.now() - started;
await db.close();
console.log(JSON.stringify({ ms, ...summary }));
`;

async function measure(tree: string, dialect: string, c: Case): Promise<{ ms: number; indexed: number; merged: number }> {
  const db = await freshDatabase(dialect);
  try {
    const cli = join(tree, 'src/cli/main.ts');
    run(tree, [cli, 'import', ...c.first], db.url);
    run(tree, [cli, 'import', '--no-conflate', ...c.second], db.url);
    const out = run(tree, ['--input-type=module', '-e', timing], db.url);
    return JSON.parse(out.trim().split('\n').at(-1)!) as { ms: number; indexed: number; merged: number };
  } finally {
    await db.drop();
  }
}

const baseTree = checkout(base, 'base');
const headTree = checkout(headCommit, 'head');
const rev = (tree: string) => spawnSync('git', ['-C', tree, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
console.log(`conflation cost: ${headCommit} (${rev(headTree)}) against ${base} (${rev(baseTree)}), ${rounds} round(s)`);
try {
  for (const dialect of dialects) {
    for (const c of cases) {
      const figures: Record<'base' | 'this', number[]> = { base: [], this: [] };
      let detail = '';
      for (let round = 0; round < rounds; round++) {
        for (const [label, tree] of [
          ['base', baseTree],
          ['this', headTree],
        ] as const) {
          const m = await measure(tree, dialect, c);
          const n = c.per === 'merged' ? m.merged : m.indexed;
          figures[label].push(m.ms / Math.max(n, 1));
          detail += `  ${label} round ${round + 1}: ${(m.ms / 1000).toFixed(2)} s, ${m.indexed} records, ${m.merged} merged\n`;
        }
      }
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      const b = median(figures.base);
      const t = median(figures.this);
      console.log(
        `${dialect}, ${c.name}: ${t.toFixed(2)} ms per ${c.per === 'merged' ? 'merged record' : 'record'} against ${b.toFixed(2)} (${(t / b).toFixed(2)}×)`,
      );
      process.stdout.write(detail);
    }
  }
} finally {
  for (const tree of [baseTree, headTree]) spawnSync('git', ['-C', repo, 'worktree', 'remove', '--force', tree]);
  rmSync(work, { recursive: true, force: true });
}
