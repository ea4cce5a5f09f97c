import { PollLoop } from '../../../infra/poll-loop.ts';
import type { SearchEngine } from './search-engine.ts';

/**
 * In a process that does not run the opening-hours pass (a cluster's request-only processes, `app.ts`): reloads
 * what the engine holds of the tables when the process that runs it replaced them, at the pace it checks them
 * (`OPENING_HOURS_CHECK_MS`; 0: only when a read finds them behind, `hoursReady`).
 */
export class HoursFollower {
  private loop: PollLoop | undefined;

  constructor(
    private readonly engine: SearchEngine,
    private readonly everyMs: number,
    private readonly log?: { warn(obj: unknown, msg: string): void },
  ) {}

  start(): void {
    if (this.everyMs <= 0) return;
    this.loop = new PollLoop(
      () => this.engine.followHours(),
      this.everyMs,
      (error) => this.log?.warn({ err: error }, 'the opening hours could not be read'),
    );
    this.loop.schedule(this.everyMs);
  }

  async close(): Promise<void> {
    await this.loop?.close();
  }
}
