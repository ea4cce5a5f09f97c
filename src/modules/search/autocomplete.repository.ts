import type { Db } from '../../infra/db/database.ts';

/** A shown, open place as autocomplete counts it: its name, country, and what picks the one a suggestion links. */
export interface NamedPlace {
  id: number;
  name: string;
  country_code: string | null;
  public_id: string;
  review_key: number;
}

/**
 * Up to `limit` open, shown places after `afterId` in id order (what a search without `include_closed` can
 * find): the names autocomplete reads in batches, as the engine's build reads the facts.
 */
export async function namedPlacesAfter(db: Db, afterId: number, limit: number): Promise<NamedPlace[]> {
  const rows = await db.kysely
    .selectFrom('places')
    .select(['id', 'name', 'country_code', 'public_id', 'review_count'])
    .where('id', '>', afterId)
    .where('closed_at', 'is', null)
    .where('merged_into', 'is', null)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: Number(r.id),
    name: r.name,
    country_code: r.country_code ?? null,
    public_id: r.public_id,
    review_key: r.review_count === null || r.review_count === undefined ? -1 : Number(r.review_count),
  }));
}
