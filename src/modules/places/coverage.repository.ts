import { sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { contactPresence } from './place-facts.ts';

/** Places and how many of them have each contact, as a market's summary gives them. */
export interface Coverage {
  places: number;
  phone: number;
  website: number;
  email: number;
}

/** With `found`, a phone or email enrichment found on the place's website counts too. */
const counted = (found: boolean) => {
  const { phone, email } = found ? contactPresence.enriched : contactPresence.source;
  return [
    sql<number>`count(*)`.as('places'),
    sql<number>`coalesce(sum(${phone}), 0)`.as('phone'),
    sql<number>`coalesce(sum(${contactPresence.source.website}), 0)`.as('website'),
    sql<number>`coalesce(sum(${email}), 0)`.as('email'),
  ] as const;
};
const asCoverage = (r: { places: unknown; phone: unknown; website: unknown; email: unknown }): Coverage => ({
  places: Number(r.places),
  phone: Number(r.phone),
  website: Number(r.website),
  email: Number(r.email),
});

/**
 * A country's places as each source has them and as the catalog shows them: per source, its live records
 * (open, or part of a place of several sources) filed under the country, with the contacts each record itself
 * carries; merged, the places of those sources search shows (a place of several sources once, with its merged
 * contacts, under the source that leads it). `found`: enrichment's phones and emails count too.
 */
export async function countryCoverage(
  db: Db,
  country: string,
  sources: readonly string[],
  options: { found?: boolean } = {},
): Promise<{ bySource: Record<string, Coverage>; merged: Coverage }> {
  const k = db.kysely;
  const columns = counted(options.found === true);
  const rows = await k
    .selectFrom('places')
    .where('country_code', '=', country)
    .where('sources', 'is', null)
    .where('source', 'in', [...sources])
    .where((eb) => eb.or([eb('closed_reason', 'is', null), eb('closed_reason', '=', 'merged')]))
    .select(['source', ...columns])
    .groupBy('source')
    .execute();
  const bySource: Record<string, Coverage> = {};
  for (const s of sources) bySource[s] = { places: 0, phone: 0, website: 0, email: 0 };
  for (const r of rows) bySource[r.source] = asCoverage(r);
  const merged = await k
    .selectFrom('places')
    .where('country_code', '=', country)
    .where('source', 'in', [...sources])
    .where('merged_into', 'is', null)
    .where('closed_at', 'is', null)
    .select([...columns])
    .executeTakeFirstOrThrow();
  return { bySource, merged: asCoverage(merged) };
}

/** The places an import run read that their source says are closed. */
export async function closedSeenBy(db: Db, runId: number): Promise<number> {
  const row = await db.kysely
    .selectFrom('places')
    .where('seen_run_id', '=', runId)
    .where('closed', '=', 1)
    .select(sql<number>`count(*)`.as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
