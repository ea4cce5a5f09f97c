import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';

const repoRoot = resolve(import.meta.dirname, '../..');

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
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'import', file, '--batch-size', String(batchSize)], {
    cwd: repoRoot,
    env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'error' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  return { child, exited, stderr: () => stderr };
}
