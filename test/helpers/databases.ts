import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type Db, type DialectName, openDatabase } from '../../src/infra/db/database.ts';
import { copyPostgresTemplate, copySqliteTemplate, dropPostgresDatabase, type Template } from './templates.ts';

export type { Template } from './templates.ts';

export const postgresAdminUrl = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestDatabase {
  db: Db;
  /** Drops the schema / deletes the file. */
  dispose(): Promise<void>;
}

export type TestSqlite = TestDatabase & { path: string; url: string };
export type TestPostgres = TestDatabase & { url: string };

/** A fresh SQLite file in a temp directory (a file, not :memory:, so worker threads and child processes can open it). */
export function openTestSqlite(): TestSqlite {
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-test-'));
  return openSqliteIn(dir);
}

/**
 * A SQLite file of its own that starts as `from` says (test/helpers/templates.ts): migrated, or migrated
 * with the reference data; a copy of a template file, as a fresh database migrated and synced would be.
 */
export async function copyTestSqlite(from: Template): Promise<TestSqlite> {
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-test-'));
  try {
    await copySqliteTemplate(from, join(dir, 'test.db'));
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return openSqliteIn(dir);
}

/**
 * A SQLite file of its own that starts as `source` is now: `VACUUM INTO`, a consistent copy of every table and
 * index, whatever is still in the write-ahead log. For a file whose tests need the same imported catalog in more
 * than one database (one per app, each with state of its own): one import, then copies.
 */
export async function copyOpenSqlite(source: Db): Promise<TestSqlite> {
  if (source.sqlite === undefined) throw new Error('copyOpenSqlite: not a SQLite database');
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-test-'));
  try {
    source.sqlite.prepare('VACUUM INTO ?').run(join(dir, 'test.db'));
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return openSqliteIn(dir);
}

function openSqliteIn(dir: string): TestSqlite {
  const path = join(dir, 'test.db');
  const url = `sqlite:${path}`;
  const db = openDatabase(url);
  return {
    db,
    path,
    url,
    dispose: async () => {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A PostgreSQL database of its own: without `from`, a fresh schema in the shared test database (used
 * through search_path, dropped on dispose); with `from`, a database copied from a template
 * (test/helpers/templates.ts; the same layout: a schema of its own on the search_path, the extensions in
 * public), dropped on dispose.
 */
export async function openTestPostgres(from?: Template): Promise<TestPostgres> {
  if (from) {
    const { database, url } = await copyPostgresTemplate(postgresAdminUrl, from);
    return openPostgresAt(url, () => dropPostgresDatabase(postgresAdminUrl, database));
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE SCHEMA ${schema}`);
  const url = `${postgresAdminUrl}${postgresAdminUrl.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  return openPostgresAt(url, () => adminQuery(`DROP SCHEMA ${schema} CASCADE`));
}

/** The database at `url`; `dispose` closes its pool, then runs `drop`. */
function openPostgresAt(url: string, drop: () => Promise<void>): TestPostgres {
  const db = openDatabase(url);
  return {
    db,
    url,
    dispose: async () => {
      await db.close();
      await drop();
    },
  };
}

async function adminQuery(text: string): Promise<void> {
  const admin = new pg.Client({ connectionString: postgresAdminUrl });
  await admin.connect();
  try {
    await admin.query(text);
  } finally {
    await admin.end();
  }
}

/** A test database of either dialect: empty, or as `from` says. */
export async function openTestDatabase(dialect: DialectName, from?: Template): Promise<TestSqlite | TestPostgres> {
  if (dialect === 'postgres') return openTestPostgres(from);
  return from ? copyTestSqlite(from) : openTestSqlite();
}

const allDialects: Array<{ name: DialectName; open: (from?: Template) => Promise<TestDatabase & { url: string }> }> = [
  { name: 'sqlite', open: (from) => openTestDatabase('sqlite', from) },
  { name: 'postgres', open: (from) => openTestDatabase('postgres', from) },
];

/**
 * The dialects suites loop over: both, unless `TEST_DIALECTS` names some (`TEST_DIALECTS=sqlite` for a
 * quicker local run; CI sets nothing and runs both). A name it does not know fails the run rather than
 * silently testing less.
 */
export const dialects = selectDialects(process.env.TEST_DIALECTS);

/**
 * The dialects of a route suite whose difference between the dialects test/parity/dialects.test.ts already
 * checks (both apps sent the same requests on the same real data, the answers compared exactly): the first of
 * `dialects` only, so that the suite checks what each answer should be once and parity that the other dialect
 * agrees. `DIALECT_PARITY_FULL=1` runs such a suite on every dialect of `dialects` too.
 */
export const parityCoveredDialects = process.env.DIALECT_PARITY_FULL === '1' ? dialects : dialects.slice(0, 1);

function selectDialects(names: string | undefined): typeof allDialects {
  if (names === undefined || names.trim() === '') return allDialects;
  const wanted = names.split(',').map((n) => n.trim());
  const unknown = wanted.filter((n) => !allDialects.some((d) => d.name === n));
  if (unknown.length > 0)
    throw new Error(`TEST_DIALECTS: unknown dialect ${unknown.join(', ')} (allowed: ${allDialects.map((d) => d.name).join(', ')})`);
  return allDialects.filter((d) => wanted.includes(d.name));
}
