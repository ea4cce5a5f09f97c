import { type RawBuilder, type SqlBool, sql } from 'kysely';
import { suppressedConditions } from '../suppressions/suppressed.sql.ts';
import type { SuppressionKind } from '../suppressions/suppressions.schema.ts';

/**
 * Places an account leaves out of its searches, exports and leads. The revisions are not used in the SQL:
 * they make the criteria (and so the read cache's and the count cache's keys) change whenever the
 * account's leads or list change, which the places version does not follow.
 */
export interface AccountExclusion {
  accountId: number;
  /** `only_new`: leave out the places the account has exported; the value is its newest lead's id (0 when none). */
  exported: number | null;
  /** Leave out places matching the account's suppression list: the kinds it has entries of, and the list's revision. */
  suppressed: { kinds: SuppressionKind[]; revision: number } | null;
}

/**
 * The exclusion as conditions on `places`: for `only_new`, a probe of the leads' (account_id, place_id) index;
 * the suppression list's conditions (`suppressedConditions`).
 */
export function exclusionConditions(exclude: AccountExclusion | null | undefined): RawBuilder<SqlBool>[] {
  if (!exclude) return [];
  const out: RawBuilder<SqlBool>[] = [];
  if (exclude.exported !== null) {
    out.push(
      sql<SqlBool>`NOT EXISTS (SELECT 1 FROM leads AS ex_leads WHERE ex_leads.account_id = ${exclude.accountId} AND ex_leads.place_id = places.id)`,
    );
  }
  out.push(...suppressedConditions(exclude.accountId, exclude.suppressed?.kinds ?? []));
  return out;
}
