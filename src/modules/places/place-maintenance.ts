import type { Db } from '../../infra/db/database.ts';
import { PollLoop } from '../../infra/poll-loop.ts';
import { defaultWindowDays } from './opening-hours.reads.ts';
import { ensureOpeningHours } from './opening-hours.repository.ts';
import { prunePlaceChanges } from './place-changes.repository.ts';

/** How often the change log is pruned (each node does; it is idempotent). */
const PRUNE_EVERY_MS = 10 * 60 * 1000;

export interface PlaceMaintenanceOptions {
  db: Db;
  log?: { warn(obj: unknown, msg: string): void; info(obj: unknown, msg: string): void };
  /** Days ahead the opening-hours pass computes (`OPENING_HOURS_WINDOW_DAYS`); absent: the default. */
  hoursWindowDays?: number;
  /**
   * How often the opening-hours tables are checked against the places version and the day (a pass runs in
   * the background when they are behind: `OPENING_HOURS_CHECK_MS`). Absent or 0: never (the pass runs by
   * `leadatlas hours`, or tests and benches call `keepHoursCurrent`).
   */
  hoursCheckMs?: number;
  /** The clock of the pass's window; absent: the system's. */
  now?: () => number;
  /** After each check of the opening-hours tables, whether or not a pass ran (the search engine reloads what it holds of them). */
  afterHoursCheck?: () => Promise<void>;
}

/**
 * The upkeep of the places' derived tables that a server runs in the background: the opening-hours pass when its
 * tables fall behind the catalog or the day, and the pruning of the change log of places. Started by the app
 * once it is ready, stopped before the database closes.
 */
export class PlaceMaintenance {
  private pruner: PollLoop | undefined;
  private hoursLoop: PollLoop | undefined;
  /** No pass before this instant (`performance.now()`): see `keepHoursCurrent`. */
  private hoursRestUntil = 0;

  constructor(private readonly options: PlaceMaintenanceOptions) {}

  start(): void {
    this.pruner = new PollLoop(
      async () => {
        await prunePlaceChanges(this.options.db);
      },
      PRUNE_EVERY_MS,
      (error) => this.options.log?.warn({ err: error }, 'pruning the change log of places failed'),
    );
    this.pruner.schedule(PRUNE_EVERY_MS);
    const hoursCheckMs = this.options.hoursCheckMs ?? 0;
    if (hoursCheckMs > 0) {
      this.hoursLoop = new PollLoop(
        () => this.keepHoursCurrent(),
        hoursCheckMs,
        (error) => this.options.log?.warn({ err: error }, 'the opening-hours pass failed: open filters answer from the previous one'),
      );
      // Now, in the background: a server that starts behind the catalog (an import while it was down) serves
      // while the pass runs.
      this.hoursLoop.schedule(0);
    }
  }

  /**
   * Runs the opening-hours pass when its tables are behind the places version or the day (an import, a new
   * day), in the background of the server: searches meanwhile answer from the previous pass. Public for
   * tests and benches.
   */
  async keepHoursCurrent(): Promise<void> {
    const started = performance.now();
    if (started >= this.hoursRestUntil) {
      const ran = await ensureOpeningHours(
        this.options.db,
        (this.options.now ?? Date.now)(),
        this.options.hoursWindowDays ?? defaultWindowDays,
      );
      const ms = performance.now() - started;
      if (ran) {
        this.options.log?.info({ ms: Math.round(ms) }, 'opening hours computed');
        // A catalog that changes all the time (`leadatlas follow`) would keep a pass running: between two, the
        // server rests three times as long as the last one took, so passes take at most a quarter of its time.
        this.hoursRestUntil = performance.now() + 3 * ms;
      }
    }
    await this.options.afterHoursCheck?.();
  }

  async close(): Promise<void> {
    await this.hoursLoop?.close();
    await this.pruner?.close();
  }
}
