import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { AppError } from '../errors.ts';
import type { Db } from './database.ts';

/**
 * Database reads off the event loop. better-sqlite3 is synchronous: a 40 ms full-text query run on the
 * main thread stalls every other request for 40 ms. A small pool of worker threads, each with its own
 * read-only connection to the same SQLite file (WAL lets readers run beside the writer), runs the read
 * tasks instead, and the event loop only waits on a message.
 *
 * Inline (no threads) when `workers` is 0, for `sqlite::memory:` (a worker cannot open it) and for
 * PostgreSQL, whose driver already waits on a socket rather than the CPU.
 */

/** A read task: the Db first, then structured-cloneable arguments; returns plain data. */
export type ReadTask = (db: Db, ...args: never[]) => Promise<unknown>;
export type ReadTasks = Record<string, ReadTask>;

type TaskArgs<F> = F extends (db: Db, ...args: infer A) => Promise<unknown> ? A : never;
type TaskResult<F> = F extends (...args: never[]) => Promise<infer R> ? R : never;

export interface ReadPool<T extends ReadTasks> {
  run<K extends keyof T & string>(task: K, ...args: TaskArgs<T[K]>): Promise<TaskResult<T[K]>>;
  /** Worker threads in use; 0 when tasks run inline. */
  readonly threads: number;
  close(): Promise<void>;
}

export interface ReadPoolOptions<T extends ReadTasks> {
  db: Db;
  workers: number;
  tasks: T;
  /** The module that exports `tasks` as `readTasks`, for the workers to import. */
  tasksModule: URL;
}

/**
 * The worker module: `read-worker.js` beside this file in the compiled build; under TypeScript (tests,
 * tsx) a bootstrap that registers tsx in the thread first (threads do not inherit its loader).
 */
function workerFile(): string {
  const name = import.meta.url.endsWith('.ts') ? './read-worker-tsx.mjs' : './read-worker.js';
  return fileURLToPath(new URL(name, import.meta.url));
}

const maxQueuedReads = 2048;

export function createReadPool<T extends ReadTasks>(options: ReadPoolOptions<T>): ReadPool<T> {
  const { db, tasks } = options;
  if (options.workers === 0 || db.dialect !== 'sqlite' || !db.sqlitePath) {
    return {
      threads: 0,
      run: (task, ...args) => (tasks[task] as (db: Db, ...a: unknown[]) => Promise<never>)(db, ...args),
      close: async () => {},
    };
  }
  const threads = Math.max(1, Math.min(options.workers, availableParallelism() * 2));
  const piscina = new Piscina({
    filename: workerFile(),
    minThreads: threads,
    maxThreads: threads,
    // Queue bursts (every in-flight request may wait here); beyond this the service is overloaded: 503.
    maxQueue: maxQueuedReads,
    idleTimeout: 60_000,
    workerData: { url: `sqlite:${db.sqlitePath}`, tasksModule: options.tasksModule.href },
  });
  return {
    threads,
    run: (task, ...args) =>
      (piscina.run({ task, args }) as Promise<never>).catch((err: unknown) => {
        if (piscina.queueSize >= maxQueuedReads) {
          throw new AppError('unavailable', 'Too many searches are waiting for the database; retry in a moment', {}, { 'retry-after': '1' });
        }
        throw err;
      }),
    close: () => piscina.destroy(),
  };
}
