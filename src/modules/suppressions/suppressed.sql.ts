import { type RawBuilder, type SqlBool, sql } from 'kysely';
import { foundValid } from '../places/place-facts.ts';
import type { SuppressionKind } from './suppressions.schema.ts';

/** The column (or expression) of a place a suppression entry's key is compared with. */
const suppressionKeyOfPlace: Record<SuppressionKind, RawBuilder<string | null>> = {
  phone: sql`places.phone_e164`,
  domain: sql`places.website_domain`,
  email: sql`lower(places.email)`,
  place: sql`places.public_id`,
};

/** The kinds of suppression entries a found contact can match (`place_found_keys.kind`). */
const foundKeyKinds: ReadonlySet<SuppressionKind> = new Set(['email', 'domain', 'phone']);

/**
 * The places an account's suppression list leaves out, as conditions on `places`: one anti-join per kind of
 * entry the account has, each a probe of the unique index (account_id, kind, key) per place, so the cost
 * follows the places a search reads and not the length of the list. An email, email domain or phone that the
 * place's website gave is matched too (`place_found_keys`, one probe of its primary key per place).
 */
export function suppressedConditions(accountId: number, kinds: readonly SuppressionKind[]): RawBuilder<SqlBool>[] {
  const out: RawBuilder<SqlBool>[] = [];
  for (const kind of kinds) {
    out.push(
      sql<SqlBool>`NOT EXISTS (SELECT 1 FROM suppressions AS ex_s WHERE ex_s.account_id = ${accountId} AND ex_s.kind = ${kind} AND ex_s.key = ${suppressionKeyOfPlace[kind]})`,
    );
    if (foundKeyKinds.has(kind)) {
      out.push(
        sql<SqlBool>`NOT EXISTS (SELECT 1 FROM place_found_keys AS ex_f JOIN suppressions AS ex_fs ON ex_fs.account_id = ${accountId} AND ex_fs.kind = ex_f.kind AND ex_fs.key = ex_f.key WHERE ex_f.place_id = places.id AND ex_f.kind = ${kind} AND places.found_contacts IS NOT NULL AND ${foundValid})`,
      );
    }
  }
  return out;
}
