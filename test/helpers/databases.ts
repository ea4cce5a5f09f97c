import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Db, type DialectName } from '../../src/infra/db/database.ts';

export const postgresAdminUrl = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestDatabase {
  db: Db;
  /** Drops the schema / deletes the file. */
  dispose(): Promise<void>;
}

/** A fresh SQLite file in a temp directory (a file, not :memory:, so worker threads and child processes can open it). */
export function openTestSqlite(): TestDatabase & { path: string; url: string } {
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-test-'));
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

/** A fresh PostgreSQL schema, used through search_path, dropped on dispose. */
export async function openTestPostgres(): Promise<TestDatabase & { schema: string; url: string }> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresAdminUrl });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const url = `${postgresAdminUrl}${postgresAdminUrl.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const db = openDatabase(url);
  return {
    db,
    schema,
    url,
    dispose: async () => {
      await db.close();
      const c = new pg.Client({ connectionString: postgresAdminUrl });
      await c.connect();
      await c.query(`DROP SCHEMA ${schema} CASCADE`);
      await c.end();
    },
  };
}

const allDialects: Array<{ name: DialectName; open: () => Promise<TestDatabase> }> = [
  { name: 'sqlite', open: async () => openTestSqlite() },
  { name: 'postgres', open: openTestPostgres },
];

/**
 * The dialects suites loop over: both, unless `TEST_DIALECTS` names some (`TEST_DIALECTS=sqlite` for a
 * quicker local run; CI sets nothing and runs both). A name it does not know fails the run rather than
 * silently testing less.
 */
export const dialects = selectDialects(process.env.TEST_DIALECTS);

function selectDialects(names: string | undefined): typeof allDialects {
  if (names === undefined || names.trim() === '') return allDialects;
  const wanted = names.split(',').map((n) => n.trim());
  const unknown = wanted.filter((n) => !allDialects.some((d) => d.name === n));
  if (unknown.length > 0)
    throw new Error(`TEST_DIALECTS: unknown dialect ${unknown.join(', ')} (allowed: ${allDialects.map((d) => d.name).join(', ')})`);
  return allDialects.filter((d) => wanted.includes(d.name));
}
