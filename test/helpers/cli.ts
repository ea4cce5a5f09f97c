import { type ChildProcess, type SpawnSyncReturns, type StdioOptions, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
// @ts-expect-error -- scripts/dist-digest.js is plain JavaScript, run by `npm run build` as it is
import { distIsCurrent } from '../../scripts/dist-digest.js';

const repoRoot = resolve(import.meta.dirname, '../..');
/**
 * `leadatlas` as the tests run it, from the repository's root: the compiled build while dist/ was built from
 * the sources as they are (`npm run build`, or `npm ci` through the prepare script: scripts/dist-digest.js;
 * the test runners check once and say so in LEADATLAS_COMPILED_WORKERS), else the CLI's source under tsx.
 * Both run the same code; the build starts in a third of the CPU (no TypeScript loader in the process and
 * in each of its worker threads). `TEST_COMPILED=0` forces the sources.
 */
const compiled = process.env.LEADATLAS_COMPILED_WORKERS ?? (process.env.TEST_COMPILED !== '0' && distIsCurrent() ? '1' : '0');
const cliArgs: (args: string[]) => string[] =
  compiled === '1'
    ? (args) => [join(repoRoot, 'dist/cli/main.js'), ...args]
    : (args) => ['--import', 'tsx', join(repoRoot, 'src/cli/main.ts'), ...args];

/** The command line (`node` and its arguments) that runs `leadatlas ARGS…` as the tests do. */
export function cliCommand(args: string[]): [string, string[]] {
  return [process.execPath, cliArgs(args)];
}
// No opening-hours or trust pass in the background unless a test asks for it (as `buildTestApp` does): it
// would spend the CPU the other test files share. One server process unless a test asks for more.
const cliEnv = (env: Record<string, string>) => ({
  ...process.env,
  LOG_LEVEL: 'warn',
  OPENING_HOURS_CHECK_MS: '0',
  TRUST_POLL_MS: '0',
  WEB_CONCURRENCY: '1',
  ...env,
});

/** `leadatlas ARGS…` in a process of its own (`serve`, an import to kill), with `env` over this process's. */
export function spawnCli(args: string[], env: Record<string, string>, stdio: StdioOptions = 'pipe'): ChildProcess {
  return spawn(process.execPath, cliArgs(args), { cwd: repoRoot, env: cliEnv(env), stdio });
}

/** `leadatlas ARGS…` run to its end: status, stdout and stderr as text. */
export function runCli(args: string[], env: Record<string, string>, timeoutMs = 180_000): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, cliArgs(args), { cwd: repoRoot, env: cliEnv(env), encoding: 'utf8', timeout: timeoutMs });
}

/**
 * `leadatlas ARGS…` run to its end without blocking this process, for a run that asks a server living in the
 * test's own process (a DNS server, a web): `runCli` would hold the event loop while it waits.
 */
export async function runCliAsync(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 180_000,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(args, env, ['ignore', 'pipe', 'pipe']);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [status] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { status, stdout, stderr };
}

/** A TCP port free on 127.0.0.1 a moment ago, for a server the test starts. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

export interface RunningImport {
  child: ChildProcess;
  /** Exit code and signal, once the process has ended. */
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  /** What it wrote to stderr so far. */
  stderr(): string;
}

/**
 * `leadatlas import FILE` through the CLI (under tsx) against the database at `url`, in a process of its
 * own, for a test that kills it mid-import: a small batch size gives many commits to cut between.
 */
export function startCliImport(file: string, url: string, batchSize = 10): RunningImport {
  const child = spawnCli(['import', file, '--batch-size', String(batchSize)], { DATABASE_URL: url, LOG_LEVEL: 'error' }, [
    'ignore',
    'ignore',
    'pipe',
  ]);
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  return { child, exited, stderr: () => stderr };
}
