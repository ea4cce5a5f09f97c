import { type RawBuilder, type SqlBool, sql } from 'kysely';
import { AppError } from '../errors.ts';
import type { Db } from './database.ts';
import { budgetMarker, deadlines } from './deadline.ts';
import { byDialect } from './dialect.ts';

export { budgetChecks, registerBudgetFunction } from './deadline.ts';

/**
 * A time budget for the reads of one request (`SEARCH_TIME_BUDGET_MS`). The deadline travels with the
 * request's async context (AsyncLocalStorage), into the read pool's threads with each task, and into the
 * SQL:
 *
 * - SQLite cannot interrupt a statement from outside, but it calls JavaScript functions from inside one:
 *   the queries of a search carry `rowBudget(id)`, a term that calls `la_budget` on one row in
 *   `rowBudgetStride` and throws once the deadline has passed, which ends the statement at once. The
 *   term is placed where rows are examined (the text index's rows, the area index's rows, the places
 *   read), so it also counts them (`budgetChecks`, for tests and benches).
 * - PostgreSQL cancels a statement itself: the reads of a task run in a transaction with
 *   `statement_timeout` set to what is left of the budget (`withStatementBudget`).
 *
 * Either way the request answers 503 `time_budget_exceeded` (problem+json) and the server goes on.
 */

/** Rows examined between two checks of the deadline (a power of two: the test is `id & (stride - 1)`). */
export const rowBudgetStride = 64;

export const timeBudgetReason = 'time_budget_exceeded';

/** The error of a read that ran past its budget: 503 problem+json naming the budget. */
export function timeBudgetExceeded(budgetMs?: number): AppError {
  return new AppError(
    'time_budget_exceeded',
    `The search ran past its time budget${budgetMs ? ` of ${budgetMs} ms` : ''} and was stopped. Narrow it (a city, a type, a smaller bbox or near radius, longer words) or retry later.`,
    budgetMs ? { budget_ms: budgetMs } : {},
    { 'retry-after': '1' },
  );
}

/** Whether an error is a read stopped by its budget (ours, or PostgreSQL's statement timeout: SQLSTATE 57014). */
export function isTimeBudgetError(error: unknown): boolean {
  if (error instanceof AppError) return error.code === 'time_budget_exceeded';
  const e = error as { code?: unknown; message?: unknown } | null;
  return e?.code === '57014' || (typeof e?.message === 'string' && e.message.startsWith(budgetMarker));
}

/** Runs `fn` with a deadline `budgetMs` from now, unless an earlier deadline is already running. */
export function withTimeBudget<R>(budgetMs: number, fn: () => R): R {
  const current = deadlines.getStore();
  const deadline = Date.now() + budgetMs;
  return deadlines.run(current !== undefined && current < deadline ? current : deadline, fn);
}

/** Runs `fn` with this deadline (epoch ms): a read thread takes the deadline of the request it works for. */
export function withDeadline<R>(deadline: number | undefined, fn: () => R): R {
  return deadline === undefined ? fn() : deadlines.run(deadline, fn);
}

/**
 * Runs `fn` outside any request's deadline: work a request starts that is not its own, which other requests share
 * and which must not end with the first one's budget (the trust pass a read starts and waits for).
 */
export function withoutDeadline<R>(fn: () => R): R {
  return deadlines.exit(fn);
}

/** The deadline of the running request, if it has one. */
export function currentDeadline(): number | undefined {
  return deadlines.getStore();
}

/** Throws `time_budget_exceeded` when the running request's deadline has passed. */
export function checkTimeBudget(): void {
  const deadline = deadlines.getStore();
  if (deadline !== undefined && Date.now() > deadline) throw timeBudgetExceeded();
}

/** `rowBudget` on SQLite, for SQL that is SQLite's alone (the text index's subqueries). */
export function sqliteRowBudget(id: RawBuilder<unknown>): RawBuilder<SqlBool> {
  return sql<SqlBool>`((${id} & ${sql.lit(rowBudgetStride - 1)}) <> 0 OR la_budget(${id}))`;
}

/**
 * The budget's SQL term for a row whose integer id is `id`: true, checking the deadline on one row in
 * `rowBudgetStride`. On PostgreSQL nothing (the statement timeout does it).
 */
export const rowBudget = byDialect<(id: RawBuilder<unknown>) => RawBuilder<SqlBool>>({
  sqlite: () => sqliteRowBudget,
  postgres: () => () => sql<SqlBool>`TRUE`,
});

/**
 * Runs a read task's queries under the running deadline. SQLite: as they are (their `rowBudget` terms
 * check it). PostgreSQL: in one transaction whose `statement_timeout` is the time left, so the server
 * cancels a statement that runs past it. A deadline already passed fails before any query.
 */
export const withStatementBudget = byDialect<<R>(run: (db: Db) => Promise<R>) => Promise<R>>({
  sqlite: (db) => async (run) => {
    checkTimeBudget();
    try {
      return await run(db);
    } catch (error) {
      throw isTimeBudgetError(error) ? timeBudgetExceeded() : error;
    }
  },
  postgres: (db) => async (run) => {
    const deadline = deadlines.getStore();
    if (deadline === undefined) return run(db);
    checkTimeBudget();
    try {
      return await db.kysely.transaction().execute(async (trx) => {
        const left = Math.max(1, deadline - Date.now());
        await sql`SELECT set_config('statement_timeout', ${`${left}ms`}, true)`.execute(trx);
        return run({ ...db, kysely: trx });
      });
    } catch (error) {
      throw isTimeBudgetError(error) ? timeBudgetExceeded() : error;
    }
  },
});
