import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

export interface PriorityResult {
  /** The nice value asked for. */
  nice: number;
  /** Threads whose priority was set (on Linux every thread of the process; elsewhere the process). */
  threads: number;
  /** Why it could not be set, when it could not (a value below the current one needs CAP_SYS_NICE). */
  error?: string;
}

/**
 * Lowers this process's CPU priority to `nice` (0–19; higher is lower priority), for a background process
 * that shares its cores with the API. On Linux a nice value belongs to a thread, and `os.setPriority(0, …)`
 * changes only the calling one: V8's helper threads and libuv's pool, started before, would keep theirs.
 * So each thread of `/proc/self/task` is set by its id; threads started later (worker threads, libuv's
 * pool) inherit it from the thread that starts them. Elsewhere the process's priority is set. A nice value
 * below the current one is not tried (that needs privileges): the priority is only ever lowered. A nice value
 * orders the threads of one scheduling group (a systemd unit's cgroup, a login session's autogroup) and not
 * groups against each other: deploy/README.md says how the units set CPUWeight for that.
 */
export function lowerPriority(nice: number): PriorityResult {
  if (nice <= getPriority(0)) return { nice, threads: 0 };
  let tids: number[] = [];
  if (process.platform === 'linux') {
    try {
      tids = readdirSync('/proc/self/task').map(Number);
    } catch {
      tids = [];
    }
  }
  try {
    if (tids.length === 0) {
      setPriority(0, nice);
      return { nice, threads: 1 };
    }
    let threads = 0;
    for (const tid of tids) {
      try {
        setPriority(tid, nice);
        threads++;
      } catch {
        // A thread that ended since the directory was read.
      }
    }
    return { nice, threads };
  } catch (error) {
    return { nice, threads: 0, error: error instanceof Error ? error.message : String(error) };
  }
}

/** The nice value of each thread of this process (Linux), by thread id: for tests and diagnostics. */
export function threadNiceValues(): number[] {
  if (process.platform !== 'linux') return [getPriority(0)];
  return readdirSync('/proc/self/task').map((tid) => {
    try {
      return getPriority(Number(tid));
    } catch {
      return Number.NaN;
    }
  });
}
