import { parentPort, workerData } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';
import { Lru } from '../lru.ts';
import { type Db, openDatabase, sqliteCacheSizes } from './database.ts';
import type { ReadReply, ReadRequest, ReadTasks } from './read-pool.ts';
import { isTimeBudgetError, withDeadline, withStatementBudget } from './time-budget.ts';

/** One read-pool thread: a read-only connection and the task module, then one task per message, answered with a `ReadReply`. */
const { url, tasksModule } = workerData as { url: string; tasksModule: string };
const db = openDatabase(url, { readonly: true, cacheKiB: sqliteCacheSizes.reader });
cacheStatements(db.sqlite!, 200);
// The module makes the thread's tasks (`createReadTasks`), so whatever they remember is this thread's.
const readTasks = ((await import(tasksModule)) as { createReadTasks: () => ReadTasks }).createReadTasks();

/**
 * Kysely prepares every query anew; a search's SQL text repeats with new parameters, and preparing a
 * page query over a type with subcategories costs more than running it. A thread runs one task at a
 * time and its tasks read whole results (no open iterators), so a prepared statement is never busy
 * when it is reused.
 */
function cacheStatements(handle: SQLite.Database, size: number): void {
  const prepare = handle.prepare.bind(handle);
  const cache = new Lru<string, SQLite.Statement>(size);
  handle.prepare = ((source: string) => cache.getOrSet(source, () => prepare(source))) as typeof handle.prepare;
}

const budgeted = withStatementBudget(db);

async function runReadTask(task: string, args: unknown[], deadline: number | undefined): Promise<unknown> {
  const fn = readTasks[task] as ((db: Db, ...a: unknown[]) => Promise<unknown>) | undefined;
  if (!fn) throw new Error(`unknown read task ${task}`);
  return withDeadline(deadline, () => budgeted((d) => fn(d, ...args)));
}

parentPort!.postMessage({ ready: true } satisfies ReadReply);

// One task at a time (the pool sends the next once this one is answered).
parentPort!.on('message', ({ task, args, deadline }: ReadRequest) => {
  runReadTask(task, args, deadline).then(
    (value) => parentPort!.postMessage({ ok: true, value } satisfies ReadReply),
    (error: unknown) => {
      // The pool makes its own error of it: an AppError does not cross threads as one.
      if (isTimeBudgetError(error)) {
        parentPort!.postMessage({ ok: false, error: null, budget: true } satisfies ReadReply);
        return;
      }
      try {
        parentPort!.postMessage({ ok: false, error } satisfies ReadReply);
      } catch {
        // An error that cannot be copied to the other thread: its name and message can.
        const { name, message } = error instanceof Error ? error : new Error(String(error));
        parentPort!.postMessage({ ok: false, error: Object.assign(new Error(message), { name }) } satisfies ReadReply);
      }
    },
  );
});
