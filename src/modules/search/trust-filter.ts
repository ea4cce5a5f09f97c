import type { Db } from '../../infra/db/database.ts';
import { currentDeadline, withoutDeadline } from '../../infra/db/time-budget.ts';
import { AppError } from '../../infra/errors.ts';
import { placesVersion } from '../places/place-changes.repository.ts';
import { trustState } from '../trust/trust.service.ts';

/**
 * Whether the trust filters (`usesTrust` in query/criteria.ts: `email_status`, `phone_type`, `website_status`,
 * `min_confidence`, `min_lead_score`, `verified_since`, `sort=lead_score`) can be answered truly. They read the
 * summary the trust pass (`trust/`) keeps on each place, which is null for a place the pass has not seen and
 * stale for one changed since: answered before the pass caught up, a search would count an imported place as
 * having no valid email. So, as for the open filter (issue 37), a read waits for the pass within its budget or
 * answers 503 `not_ready`, never a false total.
 *
 * Caught up: `trust_state.places_version` (the places version the pass's last round reached, its own writes
 * included) is at or past the current places version.
 */

export type TrustReadiness = { ready: true; placesVersion: number } | { ready: false; detail: string };

/**
 * `seen`: the caller's memory of the places version at which the pass was last seen caught up (the pass only moves
 * forward, so a positive answer holds for that version: one read of the version, not of the state, per search).
 */
export async function trustReadiness(db: Db, seen: { readyAt: number }): Promise<TrustReadiness> {
  const version = await placesVersion(db);
  if (seen.readyAt === version) return { ready: true, placesVersion: version };
  const state = await trustState(db);
  if (state === null) return { ready: false, detail: 'no trust pass has finished on this database yet' };
  if (state.placesVersion < version)
    return { ready: false, detail: `the trust pass has reached places version ${state.placesVersion} of ${version}` };
  seen.readyAt = version;
  return { ready: true, placesVersion: version };
}

export function trustNotReady(detail: string, retryAfterS: number): AppError {
  const seconds = Math.max(1, Math.ceil(retryAfterS));
  return new AppError(
    'not_ready',
    `The contacts' statuses and confidences are being computed (${detail}): a filter or order on them cannot be answered truly before that pass ends. Retry in ${seconds} s.`,
    { preparing: 'contact_trust', reason: 'behind', retry_after_s: seconds },
    { 'retry-after': String(seconds) },
  );
}

/** How long a read waits for the trust pass when it has no time budget of its own. */
const TRUST_WAIT_MS = 5000;
/** The `Retry-After` of a read the trust pass could not catch up for in time: about one round of its loop. */
const TRUST_RETRY_S = 5;

/**
 * One engine's wait for the trust pass: at once when it has caught up, else the pass runs now (`passNow`, one at a
 * time, outside the read's own budget so the reads waiting share it) and the read waits within its budget, leaving
 * part of it to the read; a few rounds (a round that wrote saves the version before its own writes); past that,
 * 503 `not_ready`. `ready` answers the places version it is ready at.
 */
export class TrustGate {
  private pending: Promise<void> | undefined;
  private readonly seen = { readyAt: -1 };

  constructor(
    private readonly db: Db,
    private readonly passNow?: () => Promise<unknown>,
  ) {}

  async ready(): Promise<number> {
    let readiness = await trustReadiness(this.db, this.seen);
    if (readiness.ready) return readiness.placesVersion;
    const started = Date.now();
    const deadline = currentDeadline() ?? started + TRUST_WAIT_MS;
    const reserve = Math.min(1000, (deadline - started) / 4);
    for (let round = 0; round < 3 && this.passNow; round++) {
      if (!(await finishesWithin(this.pass(), deadline - reserve - Date.now()))) break;
      readiness = await trustReadiness(this.db, this.seen);
      if (readiness.ready) return readiness.placesVersion;
    }
    throw trustNotReady(readiness.ready ? '' : readiness.detail, TRUST_RETRY_S);
  }

  private pass(): Promise<void> {
    this.pending ??= withoutDeadline(() => this.passNow!())
      .then(() => undefined)
      .finally(() => {
        this.pending = undefined;
      });
    return this.pending;
  }
}

/** Whether `work` settles within `ms` (it goes on either way). */
export async function finishesWithin(work: Promise<void>, ms: number): Promise<boolean> {
  if (ms <= 0) return false;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
