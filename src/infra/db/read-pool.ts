import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { AppError } from '../errors.ts';
import { jsonOf } from '../json.ts';
import { Lru } from '../lru.ts';
import type { Db } from './database.ts';
import { currentDeadline, timeBudgetExceeded, withDeadline, withStatementBudget } from './time-budget.ts';

/**
 * Database reads off the event loop. better-sqlite3 is synchronous: a full-text query run on the main
 * thread stalls every other request for as long as it runs. A small pool of worker threads, each with its own
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
  /** Answers served from the cache and computed, when a cache is configured. */
  readonly cacheStats?: { readonly hits: number; readonly misses: number };
  /** The time budget of a task run outside any request's budget (`withTimeBudget`), in ms; undefined: none. */
  readonly budgetMs: number | undefined;
  /** Threads stopped because their task ran past its deadline (and replaced). */
  readonly stoppedThreads?: number;
  close(): Promise<void>;
}

export interface ReadPoolOptions<T extends ReadTasks> {
  db: Db;
  workers: number;
  tasks: T;
  /** The module that exports `createReadTasks()`, which makes `tasks` for each worker thread to run. */
  tasksModule: URL;
  /** Remember the answers of some tasks while the data they read has not changed (see `ReadCache`). */
  cache?: ReadCacheOptions<T>;
  /**
   * Time budget in ms of a task run outside a request's own budget (see `time-budget.ts`). A task past
   * its deadline fails with `time_budget_exceeded`; a thread that does not answer `stuckGraceMs` after
   * the deadline is stopped and replaced.
   */
  budgetMs?: number;
}

export interface ReadCacheOptions<T extends ReadTasks> {
  /** Answers kept, least recently used dropped first; 0 turns the cache off. */
  entries: number;
  /** Tasks whose answer depends only on their arguments and on the data `version` stands for. */
  tasks: ReadonlyArray<keyof T & string>;
  /**
   * A value that moves whenever the data a call reads changes (read on every cached call, so it must be
   * cheap); given the call, for data that only some calls read.
   */
  version: (task: string, args: readonly unknown[]) => Promise<number | string>;
}

/**
 * Answers of pure read tasks, kept per data version. The same popular search from many clients (a kind
 * of business in a big city, a common name) is computed once per change of the catalog instead of once
 * per request; a change moves the version and every older answer stops being used. Concurrent identical
 * calls share one computation. Answers are shared between callers: they must not be mutated.
 */

/**
 * A read asked for, or still queued, while the server shuts down: 503 with Retry-After (a load balancer's
 * retry reaches another node), not an unhandled 500.
 */
const shuttingDown = (): AppError =>
  new AppError('unavailable', 'The server is shutting down; retry in a moment', { reason: 'shutting_down' }, { 'retry-after': '1' });

export class ReadCache {
  private readonly answers: Lru<string, { version: number | string; answer: Promise<unknown> }>;
  hits = 0;
  misses = 0;

  constructor(
    entries: number,
    private readonly version: () => Promise<number | string>,
  ) {
    this.answers = new Lru(entries);
  }

  async get(key: string, compute: () => Promise<unknown>, version = this.version): Promise<unknown> {
    const current = await version();
    const found = this.answers.get(key);
    if (found && found.version === current) {
      this.hits++;
      return found.answer;
    }
    this.misses++;
    const answer = compute();
    this.answers.set(key, { version: current, answer });
    // A failure is not an answer: the next call tries again.
    answer.catch(() => {
      if (this.answers.get(key)?.answer === answer) this.answers.delete(key);
    });
    return answer;
  }
}

/** The task and its arguments as text; objects through `jsonOf` (arguments are never changed once made). */
function cacheKey(task: string, args: readonly unknown[]): string {
  let key = task;
  for (const a of args) key += `\u0000${a !== null && typeof a === 'object' ? jsonOf(a) : JSON.stringify(a)}`;
  return key;
}

