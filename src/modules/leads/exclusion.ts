import type { Db } from '../../infra/db/database.ts';
import { findListState } from '../suppressions/suppressions.repository.ts';
import { suppressionKinds } from '../suppressions/suppressions.schema.ts';
import type { AccountExclusion } from './exclusion.sql.ts';
import { latestLeadId } from './leads.repository.ts';

/**
 * What the account leaves out of a search, an export or its leads list right now: its suppression list
 * (always) and, with `onlyNew`, the places it has exported. Null when there is nothing to leave out, so
 * searches without either share their cached answers with every other account.
 */
export async function accountExclusion(db: Db, accountId: number, options: { onlyNew: boolean }): Promise<AccountExclusion | null> {
  const [list, latest] = await Promise.all([findListState(db, accountId), options.onlyNew ? latestLeadId(db, accountId) : null]);
  const kinds = list ? suppressionKinds.filter((k) => list.counts[k] > 0) : [];
  const suppressed = list && kinds.length > 0 ? { kinds, revision: list.revision } : null;
  if (suppressed === null && latest === null) return null;
  return { accountId, exported: latest, suppressed };
}

/** The same exclusion without the suppression list: what a search would find but for it (the `suppressed` count). */
export function withoutSuppressions(exclusion: AccountExclusion | null): AccountExclusion | null {
  if (!exclusion?.suppressed) return exclusion;
  return exclusion.exported === null ? null : { ...exclusion, suppressed: null };
}
