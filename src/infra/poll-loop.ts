/**
 * A queue poller's loop: `round` runs now and then every `pollMs` after the previous one ended, never two
 * at once, or sooner when `schedule(ms)` asks (something was just queued here). Its timer never keeps the
 * process alive; `close()` stops scheduling and waits for the round in progress.
 */
export class PollLoop {
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly round: () => Promise<void>,
    private readonly pollMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  get closed(): boolean {
    return this.stopped;
  }

  /** The next round in `ms` (it replaces the one planned); while a round runs, it is retried shortly after. */
  schedule(ms = 0): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.ticking) return this.schedule(50);
      this.ticking = this.round()
        .catch(this.onError)
        .finally(() => {
          this.ticking = undefined;
          this.schedule(this.pollMs);
        });
    }, ms);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.ticking;
  }
}
