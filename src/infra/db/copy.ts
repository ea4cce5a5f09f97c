import { createHash } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Db } from './database.ts';
import { byDialect } from './dialect.ts';

/**
 * Moves a whole installation from one database to another (`leadatlas db copy --from … --to …`): SQLite to
 * PostgreSQL when a team outgrows one machine, or back. The target is migrated and its reference data
 * built from the packages first (`prepareDatabase`, by the caller); then every table of the catalog and of
 * the accounts is copied in key order, in batches of one transaction each, keeping every id (leads point
 * at places, tokens at accounts), and checked: the same count and the same checksum of every row, in key
 * order, on both sides.
 *
 * Resumable: a copy cut short (kill -9, a lost connection) has committed a prefix of each table in key
 * order; run again, it continues after the last key the target holds. Rows the target held before are
 * not overwritten: they would fail the check, which says which table differs.
 */

/** The tables a copy moves, parents before children, each with the key it is read, resumed and checked by. */
export const copiedTables: ReadonlyArray<{ name: string; key: readonly string[] }> = [
  { name: 'import_runs', key: ['id'] },
  // The parts of a split release a run has written (migration 0034): an interrupted run resumes on the target too.
  { name: 'import_run_parts', key: ['run_id', 'part'] },
  { name: 'places', key: ['id'] },
  { name: 'accounts', key: ['id'] },
  { name: 'sessions', key: ['id_hash'] },
  { name: 'api_tokens', key: ['id'] },
  { name: 'usage_daily', key: ['account_id', 'day', 'route'] },
  { name: 'account_quotas', key: ['account_id'] },
  { name: 'export_row_usage', key: ['account_id', 'month'] },
  { name: 'searches', key: ['id'] },
  { name: 'exports', key: ['id'] },
  { name: 'leads', key: ['id'] },
  { name: 'export_jobs', key: ['id'] },
  { name: 'webhook_deliveries', key: ['id'] },
  { name: 'webhook_attempts', key: ['id'] },
  { name: 'account_webhook_secrets', key: ['account_id'] },
  { name: 'server_secrets', key: ['name'] },
  { name: 'suppressions', key: ['id'] },
  { name: 'suppression_lists', key: ['account_id'] },
  // What change files need to place OpenStreetMap ways (migration 0023).
  { name: 'osm_ways', key: ['id'] },
  { name: 'osm_nodes', key: ['id'] },
  { name: 'osm_node_ways', key: ['node_id', 'way_id'] },
  // Blocking keys of conflation (migration 0025).
  { name: 'place_match_keys', key: ['id'] },
  { name: 'place_match_due', key: ['place_id'] },
  // Contact enrichment (migration 0026).
  { name: 'enrich_sites', key: ['id'] },
  { name: 'place_found_keys', key: ['id'] },
  { name: 'enrichment_jobs', key: ['id'] },
  { name: 'enrichment_job_sites', key: ['job_id', 'site_id'] },
  { name: 'enrich_usage', key: ['account_id', 'month'] },
  // Enrichment jobs' places (migration 0029).
  { name: 'enrichment_job_places', key: ['job_id', 'place_id'] },
  // A followed feed's position and the monitors (migration 0030). A monitor's `version` is the source's places
  // version, not the target's: the target's evaluator then runs each search whole once and compares it with the
  // members, which gives no event for a place whose match and hash are unchanged.
  { name: 'replication_state', key: ['dataset'] },
  { name: 'monitors', key: ['id'] },
  { name: 'monitor_places', key: ['monitor_id', 'place_id'] },
  { name: 'monitor_events', key: ['id'] },
  // Match jobs and their monthly rows (migration 0036), like export jobs and their rows.
  { name: 'match_jobs', key: ['id'] },
  { name: 'match_row_usage', key: ['account_id', 'month'] },
  // The last DNS verdict of each email domain (migration 0037): what the trust pass judges emails by.
  { name: 'email_domains', key: ['domain'] },
];

/**
 * Tables a copy leaves alone: the reference data the target builds from the same packages, the migration
 * log, and what the target keeps in step itself (the full-text index and the places version, SQLite).
 */
