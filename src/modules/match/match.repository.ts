import { sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { type PublicPlaceRow, publicPlaceColumns } from '../places/places.schema.ts';

/** Bound parameters per statement, well under SQLite's and PostgreSQL's limits. */
const MAX_PARAMS = 8000;

function* slices<T>(items: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}

/**
 * The places indexed under each key (conflation's blocking keys, `place_match_keys`): an indexed look-up per
 * key, never a scan. A record of a place of several sources stands for its place (`merged_into`).
 */
export async function placesByKey(db: Db, keys: readonly string[]): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>();
  for (const part of slices([...new Set(keys)], MAX_PARAMS)) {
    const rows = await db.kysely
      .selectFrom('place_match_keys as k')
      .innerJoin('places as p', 'p.id', 'k.place_id')
      .select(['k.key', sql<number>`coalesce(p.merged_into, p.id)`.as('place_id')])
      .where('k.key', 'in', part)
      .execute();
    for (const r of rows) {
      const list = out.get(r.key) ?? [];
      list.push(Number(r.place_id));
      out.set(r.key, list);
    }
  }
  return out;
}

/** What the matcher compares of a candidate place, and what the answer shows of it. */
export type CandidateRow = PublicPlaceRow & { names: string | null; city_id: number | null; website_domain: string | null };

export async function candidateRows(db: Db, ids: readonly number[]): Promise<Map<number, CandidateRow>> {
  const out = new Map<number, CandidateRow>();
  for (const part of slices(ids, MAX_PARAMS)) {
    const rows = (await db.kysely
      .selectFrom('places')
      .select([...publicPlaceColumns, 'names', 'city_id', 'website_domain'])
      .where('id', 'in', part)
      .execute()) as unknown as CandidateRow[];
    for (const r of rows) out.set(Number(r.id), r);
  }
  return out;
}
