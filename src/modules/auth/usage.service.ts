import type { Db } from '../../infra/db/database.ts';
import { isDiskFull } from '../../infra/storage.ts';
import { addUsage, requestsOnDay, type UsageIncrement, usageByDay } from './usage.repository.ts';

/** An account's requests of one day as this process knows them: the database's count when read, plus what it wrote since. */
interface DayTotal {
  day: string;
  stored: number;
  /** Flushes completed when `stored` was read: later flushes add their counts to it. */
  flushesSeen: number;
  fetchedAt: number;
}

/**
 * Counts authenticated API requests per account, UTC day and route, in memory; the counts reach
 * the database in one batch every `flushIntervalMs` and when the app closes, so a request costs
 * a Map update rather than a write.
 *
 * The same counts are the daily request quota (`requestsToday`): the database's total for the day,
 * re-read every `totalTtlMs` to see other processes' requests, plus this process's counts since.
 * A restart forgets nothing but the last unflushed seconds.
 */
export class UsageRecorder {
  private pending = new Map<string, UsageIncrement>();
  /** Unflushed requests per account (today's). */
  private pendingByAccount = new Map<number, number>();
  private readonly totals = new Map<number, DayTotal>();
  private flushesDone = 0;
  private readonly totalTtlMs: number;
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();
  private readonly nowMs: () => number;
  private readonly onError: (error: unknown) => void;

  constructor(
    private readonly db: Db,
    options: { flushIntervalMs?: number; totalTtlMs?: number; onError?: (error: unknown) => void; now?: () => Date } = {},
  ) {
    this.totalTtlMs = options.totalTtlMs ?? 30_000;
    const now = options.now;
    this.nowMs = now ? () => now().getTime() : Date.now;
    this.onError = options.onError ?? (() => {});
    this.timer = setInterval(() => void this.flush().catch(this.onError), options.flushIntervalMs ?? 10_000);
    this.timer.unref();
  }

  record(accountId: number, route: string): void {
    this.count({ accountId, day: this.today(), route }, 1);
  }

  private count(at: Omit<UsageIncrement, 'count'>, count: number): void {
    const key = `${at.accountId}\u0000${at.day}\u0000${at.route}`;
    const entry = this.pending.get(key);
    if (entry) entry.count += count;
    else this.pending.set(key, { ...at, count });
    this.pendingByAccount.set(at.accountId, (this.pendingByAccount.get(at.accountId) ?? 0) + count);
  }

  /** Today's requests of the account when known without a query (read in the last `totalTtlMs`), else undefined. */
  requestsTodayNow(accountId: number): number | undefined {
    const total = this.totals.get(accountId);
    if (!total || total.day !== this.today() || this.nowMs() - total.fetchedAt >= this.totalTtlMs) return undefined;
    return total.stored + (this.pendingByAccount.get(accountId) ?? 0);
  }

  /** Today's (UTC) API requests of the account, this process's unwritten ones included. */
  async requestsToday(accountId: number): Promise<number> {
    const known = this.requestsTodayNow(accountId);
    if (known !== undefined) return known;
    const day = this.today();
    // After the flush in progress, so that its counts are either in the database or still pending.
    await this.flushing;
    const flushesSeen = this.flushesDone;
    const stored = await requestsOnDay(this.db.kysely, accountId, day);
    if (this.totals.size > 10_000) this.totals.clear();
    this.totals.set(accountId, { day, stored, flushesSeen, fetchedAt: this.nowMs() });
    return stored + (this.pendingByAccount.get(accountId) ?? 0);
  }

  private day = { name: '', endsAt: 0 };
  /** The UTC day, recomputed only when it changes (this runs on every API request). */
  private today(): string {
    const now = this.nowMs();
    if (now >= this.day.endsAt || now < this.day.endsAt - 86_400_000) {
      const start = now - (now % 86_400_000);
      this.day = { name: new Date(start).toISOString().slice(0, 10), endsAt: start + 86_400_000 };
    }
    return this.day.name;
  }

  /** Writes the counts gathered so far; flushes run one after another. */
  flush(): Promise<void> {
    const batch = [...this.pending.values()];
    this.pending = new Map();
    this.pendingByAccount = new Map();
    const run = this.flushing.then(async () => {
      let kept = false;
      try {
        await addUsage(this.db.kysely, batch);
      } catch (error) {
        // A full disk is waited out: the counts stay pending for the next flush, once there is room.
        if (isDiskFull(error)) {
          for (const i of batch) this.count(i, i.count);
          kept = true;
        }
        throw error;
      } finally {
        // Written (or lost with a failed write, or pending again): either way no longer in this batch.
        const flush = ++this.flushesDone;
        if (!kept)
          for (const i of batch) {
            const total = this.totals.get(i.accountId);
            if (total && total.day === i.day && total.flushesSeen < flush) total.stored += i.count;
          }
      }
    });
    this.flushing = run.catch(() => {});
    return run;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}

/** Requests per UTC day over the last `days` days (today included), zero-filled for the dashboard chart. */
export async function dailyUsage(
  db: Db,
  accountId: number,
  days: number,
  now: Date = new Date(),
): Promise<Array<{ day: string; count: number }>> {
  const dayList: string[] = [];
  for (let i = days - 1; i >= 0; i--) dayList.push(new Date(now.getTime() - i * 86_400_000).toISOString().slice(0, 10));
  const rows = await usageByDay(db.kysely, accountId, dayList[0] ?? '', dayList[dayList.length - 1] ?? '');
  const byDay = new Map(rows.map((r) => [r.day, Number(r.count)]));
  return dayList.map((day) => ({ day, count: byDay.get(day) ?? 0 }));
}
