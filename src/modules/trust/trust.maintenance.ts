import type { Db } from '../../infra/db/database.ts';
import { PollLoop } from '../../infra/poll-loop.ts';
import { refreshTrust, type TrustPassResult } from './trust.service.ts';

/**
 * The trust pass in `serve`'s background (`TRUST_POLL_MS`): every period it judges the places changed since
 * its last pass (an import, a crawl, a merge), or all of them for a new model. Several servers may run it at
 * once: each writes only what changed, and a place judged twice is judged the same.
 */
export class TrustMaintenance {
  private loop: PollLoop | undefined;

  constructor(
    private readonly options: {
      db: Db;
      pollMs: number;
      log?: { warn(obj: unknown, msg: string): void; info(obj: unknown, msg: string): void };
    },
  ) {}

  start(): void {
    if (this.options.pollMs <= 0) return;
    this.loop = new PollLoop(
      async () => {
        const result: TrustPassResult = await refreshTrust(this.options.db);
        if (result.changed > 0) this.options.log?.info({ trust: result }, 'contacts judged');
      },
      this.options.pollMs,
      (error) => this.options.log?.warn({ err: error }, 'the trust pass failed: statuses and scores stay as they were'),
    );
    // Now: a server that starts behind the catalog (the demo import, an import while it was down) judges it while it serves.
    this.loop.schedule(0);
  }

  async close(): Promise<void> {
    await this.loop?.close();
  }
}
