import { workerData } from 'node:worker_threads';
import { openDatabase, type Db } from './database.ts';
import type { ReadTasks } from './read-pool.ts';

/** One read-pool thread: a read-only connection and the task module, then one call per message. */
const { url, tasksModule } = workerData as { url: string; tasksModule: string };
const db = openDatabase(url, { readonly: true });
const { readTasks } = (await import(tasksModule)) as { readTasks: ReadTasks };

export default function runReadTask({ task, args }: { task: string; args: unknown[] }): Promise<unknown> {
  const fn = readTasks[task] as ((db: Db, ...a: unknown[]) => Promise<unknown>) | undefined;
  if (!fn) throw new Error(`unknown read task ${task}`);
  return fn(db, ...args);
}
