import type { Command } from 'commander';
import { sql } from 'kysely';
import { prepareDatabase } from '../../bootstrap.ts';
import type { Db } from '../../infra/db/database.ts';
import { contactPresence } from '../../modules/places/place-facts.ts';
import { withDb } from '../options.ts';

/** Open places with each kind of contact: from their sources alone (`before`), and with what their websites gave (`after`). */
export interface ContactCoverage {
  places: number;
  phone: { before: number; after: number };
  website: number;
  email: { before: number; after: number };
  social: { before: number; after: number };
}

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
  /** Contact coverage of open places by country and by (leading) source, before and after enrichment. */
  contactsByCountry: Array<{ country_code: string | null } & ContactCoverage>;
  contactsBySource: Array<{ source: string } & ContactCoverage>;
  imports: Array<{
    id: number;
    path: string;
    dataset: string;
    status: string;
    read: number;
    imported: number;
    updated: number;
    unchanged: number;
    retired: number;
    skipped: number;
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
  const ofSeveral = await k
    .selectFrom('places')
    .where('sources', 'is not', null)
    .select(sql<number>`count(*)`.as('n'))
    .executeTakeFirstOrThrow();
  const byStatus = await places
    .select([sql<string>`coalesce(closed_reason, 'open')`.as('status'), sql<number>`count(*)`.as('places')])
    .groupBy('closed_reason')
    .orderBy('places', 'desc')
    .execute();
  const coverage = () => {
    const { source: s, enriched: e } = contactPresence;
    return k
      .selectFrom('places')
      .where('places.closed_at', 'is', null)
      .select([
        sql<number>`count(*)`.as('places'),
        sql<number>`sum(${s.phone})`.as('phone_before'),
        sql<number>`sum(${e.phone})`.as('phone_after'),
        sql<number>`sum(${s.website})`.as('website'),
        sql<number>`sum(${s.email})`.as('email_before'),
        sql<number>`sum(${e.email})`.as('email_after'),
        sql<number>`sum(${s.social})`.as('social_before'),
        sql<number>`sum(${e.social})`.as('social_after'),
      ]);
  };
  const asCoverage = (r: {
    places: unknown;
    phone_before: unknown;
    phone_after: unknown;
    website: unknown;
    email_before: unknown;
    email_after: unknown;
    social_before: unknown;
    social_after: unknown;
  }): ContactCoverage => ({
    places: Number(r.places),
    phone: { before: Number(r.phone_before), after: Number(r.phone_after) },
    website: Number(r.website),
    email: { before: Number(r.email_before), after: Number(r.email_after) },
    social: { before: Number(r.social_before), after: Number(r.social_after) },
  });
  const contactsByCountry = await coverage()
    .select('places.country_code')
    .groupBy('places.country_code')
    .orderBy('places', 'desc')
    .execute();
  const contactsBySource = await coverage().select('places.source').groupBy('places.source').orderBy('places', 'desc').execute();
  const imports = await k
    .selectFrom('import_runs')
    .select([
      'id',
      'path',
      'dataset',
      'status',
      'read_count as read',
      'imported_count as imported',
      'updated_count as updated',
      'unchanged_count as unchanged',
      'retired_count as retired',
      'skipped_count as skipped',
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
    contactsByCountry: contactsByCountry.map((r) => ({ country_code: r.country_code, ...asCoverage(r) })),
    contactsBySource: contactsBySource.map((r) => ({ source: r.source, ...asCoverage(r) })),
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
  const pct = (n: number, of: number) => `${of === 0 ? '0.0' : ((100 * n) / of).toFixed(1)}%`.padStart(7);
  const change = (c: { before: number; after: number }, of: number) =>
    c.after === c.before ? `${pct(c.before, of)}${' '.repeat(9)}` : `${pct(c.before, of)} → ${pct(c.after, of).trim().padEnd(6)}`;
  const coverageLine = (name: string, c: ContactCoverage) =>
    out(
      `  ${name.padEnd(12)}${String(c.places).padStart(9)} ${change(c.phone, c.places)} ${pct(c.website, c.places)} ${change(c.email, c.places)} ${change(c.social, c.places)}`,
    );
  const coverageHeader = () =>
    out(
      `  ${''.padEnd(12)}${'places'.padStart(9)} ${'phone'.padStart(16)} ${'website'.padStart(7)} ${'email'.padStart(16)} ${'social'.padStart(16)}`,
    );
  out('\ncontact coverage of open places by country (from the sources → with enrichment)');
  coverageHeader();
  for (const r of s.contactsByCountry) coverageLine(r.country_code ?? '--', r);
  out('\ncontact coverage by source');
  coverageHeader();
  for (const r of s.contactsBySource) coverageLine(r.source, r);
  out(`\nrecent imports (${s.imports.length})`);
  for (const r of s.imports) {
    out(
      `  #${r.id} ${r.dataset} ${r.status}: imported ${r.imported}, updated ${r.updated}, unchanged ${r.unchanged}, retired ${r.retired}, skipped ${r.skipped}`,
    );
  }
}

/** `leadatlas stats`: places per country and per category, and how many have each kind of contact. */
export function registerStats(program: Command): void {
  program
    .command('stats')
    .description('places per country and per category')
    .option('--json', 'print JSON')
    .option('--top <n>', 'categories to list', (v) => Number(v), 25)
    .action((opts: { json?: boolean; top: number }) =>
      withDb(async (db) => {
        await prepareDatabase(db);
        const stats = await catalogStats(db, opts.top);
        if (opts.json) console.log(JSON.stringify(stats, null, 2));
        else printStats(stats);
      }),
    );
}