export const notCopiedTables: readonly string[] = [
  'categories',
  'category_names',
  'countries',
  'country_names',
  'cities',
  'city_names',
  'reference_data',
  'kysely_migration',
  'kysely_migration_lock',
  'places_version',
  // The log of changed places (migration 0028): the target logs its own writes.
  'place_changes',
  'place_changes_marks',
  'place_changes_horizon',
  // Uploads in progress: finished ones leave nothing here, unfinished ones are dropped anyway.
  'suppression_uploads',
  // Derived from places.opening_hours (migration 0031): with no state, the target's first open search recomputes them.
  'place_hours',
  'place_open_intervals',
  'place_hours_state',
  // The trust pass's position (migration 0037): without it the target's first pass judges every place again.
  'trust_state',
];

export interface TableCopy {
  table: string;
  /** Rows in the source. */
  rows: number;
  /** Rows the target already held when this run began (a resumed copy). */
  resumedAt: number;
  copied: number;
  checksum: string;
}

export interface CopyOptions {
  batchSize?: number;
  onProgress?: (table: string, done: number, total: number) => void;
}

export class CopyMismatch extends Error {
  override name = 'CopyMismatch';
}

/** Copies every table of `copiedTables` from `from` to `to` (both migrated), then checks counts and checksums. */
export async function copyDatabase(from: Db, to: Db, options: CopyOptions = {}): Promise<TableCopy[]> {
  const batchSize = options.batchSize ?? 1000;
  const report: TableCopy[] = [];
  for (const table of copiedTables) {
    const columns = await sharedColumns(from, to, table.name);
    const rows = await countRows(from.kysely, table.name);
    const resumedAt = await countRows(to.kysely, table.name);
    let after = await lastKey(to.kysely, table.name, table.key);
    let copied = 0;
    options.onProgress?.(table.name, resumedAt, rows);
    for (;;) {
      const batch = await readBatch(from.kysely, table.name, columns, table.key, after, batchSize);
      if (batch.length === 0) break;
      await to.kysely.transaction().execute(async (trx) => {
        // Within the drivers' limits on bound parameters (SQLite: 32,766) for a wide table such as places.
        const rowsPerInsert = Math.max(1, Math.floor(30_000 / columns.length));
        for (let i = 0; i < batch.length; i += rowsPerInsert) {
          await trx
            .insertInto(table.name as never)
            .values(batch.slice(i, i + rowsPerInsert) as never)
            .execute();
        }
      });
      copied += batch.length;
      after = table.key.map((k) => batch[batch.length - 1]![k]);
      options.onProgress?.(table.name, resumedAt + copied, rows);
      if (batch.length < batchSize) break;
    }
    if (table.key.length === 1 && table.key[0] === 'id') await afterExplicitIds(to)(table.name);
    if (table.name === 'places') await fillStoredText(to, columns);
    report.push({ table: table.name, rows, resumedAt, copied, checksum: '' });
  }
  for (const entry of report) {
    const table = copiedTables.find((t) => t.name === entry.table)!;
    const columns = await sharedColumns(from, to, table.name);
    const [source, target] = await Promise.all([
      tableChecksum(from.kysely, table.name, columns, table.key),
      tableChecksum(to.kysely, table.name, columns, table.key),
    ]);
    if (source.rows !== target.rows || source.digest !== target.digest) {
      throw new CopyMismatch(
        `${table.name}: the source has ${source.rows} rows (checksum ${source.digest.slice(0, 12)}), the target ${target.rows} (checksum ${target.digest.slice(0, 12)})`,
      );
    }
    entry.checksum = source.digest;
  }
  return report;
}

/**
 * The text a SQLite `places` row stores beside its names (migration 0027), when the source has none to copy
 * (PostgreSQL folds in the database): filled from the copied names by the same functions the writers use
 * (`database.ts`), and copied into the full-text index by the trigger on `search_document`. Only rows
 * still without it, so a resumed copy fills what the cut one left.
 */
async function fillStoredText(to: Db, copied: readonly string[]): Promise<void> {
  if (to.dialect !== 'sqlite' || copied.includes('search_document')) return;
  await sql`UPDATE places SET search_document = la_search_document(name, names),
    city_fold = CASE WHEN city_source = 'address_unmatched' THEN la_fold(city) END WHERE search_document IS NULL`.execute(to.kysely);
}

/** The columns of a table that both databases have, in name order. */
async function sharedColumns(from: Db, to: Db, table: string): Promise<string[]> {
  const names = async (db: Db) => new Set(await columnsOf(db)(table));
  const [a, b] = await Promise.all([names(from), names(to)]);
  const shared = [...a].filter((c) => b.has(c)).sort();
  if (shared.length === 0)
    throw new CopyMismatch(`table ${table} is missing in the ${a.size === 0 ? 'source' : 'target'}: migrate both first`);
  return shared;
}

