import { Migrator, type MigrationResultSet } from 'kysely';
import type { Db } from './database.ts';
import { migrations } from './migrations/index.ts';

export async function migrateToLatest(db: Db): Promise<MigrationResultSet> {
  const migrator = new Migrator({ db: db.kysely, provider: { getMigrations: async () => migrations } });
  const result = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`migration ${failed} failed: ${String(result.error instanceof Error ? result.error.message : result.error)}`, {
      cause: result.error,
    });
  }
  return result;
}
