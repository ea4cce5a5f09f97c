import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

/** Polls until `check` answers a value; fails after `limitMs` (a deadline for a hung job, not a timing assertion). */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, limitMs = 60_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
