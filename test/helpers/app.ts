import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type App, buildApp } from '../../src/app.ts';
import { importFiles } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';
import type { Db, DialectName } from '../../src/infra/db/database.ts';
import { copyOpenSqlite, copyTestSqlite, openTestDatabase, type TestDatabase, type TestSqlite } from './databases.ts';

export interface TestApp {
  app: App;
  db: Db;
  /** DATABASE_URL of the test database. */
  url: string;
  /** Closes the app, then drops the database. */
  close(): Promise<void>;
}

export interface TestAppOptions {
  /**
   * `sqlite` (a temp file, the default) or `postgres` (a schema of its own in the local PostgreSQL, dropped
   * on close). Route tests loop over `dialects` (test/helpers/databases.ts) and pass each one here.
   */
  dialect?: DialectName;
  /**
   * A database to build on instead of a new copy of the prepared template (it must hold the reference data; say,
   * `copyOpenSqlite` of a catalog the file imported once), disposed of on close like one of its own.
   */
  database?: TestDatabase & { url: string };
  /** Real data files to import first (after migrations and reference data). */
  files?: string[];
  /** Environment overrides on top of the test defaults (silent logs, no demo import). */
  env?: Record<string, string>;
  /** Runs on the migrated database before the app is built (imports of its own, fixtures). */
  prepare?: (db: Db) => Promise<void>;
}

/**
 * The application as the route tests use it, in process (`app.inject`; `app.listen({ port: 0 })` for a
 * real socket): a database of its own, migrated and with the reference data (a copy of the prepared
 * template, test/helpers/templates.ts), the given files imported.
 */
export async function buildTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const t = options.database ?? (await openTestDatabase(options.dialect ?? 'sqlite', 'prepared'));
  try {
    if (options.files?.length) await importFiles(t.db, options.files);
    await options.prepare?.(t.db);
    const exportsDir = mkdtempSync(join(tmpdir(), 'leadatlas-exports-'));
    const config = loadConfig({
      DATABASE_URL: t.url,
      LOG_LEVEL: 'silent',
      IMPORT_DEMO_DATA: 'false',
      EXPORT_DATA_DIR: exportsDir,
      // No opening-hours pass in the background of every test's server: the tests of open filters run it.
      OPENING_HOURS_CHECK_MS: '0',
      // Nor the trust pass (its own tests run it): its writes would move the places version under other tests.
      TRUST_POLL_MS: '0',
      ...options.env,
    });
    const app = await buildApp({ config, db: t.db });
    return {
      app,
      db: t.db,
      url: t.url,
      close: async () => {
        await app.close();
        await t.dispose();
        rmSync(exportsDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await t.dispose();
    throw error;
  }
}

/**
 * Real data files imported into SQLite once for a test file whose suites need the same catalog in several
 * databases (an app each, with state of its own): `copy()` gives each one a copy of its own (`copyOpenSqlite`),
 * so that no test sees another's writes, for the cost of one import. `dispose()` in the file's `after`.
 */
export function sqliteCatalog(files: string[]): { copy(): Promise<TestSqlite>; dispose(): Promise<void> } {
  let imported: Promise<TestSqlite> | undefined;
  const load = async () => {
    const seed = await copyTestSqlite('prepared');
    try {
      await importFiles(seed.db, files);
    } catch (error) {
      await seed.dispose();
      throw error;
    }
    return seed;
  };
  return {
    copy: async () => copyOpenSqlite((await (imported ??= load())).db),
    dispose: async () => {
      const seed = await imported?.catch(() => undefined);
      await seed?.dispose();
    },
  };
}
