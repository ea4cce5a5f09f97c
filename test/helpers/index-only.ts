import type { ReadPool } from '../../src/infra/db/read-pool.ts';
import type { ApiReadTasks } from '../../src/modules/search/read-tasks.ts';

/**
 * The read pool with only the engine's own read (a page's rows by id) allowed: a search the engine hands to SQL
 * throws, naming the task. The parity tests give it to the engine whose answers they compare, so that an answer
 * that came from SQL cannot pass for the index's.
 */
export function indexOnly(reads: ReadPool<ApiReadTasks>): ReadPool<ApiReadTasks> {
  return new Proxy(reads, {
    get(target, name, receiver) {
      if (name !== 'run') return Reflect.get(target, name, receiver);
      return (task: string, ...args: unknown[]) => {
        if (task !== 'placesByIds') throw new Error(`the engine handed ${task} to SQL`);
        return (target.run as (task: string, ...args: unknown[]) => unknown)(task, ...args);
      };
    },
  });
}
