import { AsyncLocalStorage } from 'node:async_hooks';
import type SQLite from 'better-sqlite3';

/**
 * The deadline of the running request (epoch ms), carried by its async context, and the SQLite function
 * that checks it from inside a statement. The rest of the time budget is in `time-budget.ts`; this part
 * stands alone because every connection `openDatabase` makes registers the function.
 */
export const deadlines = new AsyncLocalStorage<number>();

/** The message of a budget error thrown inside SQLite (the driver passes it on as a plain Error). */
export const budgetMarker = 'la_budget: ';

let checks = 0;

/** How many times this thread's SQL checked the deadline: rows examined ≈ this × `rowBudgetStride`. */
export function budgetChecks(): number {
  return checks;
}

/**
 * `la_budget(id)`: 1, or an error once the deadline has passed, which stops the statement there (SQLite
 * cannot be interrupted from outside; a function it calls can fail).
 */
export function registerBudgetFunction(handle: SQLite.Database): void {
  handle.function('la_budget', { deterministic: false }, (_id: unknown) => {
    checks++;
    const deadline = deadlines.getStore();
    if (deadline !== undefined && Date.now() > deadline) throw new Error(`${budgetMarker}the deadline passed`);
    return 1;
  });
}
