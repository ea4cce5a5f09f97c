import type { Db } from '../../infra/db/database.ts';
import { PollLoop } from '../../infra/poll-loop.ts';
import { defaultWindowDays, type OpenAt, readHoursState } from './opening-hours.reads.ts';
import { hoursNotReady, hoursReadiness } from './opening-hours.recent.ts';
import { ensureOpeningHours, rebuildOpeningHours, windowDaysOfPass } from './opening-hours.repository.ts';
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
 * once it is ready, stopped before the database closes. A read the opening-hours tables cannot answer (an open
 * filter before the first pass, docs/opening-hours.md) starts the pass at once through it (`passNow`).
 */
export class PlaceMaintenance {
  private pruner: PollLoop | undefined;
  private hoursLoop: PollLoop | undefined;
  /** No pass before this instant (`performance.now()`): see `keepHoursCurrent`. */
  private hoursRestUntil = 0;
  /** The pass `passNow` started, until it ends. */
  private passing: Promise<void> | undefined;
  /** When the last pass (background or `passNow`) started, and how long the last one that ran took (`performance.now()`). */
  private passStartedAt = 0;
  private lastPassMs: number | undefined;

  constructor(private readonly options: PlaceMaintenanceOptions) {}

  /** Days ahead the opening-hours pass computes. */
  get windowDays(): number {
    return this.options.hoursWindowDays ?? defaultWindowDays;
  }

  /** The clock of the pass's window (ms). */
  now(): number {
    return (this.options.now ?? Date.now)();
  }

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
      this.passStartedAt = started;
      const ran = await ensureOpeningHours(this.options.db, this.now(), this.windowDays);
      const ms = performance.now() - started;
      if (ran) {
        this.lastPassMs = ms;
        this.options.log?.info({ ms: Math.round(ms) }, 'opening hours computed');
        // A catalog that changes all the time (`leadatlas follow`) would keep a pass running: between two, the
        // server rests three times as long as the last one took, so passes take at most a quarter of its time.
        this.hoursRestUntil = performance.now() + 3 * ms;
      }
    }
    await this.options.afterHoursCheck?.();
  }

  /**
   * Runs the opening-hours pass now, not after the background check's rest (single-flight with the background
   * pass: `rebuildOpeningHours`), for a read that the tables cannot answer. A failure is logged: the reads waiting
   * for it find the tables still not ready and answer 503 `not_ready`. The caller follows the new pass.
   */
  passNow(): Promise<void> {
    this.passing ??= (async () => {
      this.passStartedAt = performance.now();
      try {
        await rebuildOpeningHours(this.options.db, this.now(), this.windowDays);
        this.lastPassMs = performance.now() - this.passStartedAt;
        this.options.log?.info({ ms: Math.round(this.lastPassMs) }, 'opening hours computed for a read that needed them');
      } catch (error) {
        this.options.log?.warn({ err: error }, 'the opening-hours pass failed: open filters answer 503 not_ready');
      }
    })().finally(() => {
      this.passing = undefined;
    });
    return this.passing;
  }

  /** About how long until the pass under way ends: the last pass's length (`unknownMs` before any) less the time this one has run. */
  passRemainingMs(unknownMs: number): number {
    return (this.lastPassMs ?? unknownMs) - (performance.now() - this.passStartedAt);
  }

  async close(): Promise<void> {
    await this.hoursLoop?.close();
    await this.pruner?.close();
  }
}

/**
 * The open filter a bulk read gives the SQL, answered truly (`hoursReadiness`): the places changed since the
 * opening-hours pass decided directly. When the tables cannot answer the moment (no pass, a window that does not
 * reach it, too many changes since), the pass runs here first and the read waits for it: for reads in the
 * background or in a process with no server's maintenance (`leadatlas enrich --search`). `windowDays`: the window
 * of that pass; absent, the last pass's.
 */
export async function openAnsweredTruly(db: Db, open: OpenAt, windowDays?: number, nowMs = Date.now()): Promise<OpenAt> {
  const state = await readHoursState(db);
  const days = windowDays ?? (state ? windowDaysOfPass(state.window) : defaultWindowDays);
  let readiness = await hoursReadiness(db, open, { nowMs, windowDays: days, state });
  if (!readiness.ready) {
    await rebuildOpeningHours(db, nowMs, days);
    readiness = await hoursReadiness(db, open, { nowMs, windowDays: days });
  }
  if (!readiness.ready) throw hoursNotReady(readiness, 1);
  return readiness.open;
}
