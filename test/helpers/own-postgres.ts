import assert from 'node:assert/strict';
import { type SpawnSyncReturns, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase } from '../../src/infra/db/database.ts';
import { freePort, runCli } from './cli.ts';
import { munichExtract } from './exports.ts';
import { cacheDir, once, templateDigest } from './templates.ts';

/**
 * A PostgreSQL server of a test's own, for the faults the shared one must not suffer (issue 37): a restart
 * with `pg_ctl restart -m fast|immediate`, a disk that fills up. `initdb` into a folder the test names, the
 * server on a free loopback port, its socket in that folder. PostgreSQL refuses to run as root: under root
 * the binaries run as the `postgres` user (`runuser`), which must own the folder (`chownForPostgres`).
 */
export interface OwnPostgres {
  port: number;
  dataDir: string;
  /** The URL of database `name` as the superuser `postgres`. */
  url(name?: string): string;
  /**
   * `pg_ctl ARGS…` on this server, in a process of its own (the test's event loop goes on meanwhile);
   * rejects with its output and the server's log when it fails.
   */
  ctl(...args: string[]): Promise<string>;
  /** Whether the postmaster runs (`pg_ctl status`). */
  running(): boolean;
  /** The server's log so far. */
  log(): string;
  /** Runs `text` (one statement, or several as one simple query) as the superuser on database `name`, after `first` when given. */
  query<T extends pg.QueryResultRow = pg.QueryResultRow>(text: string, name?: string, first?: string): Promise<pg.QueryResult<T>>;
  /** `pg_amcheck` of database `name` (tables and B-tree indexes, the extension installed if missing): status 0 when nothing is corrupt. */
  amcheck(name: string): Promise<{ status: number | null; output: string }>;
  /** Stops the server at once (`-m immediate`), whatever state it is in. */
  stop(): void;
}

/** Where this machine's PostgreSQL binaries are, newest version first; undefined when there are none. */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

const asRoot = process.getuid?.() === 0;

/** Hands `path` (and what is already inside it) to the `postgres` user when the test runs as root. */
export function chownForPostgres(path: string): void {
  if (!asRoot) return;
  const ids = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gids = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  chownSync(path, Number(ids.stdout.trim()), Number(gids.stdout.trim()));
}

const asPostgres = (bin: string, args: string[]): [string, string[]] =>
  asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];

function run(bin: string, args: string[], timeoutMs = 60_000): SpawnSyncReturns<string> {
  const [command, full] = asPostgres(bin, args);
  return spawnSync(command, full, { encoding: 'utf8', timeout: timeoutMs, cwd: '/' });
}

