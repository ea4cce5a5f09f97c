import { resolve } from 'node:path';
import { type App, buildApp } from '../../src/app.ts';
import { importFiles } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';
import { createAccountWithToken, type TestAccount } from './accounts.ts';
import { copyTestSqlite, type TestSqlite } from './databases.ts';

/**
 * The server the fuzz suites (test/fuzz/) send their requests to: Monaco's OpenStreetMap extract imported,
 * limits out of the way, one read thread, and an account whose token holds every scope.
 */
export async function fuzzApp(): Promise<{ t: TestSqlite; app: App; user: TestAccount }> {
  const t = await copyTestSqlite('prepared');
  await importFiles(t.db, [resolve(import.meta.dirname, '../../../shared/data/osm/monaco-2026.osm.pbf')]);
  const big = '1000000000000';
  const app = await buildApp({
    config: loadConfig({
      DATABASE_URL: t.url,
      LOG_LEVEL: 'silent',
      IMPORT_DEMO_DATA: 'false',
      DB_READ_WORKERS: '1',
      // The fuzzer is one client sending thousands of requests: limits would answer 429 to most of them.
      RATE_LIMIT_TOKEN_PER_MINUTE: big,
      RATE_LIMIT_IP_PER_MINUTE: big,
      QUOTA_REQUESTS_PER_DAY: big,
      QUOTA_EXPORT_ROWS_PER_MONTH: big,
    }),
    db: t.db,
  });
  return { t, app, user: await createAccountWithToken(t.db) };
}