/**
 * The columns of a table in the database's own schema. Kysely's introspection lists the tables of every
 * schema on PostgreSQL, so another schema's table of the same name (a second installation, a test's) would
 * otherwise answer.
 */
export const columnsOf = byDialect<(table: string) => Promise<string[]>>({
  sqlite: (db) => async (table) =>
    db.sqlite
      .prepare<[string], { name: string }>('SELECT name FROM pragma_table_info(?)')
      .all(table)
      .map((r) => r.name),
  postgres: (db) => async (table) =>
    (
      await sql<{
        column_name: string;
      }>`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ${table}`.execute(
        db.kysely,
      )
    ).rows.map((r) => r.column_name),
});

/** The tables of the database's own schema (see columnsOf). */
export const tablesOf = byDialect<() => Promise<string[]>>({
  sqlite: (db) => async () =>
    db.sqlite
      .prepare<[], { name: string }>("SELECT name FROM sqlite_schema WHERE type = 'table'")
      .all()
      .map((r) => r.name),
  postgres: (db) => async () =>
    (
      await sql<{
        table_name: string;
      }>`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`.execute(
        db.kysely,
      )
    ).rows.map((r) => r.table_name),
});

async function countRows(db: Kysely<any>, table: string): Promise<number> {
  const { rows } = await sql<{ n: number | string }>`SELECT count(*) AS n FROM ${sql.table(table)}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/** The greatest key the table holds, or null when it is empty. */
async function lastKey(db: Kysely<any>, table: string, key: readonly string[]): Promise<unknown[] | null> {
  const order = sql.join(key.map((k) => sql`${sql.ref(k)} DESC`));
  const { rows } = await sql<
    Record<string, unknown>
  >`SELECT ${sql.join(key.map((k) => sql.ref(k)))} FROM ${sql.table(table)} ORDER BY ${order} LIMIT 1`.execute(db);
  return rows[0] ? key.map((k) => rows[0]![k]) : null;
}

function readBatch(
  db: Kysely<any>,
  table: string,
  columns: string[],
  key: readonly string[],
  after: unknown[] | null,
  limit: number,
): Promise<Array<Record<string, unknown>>> {
  const keyRefs = sql.join(key.map((k) => sql.ref(k)));
  const where = after === null ? sql`` : sql`WHERE (${keyRefs}) > (${sql.join(after)})`;
  return sql<
    Record<string, unknown>
  >`SELECT ${sql.join(columns.map((c) => sql.ref(c)))} FROM ${sql.table(table)} ${where} ORDER BY ${keyRefs} LIMIT ${limit}`
    .execute(db)
    .then((r) => r.rows);
}

/**
 * After rows were inserted with their ids: PostgreSQL's sequence must move past them, or the next
 * INSERT without an id would collide; SQLite takes the largest rowid plus one by itself.
 */
const afterExplicitIds = byDialect<(table: string) => Promise<void>>({
  sqlite: () => async () => {},
  postgres: (db) => async (table) => {
    await sql`SELECT setval(pg_get_serial_sequence(${table}, 'id'), coalesce((SELECT max(id) FROM ${sql.table(table)}), 0) + 1, false)`.execute(
      db.kysely,
    );
  },
});

/**
 * SHA-256 over every row in key order, each as the JSON of its values in `columns` order. Both drivers
 * give numbers for integer and real columns and text for the rest, so equal rows hash alike.
 */
async function tableChecksum(
  db: Kysely<any>,
  table: string,
  columns: string[],
  key: readonly string[],
): Promise<{ rows: number; digest: string }> {
  const hash = createHash('sha256');
  let after: unknown[] | null = null;
  let rows = 0;
  for (;;) {
    const batch = await readBatch(db, table, columns, key, after, 5000);
    for (const row of batch) hash.update(`${JSON.stringify(columns.map((c) => normalise(row[c])))}\n`);
    rows += batch.length;
    if (batch.length < 5000) break;
    after = key.map((k) => batch[batch.length - 1]![k]);
  }
  return { rows, digest: hash.digest('hex') };
}

function normalise(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return value.toISOString();
  if (Buffer.isBuffer(value)) return value.toString('base64');
  return value;
}
