import { threadId } from 'node:worker_threads';
import { sql } from 'kysely';
import type { Db } from './database.ts';

/** Read tasks for read-pool.test.ts: where they run, failing, crashing the thread, holding it. */
export const readTasks = {
  where: async (_db: Db) => threadId,
  sum: async (db: Db, a: number, b: number) => (await sql<{ n: number }>`select ${a} + ${b} as n`.execute(db.kysely)).rows[0]!.n,
  fail: async (_db: Db, message: string) => {
    throw new RangeError(message);
  },
  crash: async (_db: Db) => process.exit(3),
  hold: async (_db: Db, ms: number) => {
    const end = Date.now() + ms;
    while (Date.now() < end);
    return threadId;
  },
};
