import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { schemaTables, tableWrites } from '../../scripts/structure-report.js';

/**
 * Every table has one owner: the module that writes it (docs/architecture.md, "Tables and their owners"). Another
 * module that needs a table changed asks the owner's service or repository (places/place-updates.repository.ts:
 * enrichment's found contacts, an import's retirements); reads go through the owner's service or an explicit read
 * model (the search conditions, the exclusion SQL). The database layer itself (src/infra/db: migrations, copy,
 * backup) works on every table and is left out.
 */
export const tableOwners: Record<string, readonly string[]> = {
  auth: ['accounts', 'sessions', 'api_tokens', 'usage_daily', 'account_quotas', 'export_row_usage', 'enrich_usage', 'match_row_usage'],
  conflation: ['place_match_keys', 'place_match_due'],
  enrichment: ['enrich_sites', 'place_found_keys', 'enrichment_jobs', 'enrichment_job_sites', 'enrichment_job_places', 'email_domains'],
  // `leads` is what an account has exported: the export writes it; the leads module is its read model.
  exports: ['exports', 'export_jobs', 'server_secrets', 'leads'],
  // `reference_data` holds one row per reference table (what it was built from); see the shared writes below.
  geo: ['countries', 'country_names', 'cities', 'city_names', 'reference_data'],
  importers: ['import_runs', 'import_run_parts', 'replication_state', 'osm_ways', 'osm_nodes', 'osm_node_ways'],
  // The queue's lease columns are written by the export jobs' `leasedJobQueries`, handed the table by its owner.
  match: ['match_jobs'],
  monitors: ['monitors', 'monitor_places', 'monitor_events'],
  places: [
    'places',
    'places_fts',
    'places_version',
    'place_changes',
    'place_changes_marks',
    'place_changes_horizon',
    'place_hours',
    'place_hours_state',
    'place_open_intervals',
  ],
  search: ['searches'],
  suppressions: ['suppressions', 'suppression_lists', 'suppression_uploads'],
  taxonomy: ['categories', 'category_names'],
  trust: ['trust_state'],
  webhooks: ['webhook_deliveries', 'webhook_attempts', 'account_webhook_secrets'],
};

/**
 * Writes to another module's table that remain, each with why it has not moved to the owner yet. The list is
 * exact: a new cross-module write fails the test, and so does an entry whose write has gone (delete it then).
 */
export const sharedWrites: ReadonlyArray<{ file: string; table: string; why: string }> = [
  {
    file: 'modules/places/places.writer.ts',
    table: 'import_runs',
    why: "a batch's run counters commit in the writer's own transaction (a prepared statement on SQLite, one statement on PostgreSQL)",
  },
  {
    file: 'modules/places/places.writer.sql.ts',
    table: 'import_runs',
    why: "the PostgreSQL writer's statement for the same counters, run in the batch's transaction",
  },
  {
    file: 'modules/places/places.writer.ts',
    table: 'place_match_due',
    why: "new and changed places are queued for conflation by the writer's set-wise statements, in the same transaction",
  },
  {
    file: 'modules/places/places.writer.sql.ts',
    table: 'place_match_due',
    why: "the PostgreSQL writer's upsert queues them in the same statement",
  },
  {
    file: 'modules/conflation/conflation.repository.ts',
    table: 'places',
    why: "merging records into places: the conflation writer's statements join the import's open transaction",
  },
  { file: 'modules/conflation/conflation.repository.ts', table: 'leads', why: "a merged record's leads move to its place in the merge" },
  {
    file: 'modules/taxonomy/taxonomy.repository.ts',
    table: 'reference_data',
    why: 'the taxonomy records what its categories were built from',
  },
];

const ownerOf = new Map(Object.entries(tableOwners).flatMap(([module, tables]) => tables.map((t) => [t, module] as const)));

/** The writes of `writes` outside their table's owner and not listed in `shared`, as `file writes table (owner)`. */
export function foreignWrites(
  writes: ReadonlyArray<{ file: string; module: string; table: string }>,
  owners: ReadonlyMap<string, string>,
  shared: ReadonlyArray<{ file: string; table: string }>,
): string[] {
  return writes
    .filter((w) => owners.get(w.table) !== w.module && !shared.some((s) => s.file === w.file && s.table === w.table))
    .map((w) => `${w.file} writes ${w.table} (${owners.get(w.table) ?? 'no owner'}'s)`);
}

describe('the owners of tables', () => {
  const writes = tableWrites().filter((w) => !w.file.startsWith('infra/db/'));

  test('finds a write to another module’s table, in Kysely and in SQL text (the check itself)', () => {
    const owners = new Map([
      ['places', 'places'],
      ['leads', 'exports'],
    ]);
    const found = [
      { file: 'modules/places/a.ts', module: 'places', table: 'places' },
      { file: 'modules/enrichment/b.ts', module: 'enrichment', table: 'places' },
      { file: 'modules/conflation/c.ts', module: 'conflation', table: 'leads' },
    ];
    assert.deepEqual(foreignWrites(found, owners, [{ file: 'modules/conflation/c.ts', table: 'leads' }]), [
      "modules/enrichment/b.ts writes places (places's)",
    ]);
    const seen = tableWrites().filter((w) => w.file === 'modules/places/place-updates.repository.ts');
    assert.deepEqual([...new Set(seen.map((w) => w.table))], ['places']);
  });

  test('every table of the schema has exactly one owner', () => {
    const declared = Object.values(tableOwners).flat();
    assert.deepEqual(
      declared.filter((t, i) => declared.indexOf(t) !== i),
      [],
      'a table with two owners',
    );
    assert.deepEqual(
      schemaTables().filter((t) => !ownerOf.has(t)),
      [],
    );
  });

  test('every module writes only its own tables, but for the shared writes listed with their reasons', () => {
    assert.deepEqual(foreignWrites(writes, ownerOf, sharedWrites), []);
  });

  test('every shared write listed is still made (an entry whose write moved to its owner is deleted)', () => {
    assert.deepEqual(
      sharedWrites.filter((s) => !writes.some((w) => w.file === s.file && w.table === s.table)).map((s) => `${s.file} → ${s.table}`),
      [],
    );
  });
});