function withCache<T extends ReadTasks>(pool: ReadPool<T>, options: ReadCacheOptions<T> | undefined): ReadPool<T> {
  if (!options || options.entries <= 0) return pool;
  const cache = new ReadCache(options.entries, () => options.version('', []));
  const cached = new Set<string>(options.tasks);
  return {
    threads: pool.threads,
    budgetMs: pool.budgetMs,
    get stoppedThreads() {
      return pool.stoppedThreads;
    },
    cacheStats: cache,
    run: (task, ...args) =>
      cached.has(task)
        ? (cache.get(
            cacheKey(task, args),
            () => pool.run(task, ...args),
            () => options.version(task, args),
          ) as never)
        : pool.run(task, ...args),
    close: () => pool.close(),
  };
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
const maxRestarts = 5;
/**
 * How long after its deadline a thread may take to answer before it is stopped: the SQL checks the
 * deadline every few rows (`rowBudget`), so only a step without such rows (a sort, a text index's doclist)
 * can outlast it. A stopped thread ends once it runs JavaScript again.
 */
export const stuckGraceMs = 1000;

/** The deadline a task runs under: the request's, else `budgetMs` from now, else none. */
function taskDeadline(budgetMs: number | undefined): number | undefined {
  return currentDeadline() ?? (budgetMs === undefined ? undefined : Date.now() + budgetMs);
}

export function createReadPool<T extends ReadTasks>(options: ReadPoolOptions<T>): ReadPool<T> {
  return withCache(createUncachedReadPool(options), options.cache);
}

function createUncachedReadPool<T extends ReadTasks>(options: ReadPoolOptions<T>): ReadPool<T> {
  const { db, tasks } = options;
  const { budgetMs } = options;
  if (options.workers === 0 || db.dialect !== 'sqlite' || !db.sqlitePath) {
    const budgeted = withStatementBudget(db);
    return {
      threads: 0,
      budgetMs,
      run: (task, ...args) =>
        withDeadline(taskDeadline(budgetMs), () =>
          budgeted((d) => (tasks[task] as (db: Db, ...a: unknown[]) => Promise<never>)(d, ...args)),
        ),
      close: async () => {},
    };
  }
  const threads = Math.max(1, Math.min(options.workers, availableParallelism() * 2));
  const pool = new ThreadPool(workerFile(), threads, { url: `sqlite:${db.sqlitePath}`, tasksModule: options.tasksModule.href });
  return {
    threads,
    budgetMs,
    get stoppedThreads() {
      return pool.stopped;
    },
    run: (task, ...args) => pool.run(task, args, taskDeadline(budgetMs)) as Promise<never>,
    close: () => pool.close(),
  };
}

/** What a read thread answers for one task (`budget`: the task ran past its deadline), or that it is ready for tasks. */
export type ReadReply = { ok: true; value: unknown } | { ok: false; error: unknown; budget?: boolean } | { ready: true };

/** What the pool sends a read thread: a task, its arguments and the deadline (epoch ms) it runs under. */
export interface ReadRequest {
  task: string;
  args: unknown[];
  deadline: number | undefined;
}

interface Job {
  task: string;
  args: unknown[];
  deadline: number | undefined;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

/**
 * A fixed set of threads, each running one read task at a time, in the order asked, with a bounded queue.
 * This replaced piscina, of which the server used only a fixed-size pool: a piscina thread that cannot
 * start (the database file gone) is reported as an 'error' event of the pool, which crashes a process
 * that does not listen for it, and is started again without end; here its reads fail with the cause and,
 * after `maxRestarts` such threads in a row, the pool stops trying. A thread that dies while running a
 * task is replaced; only that task fails. (It also holds a few MB less per thread: bench:memory.)
 */
export class ThreadPool {
  private readonly idle: Worker[] = [];
  private readonly running = new Map<Worker, Job | null>();
  private readonly queue: Job[] = [];
  private closing = false;
  /** Threads that stopped since a task last succeeded; past `maxRestarts` the pool gives up. */
  private restarts = 0;
  private broken: unknown;
  /** Threads told to stop for running past a deadline, until they have stopped. */
  private readonly stopping = new Set<Worker>();
  private readonly timers = new Map<Worker, NodeJS.Timeout>();
  /** Threads that have loaded their modules. */
  private readonly ready = new WeakSet<Worker>();
  /** Threads stopped for running past a deadline since the pool started. */
  stopped = 0;

  constructor(
    private readonly file: string,
    private readonly size: number,
    private readonly workerData: unknown,
  ) {
    for (let i = 0; i < size; i++) this.spawn();
  }

  run(task: string, args: unknown[], deadline?: number): Promise<unknown> {
    if (this.closing) return Promise.reject(shuttingDown());
    if (this.broken !== undefined) return Promise.reject(this.broken);
    // Beyond this the service is overloaded: 503 with Retry-After.
    if (this.queue.length >= maxQueuedReads) {
      return Promise.reject(
        new AppError('unavailable', 'Too many searches are waiting for the database; retry in a moment', {}, { 'retry-after': '1' }),
      );
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ task, args, deadline, resolve, reject });
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    for (const job of this.queue.splice(0)) job.reject(shuttingDown());
    for (const w of this.stopping) void w.terminate();
    await Promise.all([...this.running.keys()].map((w) => w.terminate()));
  }

  private spawn(): void {
    // A task's garbage is one query's rows: a young generation of 8 MB (V8 grows it to 32 MB or more
    // under load) keeps each thread's resident memory down.
    const worker = new Worker(this.file, { workerData: this.workerData, resourceLimits: { maxYoungGenerationSizeMb: 8 } });
    this.running.set(worker, null);
    this.idle.push(worker);
    worker.on('message', (reply: ReadReply) => {
      // A thread's start-up (loading its modules) does not count against the budget of a task sent meanwhile:
      // its timer starts now. (The task itself still fails if its deadline passed while it waited.)
      if ('ready' in reply) {
        this.ready.add(worker);
        const waiting = this.running.get(worker);
        if (waiting) this.startTimer(worker, waiting);
        return;
      }
      const job = this.running.get(worker);
      if (!job) return;
      this.clearTimer(worker);
      this.running.set(worker, null);
      this.idle.push(worker);
      this.restarts = 0;
      if (reply.ok) job.resolve(reply.value);
      else job.reject(reply.budget ? timeBudgetExceeded() : reply.error);
      this.dispatch();
    });
    // An uncaught error ends the thread: its task fails now, and it takes no other ('exit' replaces it).
    let failure: unknown;
    worker.on('error', (error) => {
      failure = error;
      const job = this.running.get(worker);
      this.running.set(worker, null);
      this.forget(worker);
      job?.reject(error);
    });
    worker.on('exit', (code) => {
      this.clearTimer(worker);
      if (this.stopping.delete(worker)) {
        // Stopped for its deadline (its task already failed): replaced now if it was not yet.
        if (!this.closing && this.running.size < this.size) {
          this.spawn();
          this.dispatch();
        }
        return;
      }
      // Stopped by close(): its read fails as the server's shutdown, not as a broken thread.
      failure ??= this.closing ? shuttingDown() : new Error(`a read thread stopped (exit code ${code})`);
      const job = this.running.get(worker);
      this.running.delete(worker);
      this.forget(worker);
      job?.reject(failure);
      if (this.closing) return;
      if (++this.restarts <= maxRestarts) {
        this.spawn();
        this.dispatch();
      } else if (this.running.size === 0) {
        // Threads that cannot even start: fail fast rather than start them again forever.
        this.broken = failure;
        for (const queued of this.queue.splice(0)) queued.reject(failure);
      }
    });
  }

  private forget(worker: Worker): void {
    const at = this.idle.indexOf(worker);
    if (at >= 0) this.idle.splice(at, 1);
  }

  private dispatch(): void {
    while (this.idle.length > 0 && this.queue.length > 0) {
      const job = this.queue.shift()!;
      // A task that waited in the queue past its deadline is not started.
      if (job.deadline !== undefined && Date.now() > job.deadline) {
        job.reject(timeBudgetExceeded());
        continue;
      }
      const worker = this.idle.pop()!;
      this.running.set(worker, job);
      if (this.ready.has(worker)) this.startTimer(worker, job);
      // Messages sent before the thread has loaded its modules wait on its port.
      worker.postMessage({ task: job.task, args: job.args, deadline: job.deadline } satisfies ReadRequest);
    }
  }

  private startTimer(worker: Worker, job: Job): void {
    if (job.deadline === undefined) return;
    this.timers.set(
      worker,
      setTimeout(() => this.stopStuck(worker), Math.max(0, job.deadline - Date.now()) + stuckGraceMs),
    );
  }

  private clearTimer(worker: Worker): void {
    const timer = this.timers.get(worker);
    if (timer) clearTimeout(timer);
    this.timers.delete(worker);
  }

  /**
   * A thread still running its task well past the task's deadline: the task fails now, the thread is told
   * to stop (it does once it runs JavaScript again: at the next budget check of its SQL, or when the
   * statement ends) and a new one takes its place, unless as many stopped threads are still winding down
   * as the pool has threads (then the replacement waits for one of them to end, so runaway statements
   * cannot take every core).
   */
  private stopStuck(worker: Worker): void {
    this.timers.delete(worker);
    const job = this.running.get(worker);
    if (!job) return;
    this.running.delete(worker);
    this.forget(worker);
    this.stopping.add(worker);
    this.stopped++;
    job.reject(timeBudgetExceeded());
    // Not waited for, even on close: the statement may run on for a while, and the process need not wait for it.
    worker.unref();
    void worker.terminate();
    if (!this.closing && this.stopping.size <= this.size) {
      this.spawn();
      this.dispatch();
    }
  }
}
