import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { threadId } from 'node:worker_threads';
import { readTasks } from '../../../test/fixtures/read-pool-tasks.ts';
import { openTestSqlite, type TestDatabase } from '../../../test/helpers/databases.ts';
import { openDatabase } from './database.ts';
import { createReadPool, type ReadPool } from './read-pool.ts';
import { withTimeBudget } from './time-budget.ts';

const tasksModule = new URL('../../../test/fixtures/read-pool-tasks.ts', import.meta.url);

describe('the read pool', () => {
  let t: TestDatabase;
  let pool: ReadPool<typeof readTasks>;
  before(() => {
    t = openTestSqlite();
    pool = createReadPool({ db: t.db, workers: 2, tasks: readTasks, tasksModule });
  });
  after(async () => {
    await pool.close();
    await t.dispose();
  });

  test('runs tasks on threads of its own, two at once, with their arguments', async () => {
    assert.equal(pool.threads, 2);
    assert.equal(await pool.run('sum', 2, 3), 5);
    const [a, b] = await Promise.all([pool.run('hold', 300), pool.run('hold', 300)]);
    assert.notEqual(a, threadId);
    assert.notEqual(b, threadId);
    assert.notEqual(a, b, 'two held tasks ran on the same thread');
  });

  test("passes a task's error to its caller, and goes on", async () => {
    await assert.rejects(pool.run('fail', 'no such thing'), { name: 'RangeError', message: 'no such thing' });
    assert.equal(await pool.run('sum', 1, 1), 2);
  });

  test('replaces a thread that stops, failing only its task', async () => {
    const held = pool.run('hold', 200);
    await assert.rejects(pool.run('crash'), /exit code 3/);
    assert.ok((await held) > 0);
    const ids = await Promise.all([pool.run('hold', 100), pool.run('hold', 100), pool.run('sum', 4, 4)]);
    assert.equal(ids[2], 8);
  });

  test('answers 503 unavailable once 2,048 reads are waiting', async () => {
    const one = createReadPool({ db: t.db, workers: 1, tasks: readTasks, tasksModule });
    try {
      const held = one.run('hold', 300);
      const queued = Array.from({ length: 2048 }, (_, i) => one.run('sum', i, 1));
      await assert.rejects(one.run('sum', 0, 0), (err: { code?: string; status?: number }) => err.code === 'unavailable');
      await held;
      assert.deepEqual((await Promise.all(queued)).slice(0, 3), [1, 2, 3]);
    } finally {
      await one.close();
    }
  });

  test('on close, reads running, waiting and asked for afterwards fail with 503 unavailable, not a bare error', async () => {
    const one = createReadPool({ db: t.db, workers: 1, tasks: readTasks, tasksModule });
    await one.run('sum', 1, 1);
    const held = one.run('hold', 200);
    const waiting = one.run('sum', 2, 2);
    const closed = one.close();
    const unavailable = (err: { code?: string; status?: number; headers?: Record<string, string> }) =>
      err.code === 'unavailable' && err.status === 503 && err.headers?.['retry-after'] === '1';
    const [running, queued] = await Promise.allSettled([held, waiting]);
    for (const [what, outcome] of [
      ['the read its thread was running', running],
      ['the read waiting for a thread', queued],
    ] as const) {
      assert.ok(outcome.status === 'rejected' && unavailable(outcome.reason as never), `${what}: ${JSON.stringify(outcome)}`);
    }
    await assert.rejects(one.run('sum', 3, 3), unavailable);
    await closed;
  });

  test('fails each read with the cause, and stops starting threads, when they cannot open the database', async () => {
    const missing = openTestSqlite();
    const db = { ...missing.db, sqlitePath: `${missing.path}.gone/none.db` };
    const broken = createReadPool({ db, workers: 1, tasks: readTasks, tasksModule });
    try {
      await assert.rejects(broken.run('sum', 1, 2), /Cannot open database because the directory does not exist/);
      // No thread is left trying: the next read fails at once, with the same cause.
      await assert.rejects(broken.run('sum', 1, 2), /Cannot open database because the directory does not exist/);
    } finally {
      await broken.close();
      await missing.dispose();
    }
  });

  test('stops a statement that runs past its budget from inside SQLite: 503 time_budget_exceeded, the thread kept', async () => {
    const budgeted = createReadPool({ db: t.db, workers: 1, tasks: readTasks, tasksModule });
    try {
      assert.equal(await budgeted.run('countChecked', 1000), 1000);
      await assert.rejects(
        withTimeBudget(50, () => budgeted.run('countChecked', 1e10)),
        (err: { code?: string; status?: number }) => err.code === 'time_budget_exceeded' && err.status === 503,
      );
      assert.equal(budgeted.stoppedThreads, 0, 'the statement failed and the thread answered');
      assert.equal(await budgeted.run('sum', 2, 2), 4);
    } finally {
      await budgeted.close();
    }
  });

  test('stops and replaces a thread whose statement runs past its budget without checks, and serves meanwhile', async () => {
    const budgeted = createReadPool({ db: t.db, workers: 1, tasks: readTasks, tasksModule });
    try {
      assert.equal(await budgeted.run('sum', 1, 1), 2);
      // Seconds of native SQLite work that calls no JavaScript: only stopping the thread ends the wait.
      await assert.rejects(
        withTimeBudget(50, () => budgeted.run('countUnchecked', 3e7)),
        (err: { code?: string }) => err.code === 'time_budget_exceeded',
      );
      assert.equal(budgeted.stoppedThreads, 1);
      // The replacement thread answers while the stopped one is still inside its statement.
      assert.equal(await budgeted.run('sum', 3, 4), 7);
    } finally {
      await budgeted.close();
    }
  });

  test("gives a task run outside any request the pool's own budget", async () => {
    const budgeted = createReadPool({ db: t.db, workers: 1, tasks: readTasks, tasksModule, budgetMs: 50 });
    try {
      assert.equal(budgeted.budgetMs, 50);
      await assert.rejects(budgeted.run('countChecked', 1e10), (err: { code?: string }) => err.code === 'time_budget_exceeded');
    } finally {
      await budgeted.close();
    }
  });

  test('applies the budget inline too (no threads)', async () => {
    const inline = createReadPool({ db: openDatabase(t.db.url), workers: 0, tasks: readTasks, tasksModule, budgetMs: 50 });
    try {
      await assert.rejects(inline.run('countChecked', 1e10), (err: { code?: string }) => err.code === 'time_budget_exceeded');
      assert.equal(await inline.run('sum', 1, 2), 3);
    } finally {
      await inline.close();
    }
  });

  test('runs tasks inline when asked for no threads', async () => {
    const inline = createReadPool({ db: openDatabase(t.db.url), workers: 0, tasks: readTasks, tasksModule });
    assert.equal(inline.threads, 0);
    assert.equal(await inline.run('where'), threadId);
    await inline.close();
  });
});
