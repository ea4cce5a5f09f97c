import type { Db } from '../../infra/db/database.ts';
import { addUsage, usageByDay, type UsageIncrement } from './usage.repository.ts';

/**
 * Counts authenticated API requests per account, UTC day and route, in memory; the counts reach
 * the database in one batch every `flushIntervalMs` and when the app closes, so a request costs
 * a Map update rather than a write.
 */
export class UsageRecorder {
  private pending = new Map<string, UsageIncrement>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();
  private readonly nowMs: () => number;
  private readonly onError: (error: unknown) => void;

  constructor(
    private readonly db: Db,
    options: { flushIntervalMs?: number; onError?: (error: unknown) => void; now?: () => Date } = {},
  ) {
    const now = options.now;
    this.nowMs = now ? () => now().getTime() : Date.now;
    this.onError = options.onError ?? (() => {});
    this.timer = setInterval(() => void this.flush().catch(this.onError), options.flushIntervalMs ?? 10_000);
    this.timer.unref();
  }

  record(accountId: number, route: string): void {
    const day = this.today();
    const key = `${accountId}\u0000${day}\u0000${route}`;
    const entry = this.pending.get(key);
    if (entry) entry.count += 1;
    else this.pending.set(key, { accountId, day, route, count: 1 });
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
    const run = this.flushing.then(() => addUsage(this.db.kysely, batch));
    this.flushing = run.catch(() => {});
    return run;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}

/** Requests per UTC day over the last `days` days (today included), zero-filled for the dashboard chart. */
export async function dailyUsage(db: Db, accountId: number, days: number, now: Date = new Date()): Promise<Array<{ day: string; count: number }>> {
  const dayList: string[] = [];
  for (let i = days - 1; i >= 0; i--) dayList.push(new Date(now.getTime() - i * 86_400_000).toISOString().slice(0, 10));
  const rows = await usageByDay(db.kysely, accountId, dayList[0] ?? '', dayList[dayList.length - 1] ?? '');
  const byDay = new Map(rows.map((r) => [r.day, Number(r.count)]));
  return dayList.map((day) => ({ day, count: byDay.get(day) ?? 0 }));
}