function runAsync(bin: string, args: string[], timeoutMs = 90_000): Promise<{ status: number | null; output: string }> {
  const [command, full] = asPostgres(bin, args);
  return new Promise((resolve) => {
    const child = spawn(command, full, { cwd: '/', stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    child.on('error', (error) => resolve({ status: null, output: error.message }));
    child.on('close', (status) => resolve({ status, output }));
  });
}

/**
 * Why a server of the test's own cannot run here, or undefined when it can: no binaries, or root without a
 * `postgres` user to run them as.
 */
export function ownPostgresUnavailable(): string | undefined {
  if (!postgresBinDir()) return 'no PostgreSQL server binaries under /usr/lib/postgresql/*/bin';
  if (asRoot && spawnSync('id', ['-u', 'postgres']).status !== 0)
    return 'running as root and there is no postgres user to run PostgreSQL as';
  return undefined;
}

export interface OwnPostgresOptions {
  /** The cluster's folder (created, handed to the postgres user); must not exist yet or be empty (a mount point). */
  dataDir: string;
  /**
   * `munich`: a copy of a cluster whose database `leadatlas` holds the reference data and Munich's extract
   * (built once per machine, see `munichCluster`); without it, a fresh `initdb`.
   */
  from?: 'munich';
  /** The write-ahead log in a folder of its own (another disk), as `initdb --waldir` puts it. */
  walDir?: string;
  /** `postgresql.conf` settings for this start. */
  settings?: Record<string, string>;
}

/** Runs `sh -c SCRIPT ARGS…` as the user PostgreSQL runs as; throws with its output when it fails. */
function shAsPostgres(script: string, ...args: string[]): void {
  const out = run('/bin/sh', ['-c', script, 'sh', ...args]);
  if (out.status !== 0) throw new Error(`${script}: ${out.stderr || out.stdout || out.error?.message}`);
}

/** Creates (or copies) and starts a server of the test's own; `ownPostgresUnavailable()` first says whether it can. */
export async function startOwnPostgres(options: OwnPostgresOptions): Promise<OwnPostgres> {
  const bin = postgresBinDir()!;
  const { dataDir } = options;
  mkdirSync(dataDir, { recursive: true });
  chownForPostgres(dataDir);
  if (options.from === 'munich') {
    shAsPostgres('cp -a "$1"/. "$2"/ && chmod 700 "$2"', await munichCluster(), dataDir);
    if (options.walDir) {
      mkdirSync(options.walDir, { recursive: true });
      chownForPostgres(options.walDir);
      shAsPostgres('cp -a "$1"/pg_wal/. "$2"/ && rm -rf "$1"/pg_wal && ln -s "$2" "$1"/pg_wal', dataDir, options.walDir);
    }
  } else {
    if (options.walDir) {
      mkdirSync(options.walDir, { recursive: true });
      chownForPostgres(options.walDir);
    }
    initdb(dataDir, options.walDir);
  }
  const port = await freePort();
  const settings: Record<string, string> = {
    listen_addresses: "'127.0.0.1'",
    port: String(port),
    unix_socket_directories: `'${dataDir}'`,
    ...options.settings,
  };
  const conf = Object.entries(settings)
    .map(([k, v]) => `${k} = ${v}`)
    .join('\n');
  shAsPostgres(`printf '%s\\n' "$1" >> "$2"`, conf, join(dataDir, 'postgresql.conf'));
  const logFile = join(dataDir, 'server.log');
  const ctlArgs = (args: string[]) => ['-D', dataDir, '-l', logFile, '-t', '60', ...args];
  const readLog = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  const ctl = async (...args: string[]) => {
    const out = await runAsync(join(bin, 'pg_ctl'), ctlArgs(args));
    if (out.status !== 0) throw new Error(`pg_ctl ${args.join(' ')}: ${out.output}\n${readLog().slice(-4000)}`);
    return out.output;
  };
  await ctl('-w', 'start');
  const url = (name = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${name}`;
  return {
    port,
    dataDir,
    url,
    ctl,
    running: () => run(join(bin, 'pg_ctl'), ctlArgs(['status'])).status === 0,
    log: readLog,
    async query(text, name, first) {
      const client = new pg.Client({ connectionString: url(name), connectionTimeoutMillis: 5000 });
      await client.connect();
      try {
        if (first) await client.query(first);
        return await client.query(text);
      } finally {
        await client.end();
      }
    },
    amcheck: (name) =>
      runAsync(join(bin, 'pg_amcheck'), [
        '--install-missing',
        '--heapallindexed',
        '-h',
        '127.0.0.1',
        '-p',
        String(port),
        '-U',
        'postgres',
        '-d',
        name,
      ]),
    stop: () => void run(join(bin, 'pg_ctl'), ctlArgs(['-m', 'immediate', 'stop'])),
  };
}

/** How `initdb` makes a cluster, and what it writes into its `postgresql.conf` (part of the cached cluster's key). */
const initdbArgs = ['-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync', '--no-instructions', '--wal-segsize=1'];
const initialSettings = [
  // The machine does not crash in these tests, the server does: what it wrote is in the page cache.
  'fsync = off',
  'full_page_writes = off',
  'logging_collector = off',
  'min_wal_size = 4MB',
  'max_wal_size = 32MB',
  'max_connections = 60',
];

function initdb(dataDir: string, walDir?: string): void {
  // Segments of 1 MB (--wal-segsize): the log takes and gives back room in small steps, and a copy is small.
  const args = ['-D', dataDir, ...initdbArgs];
  if (walDir) args.push('--waldir', walDir);
  const init = run(join(postgresBinDir()!, 'initdb'), args);
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout || init.error?.message}`);
  shAsPostgres(`printf '%s\\n' "$1" >> "$2"`, initialSettings.join('\n'), join(dataDir, 'postgresql.conf'));
}

/**
 * A stopped cluster whose database `leadatlas` holds the reference data and Munich's extract, what a server
 * of a test's own starts from: built once per machine (~30 s), then copied (a second). Keyed like the other
 * templates (test/helpers/templates.ts) plus how initdb made it and the PostgreSQL version.
 */
async function munichCluster(): Promise<string> {
  const key = createHash('sha256')
    .update(templateDigest())
    .update(JSON.stringify([initdbArgs, initialSettings]))
    .update(postgresBinDir()!)
    .update(munichExtract)
    .digest('hex')
    .slice(0, 16);
  const name = `pg-cluster-munich-${key}`;
  const path = join(cacheDir, name);
  await once(
    name,
    async () => existsSync(path),
    async () => {
      const building = join(cacheDir, `${name}.${process.pid}.partial`);
      rmSync(building, { recursive: true, force: true });
      const server = await startOwnPostgres({ dataDir: building });
      try {
        await server.query('CREATE DATABASE leadatlas');
        // Loaded only to build: a test that copies the cluster does not pay for loading them.
        const { importFiles, prepareDatabase } = await import('../../src/bootstrap.ts');
        const db = openDatabase(server.url('leadatlas'));
        try {
          await prepareDatabase(db);
          await importFiles(db, [munichExtract]);
        } finally {
          await db.close();
        }
        await server.query('CHECKPOINT');
        await server.ctl('-m', 'fast', 'stop');
      } catch (error) {
        server.stop();
        rmSync(building, { recursive: true, force: true });
        throw error;
      }
      rmSync(join(building, 'server.log'), { force: true });
      renameSync(building, path);
      pruneClusters(name);
    },
  );
  const now = new Date();
  utimesSync(path, now, now);
  return path;
}

/** Clusters of other keys (another branch's migrations, another PostgreSQL) unused for two days, removed. */
function pruneClusters(keep: string): void {
  for (const f of readdirSync(cacheDir)) {
    if (!f.startsWith('pg-cluster-munich-') || f === keep || f.endsWith('.partial')) continue;
    const path = join(cacheDir, f);
    try {
      if (Date.now() - statSync(path).mtimeMs > 2 * 24 * 3600_000) rmSync(path, { recursive: true, force: true });
    } catch {
      // another process pruned it first
    }
  }
}

/**
 * What `serve` runs with on such a server (limits out of the way, exports under `dir`), and an account made
 * through the CLI with a token of `scopes`: its Authorization header.
 */
export function serveOnOwnPostgres(
  postgres: OwnPostgres,
  dir: string,
  email: string,
  scopes: string,
): { env: Record<string, string>; authorization: string } {
  const env: Record<string, string> = {
    DATABASE_URL: postgres.url('leadatlas'),
    HOST: '127.0.0.1',
    IMPORT_DEMO_DATA: 'false',
    EXPORT_DATA_DIR: join(dir, 'exports'),
    RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000',
    RATE_LIMIT_IP_PER_MINUTE: '1000000000',
    QUOTA_REQUESTS_PER_DAY: '1000000000',
  };
  const cli = (args: string[]) => {
    const out = runCli(args, env);
    assert.equal(out.status, 0, `${args.join(' ')}: ${out.stderr}`);
    return out.stdout.trim();
  };
  cli(['user', 'create', '--email', email]);
  const token = cli(['token', 'create', '--user', email, '--name', 'own-postgres', '--scopes', scopes]);
  return { env, authorization: `Bearer ${token}` };
}
