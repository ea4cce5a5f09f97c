import { type SelectQueryBuilder, sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { jsonArrayContains } from '../../infra/db/json-sql.ts';
import type { Database } from '../../infra/db/schema.ts';
import type { PlaceRow } from '../places/places.schema.ts';
import { type AccountExclusion, exclusionConditions } from './exclusion.sql.ts';

export interface LeadFilters {
  category?: string;
  city?: string;
  country?: string;
  hasPhone?: boolean;
  hasWebsite?: boolean;
  minRating?: number;
  /** The account's suppression list (see `accountExclusion`): suppressed places are no leads to show. */
  exclude?: AccountExclusion | null;
}

/** Position in the newest-first order: (last_exported_at, lead id), both descending. */
export interface LeadKey {
  lastExportedAt: string;
  id: number;
}

export type LeadPlaceRow = PlaceRow & { lead_id: number; lead_search_id: string; first_exported_at: string; last_exported_at: string };

type LeadsQuery = SelectQueryBuilder<Database, 'leads' | 'places', object>;

function filtered(db: Db, accountId: number, f: LeadFilters): LeadsQuery {
  let q = db.kysely
    .selectFrom('leads')
    .innerJoin('places', 'places.id', 'leads.place_id')
    .where('leads.account_id', '=', accountId) as LeadsQuery;
  if (f.category !== undefined) {
    const slug = f.category;
    // Any of the place's categories (a JSON array of slugs, primary first).
    q = q.where(jsonArrayContains(db)(sql.ref('places.categories'), slug));
  }
  if (f.city !== undefined) q = q.where(sql<string>`lower(places.city)`, '=', f.city.toLowerCase());
  if (f.country !== undefined) q = q.where('places.country_code', '=', f.country.toUpperCase());
  if (f.hasPhone !== undefined) q = q.where('places.phone', f.hasPhone ? 'is not' : 'is', null);
  if (f.hasWebsite !== undefined) q = q.where('places.website', f.hasWebsite ? 'is not' : 'is', null);
  if (f.minRating !== undefined) q = q.where('places.rating', '>=', f.minRating);
  for (const condition of exclusionConditions(f.exclude)) q = q.where(condition);
  return q;
}

export async function countLeads(db: Db, accountId: number, filters: LeadFilters): Promise<number> {
  const row = await filtered(db, accountId, filters)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** One page newest first, after `after` (keyset) or at `offset`; asks for `limit` rows. */
export async function listLeads(
  db: Db,
  accountId: number,
  filters: LeadFilters,
  page: { limit: number; after?: LeadKey; offset?: number },
): Promise<LeadPlaceRow[]> {
  let q = filtered(db, accountId, filters);
  const after = page.after;
  if (after) {
    q = q.where((eb) =>
      eb.or([
        eb('leads.last_exported_at', '<', after.lastExportedAt),
        eb.and([eb('leads.last_exported_at', '=', after.lastExportedAt), eb('leads.id', '<', after.id)]),
      ]),
    );
  }
  let rows = q
    .selectAll('places')
    .select(['leads.id as lead_id', 'leads.search_id as lead_search_id', 'leads.first_exported_at', 'leads.last_exported_at'])
    .orderBy('leads.last_exported_at', 'desc')
    .orderBy('leads.id', 'desc')
    .limit(page.limit);
  if (page.offset) rows = rows.offset(page.offset);
  return (await rows.execute()) as LeadPlaceRow[];
}

export interface CategoryCount {
  slug: string | null;
  name: string | null;
  count: number;
}

/** Leads per primary category, most first; the `null` slug counts leads without a category. */
export async function countLeadsByCategory(db: Db, accountId: number, exclude: AccountExclusion | null = null): Promise<CategoryCount[]> {
  const rows = await filtered(db, accountId, { exclude })
    .leftJoin('categories', 'categories.slug', 'places.category')
    .select((eb) => ['places.category as slug', 'categories.name as name', eb.fn.countAll<number>().as('count')])
    .groupBy(['places.category', 'categories.name'])
    .orderBy('count', 'desc')
    .orderBy('places.category')
    .execute();
  return rows.map((r) => ({ slug: r.slug, name: r.name, count: Number(r.count) }));
}

/** Id of the account's newest lead, 0 when it has none (the `leads_account_id_idx` probe of migration 0018). */
export async function latestLeadId(db: Db, accountId: number): Promise<number> {
  const row = await db.kysely
    .selectFrom('leads')
    .select((eb) => eb.fn.max('id').as('id'))
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return Number(row?.id ?? 0);
}
