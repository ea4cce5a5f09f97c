import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { placesVersion } from '../places/place-changes.repository.ts';
import { trustState } from '../trust/trust.repository.ts';

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

/** The places version at which each database was last seen caught up: the pass only moves forward, so a positive answer holds for that version. */
const readyAt = new WeakMap<Db, number>();

export async function trustReadiness(db: Db): Promise<TrustReadiness> {
  const version = await placesVersion(db);
  if (readyAt.get(db) === version) return { ready: true, placesVersion: version };
  const state = await trustState(db);
  if (state === null) return { ready: false, detail: 'no trust pass has finished on this database yet' };
  if (state.placesVersion < version)
    return { ready: false, detail: `the trust pass has reached places version ${state.placesVersion} of ${version}` };
  readyAt.set(db, version);
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
