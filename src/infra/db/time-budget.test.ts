import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { AppError } from '../errors.ts';
import { budgetChecks, rowBudget, rowBudgetStride, withStatementBudget, withTimeBudget } from './time-budget.ts';

const isBudgetError = (e: unknown) => e instanceof AppError && e.code === 'time_budget_exceeded' && e.status === 503;

for (const dialect of dialects) {
  describe(`the time budget on ${dialect.name}`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await dialect.open();
    });
    after(async () => t.dispose());

    // A statement that would run for minutes: the budget stops it (SQLite: the row check; PostgreSQL: statement_timeout).
    const endless = () =>
      sql<{
        n: number;
      }>`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000000000) SELECT count(*) AS n FROM c WHERE ${rowBudget(t.db)(sql`x`)}`;

    test('stops a statement that runs past the deadline, and the connection serves the next one', async () => {
      const budgeted = withStatementBudget(t.db);
      await assert.rejects(
        withTimeBudget(100, () => budgeted((db) => endless().execute(db.kysely))),
        isBudgetError,
      );
      const after = await withTimeBudget(5000, () => budgeted((db) => sql<{ n: number }>`SELECT 1 + 1 AS n`.execute(db.kysely)));
      assert.equal(Number(after.rows[0]!.n), 2);
    });

    test('fails before any query once the deadline has passed', async () => {
      const budgeted = withStatementBudget(t.db);
      let ran = false;
      await assert.rejects(
        withTimeBudget(0, async () => {
          await new Promise((r) => setTimeout(r, 5));
          return budgeted(async () => {
            ran = true;
          });
        }),
        isBudgetError,
      );
      assert.equal(ran, false);
    });

    test('keeps the earlier of two deadlines', async () => {
      const budgeted = withStatementBudget(t.db);
      await assert.rejects(
        withTimeBudget(100, () => withTimeBudget(600_000, () => budgeted((db) => endless().execute(db.kysely)))),
        isBudgetError,
      );
    });
  });
}

describe('the row check on SQLite', () => {
  let t: TestDatabase;
  before(async () => {
    t = await dialects[0]!.open();
  });
  after(async () => t.dispose());

  test('checks one row in rowBudgetStride, so the count says how many rows a statement examined', async () => {
    const before = budgetChecks();
    const n = 64_000;
    await sql`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${n}) SELECT count(*) FROM c WHERE ${rowBudget(t.db)(sql`x`)}`.execute(
      t.db.kysely,
    );
    assert.equal(budgetChecks() - before, n / rowBudgetStride);
  });
});
