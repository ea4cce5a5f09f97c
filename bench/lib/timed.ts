import { type SpawnSyncOptions, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** GNU time (Debian package `time`): the peak resident memory of a command and all it waits for. */
const GNU_TIME = '/usr/bin/time';
const MARK = 'BENCH_TIMED';

export type Timed = { seconds: number; peakRssMB: number; cpuSeconds: number; stdout: string; stderr: string } | { error: string };

/**
 * Runs a command to its end: wall-clock seconds from spawn to exit, its peak RSS (the largest of the
 * process and of each child it waited for, as the kernel counts it for `getrusage`) and its CPU time (user
 * and system). A process that another one serves (PostgreSQL's backends for osm2pgsql or for an import
 * into PostgreSQL) is not counted.
 */
export function timed(command: string, args: string[], options: SpawnSyncOptions = {}): Timed {
  if (!existsSync(GNU_TIME)) return { error: `${GNU_TIME} is missing (Debian package time)` };
  const started = performance.now();
  const run = spawnSync(GNU_TIME, ['-f', `${MARK} %M %U %S`, command, ...args], { encoding: 'utf8', maxBuffer: 1 << 28, ...options });
  const seconds = (performance.now() - started) / 1000;
  const stdout = String(run.stdout ?? '');
  const stderr = String(run.stderr ?? '');
  if (run.error) return { error: `${command} could not run: ${run.error.message}` };
  const mark = stderr.lastIndexOf(MARK);
  if (run.status !== 0 || mark < 0)
    return { error: `${command} failed (status ${run.status}): ${(stderr || stdout).trim().split('\n').slice(-5).join(' ')}` };
  const [peakKiB, user, system] = stderr
    .slice(mark + MARK.length)
    .trim()
    .split(/\s+/)
    .map(Number);
  return { seconds, peakRssMB: peakKiB! / 1024, cpuSeconds: user! + system!, stdout, stderr: stderr.slice(0, mark) };
}
