import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { lowerPriority } from '../../infra/priority.ts';
import { type EvaluationRound, evaluateMonitors } from './monitors.evaluator.ts';
import { monitorWebhooks } from './monitors.service.ts';

export interface MonitorsCommandOptions {
  /** One round, then return (its error is thrown). */
  once?: boolean;
  /** Niceness to lower the process to (every thread, `infra/priority.ts`), 0–19; undefined or 0 leaves its own. */
  nice?: number;
  /** Stops the loop after the round in progress. */
  signal?: AbortSignal;
}

/**
 * `leadatlas monitors`: the evaluator of `serve` (`evaluateMonitors`, the same webhook hook) in a process of
 * its own, for installations that set MONITOR_EVALUATOR=off on their servers so an evaluation round no
 * longer shares the API's main thread. It checks the places version every MONITOR_POLL_MS, evaluates the
 * monitors behind it and logs each round that did work. A failed round is logged and the next one retries
 * (it committed nothing past the monitors it finished: each one commits only from the version it read). On
 * the signal, the round in progress finishes and the loop ends.
 */
export async function monitorsCommand(
  db: Db,
  config: Config,
  options: MonitorsCommandOptions,
  log: (line: string) => void,
): Promise<EvaluationRound[]> {
  if (options.nice !== undefined && options.nice > 0) {
    const priority = lowerPriority(options.nice);
    if (priority.error) log(`monitors: could not lower the priority to ${options.nice}: ${priority.error}; running at the process's own`);
  }
  const rounds: EvaluationRound[] = [];
  if (!options.once) log(`monitors: evaluating every ${config.MONITOR_POLL_MS} ms until stopped`);
  while (!options.signal?.aborted) {
    const started = performance.now();
    try {
      const round = await evaluateMonitors(db, monitorWebhooks);
      rounds.push(round);
      if (round.monitors > 0 || options.once)
        log(
          `monitors: ${round.monitors} evaluated over ${round.changedPlaces} changed places, ${round.events} events stored in ${((performance.now() - started) / 1000).toFixed(1)} s${round.waiting > 0 ? `; ${round.waiting} open searches wait for the opening-hours pass` : ''}`,
        );
    } catch (error) {
      if (options.once) throw error;
      log(`monitors: evaluation failed, retried in ${config.MONITOR_POLL_MS} ms: ${(error as Error).message}`);
    }
    if (options.once) break;
    await sleep(config.MONITOR_POLL_MS, undefined, options.signal ? { signal: options.signal } : {}).catch(() => {});
  }
  if (!options.once) log('monitors: stopped');
  return rounds;
}
