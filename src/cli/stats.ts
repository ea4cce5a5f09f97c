import { sql } from 'kysely';
import type { Db } from '../infra/db/database.ts';

export interface CatalogStats {
  places: number;
  byCountry: Array<{ country_code: string | null; country: string | null; places: number }>;
  byCategory: Array<{ category: string | null; name: string | null; places: number }>;
  /** Records by source (a place of several sources counts once under each of its records' sources). */
  bySource: Array<{ source: string; places: number }>;
  /** Places made of records of several sources (conflation). */
  ofSeveralSources: number;
  /** Places by status: open, closed (by their source), retired (gone from their dataset's latest import). */
  byStatus: Array<{ status: string; places: number }>;
  imports: Array<{
    id: number; path: string; dataset: string; status: string; read: number; imported: number; updated: number; unchanged: number; retired: number; skipped: number;
  }>;
}

export async function catalogStats(db: Db, topCategories = 25): Promise<CatalogStats> {
  const k = db.kysely;
  // Places: a record that is part of a place of several sources is counted by its place.
  const places = k.selectFrom('places').where('places.merged_into', 'is', null);
  const total = await places.select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow();
  const byCountry = await places
    .leftJoin('countries', 'countries.code', 'places.country_code')
    .select(['places.country_code', 'countries.name as country', sql<number>`count(*)`.as('places')])
    .groupBy(['places.country_code', 'countries.name'])
    .orderBy('places', 'desc')
    .execute();
  const byCategory = await places
    .leftJoin('categories', 'categories.slug', 'places.category')
    .select(['places.category', 'categories.name', sql<number>`count(*)`.as('places')])
    .groupBy(['places.category', 'categories.name'])
    .orderBy('places', 'desc')
    .limit(topCategories)
    .execute();
  const bySource = await k
    .selectFrom('places')
    .where('sources', 'is', null)
    .select(['source', sql<number>`count(*)`.as('places')])
    .groupBy('source')
    .orderBy('places', 'desc')
    .execute();
  const ofSeveral = await k.selectFrom('places').where('sources', 'is not', null).select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow();
  const byStatus = await places
    .select([sql<string>`coalesce(closed_reason, 'open')`.as('status'), sql<number>`count(*)`.as('places')])
    .groupBy('closed_reason')
    .orderBy('places', 'desc')
    .execute();
  const imports = await k
    .selectFrom('import_runs')
    .select([
      'id', 'path', 'dataset', 'status', 'read_count as read', 'imported_count as imported', 'updated_count as updated',
      'unchanged_count as unchanged', 'retired_count as retired', 'skipped_count as skipped',
    ])
    .orderBy('id', 'desc')
    .limit(10)
    .execute();
  return {
    places: Number(total.n),
    ofSeveralSources: Number(ofSeveral.n),
    byCountry,
    byCategory,
    bySource,
    byStatus: byStatus.map((r) => ({ status: r.status, places: Number(r.places) })),
    imports: imports.map((r) => ({ ...r, id: Number(r.id), retired: Number(r.retired) })),
  };
}

export function printStats(s: CatalogStats): void {
  const out = (line: string) => console.log(line);
  out(`places: ${s.places} (of several sources: ${s.ofSeveralSources})`);
  out('\nby country');
  for (const r of s.byCountry) out(`  ${(r.country_code ?? '--').padEnd(4)}${String(r.places).padStart(9)}  ${r.country ?? '(unknown)'}`);
  out(`\nby category (top ${s.byCategory.length})`);
  for (const r of s.byCategory) out(`  ${(r.category ?? '(none)').padEnd(28)}${String(r.places).padStart(9)}  ${r.name ?? ''}`);
  out('\nrecords by source');
  for (const r of s.bySource) out(`  ${r.source.padEnd(12)}${String(r.places).padStart(9)}`);
  out('\nby status');
  for (const r of s.byStatus) out(`  ${r.status.padEnd(12)}${String(r.places).padStart(9)}`);
  out(`\nrecent imports (${s.imports.length})`);
  for (const r of s.imports) {
    out(`  #${r.id} ${r.dataset} ${r.status}: imported ${r.imported}, updated ${r.updated}, unchanged ${r.unchanged}, retired ${r.retired}, skipped ${r.skipped}`);
  }
}
