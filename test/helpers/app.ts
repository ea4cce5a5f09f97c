import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type App, buildApp } from '../../src/app.ts';
import { importFiles } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';
import type { Db, DialectName } from '../../src/infra/db/database.ts';
import { openTestDatabase } from './databases.ts';

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
  const t = await openTestDatabase(options.dialect ?? 'sqlite', 'prepared');
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
