import type { Db } from '../../src/infra/db/database.ts';
import type { PlaceRecord } from '../../src/modules/places/place-record.ts';
import { createPlaceWriter, type RunCounters } from '../../src/modules/places/places.writer.ts';

export const zeroCounters = (): RunCounters => ({
  read_count: 0,
  imported_count: 0,
  updated_count: 0,
  unchanged_count: 0,
  skipped_count: 0,
  skipped_reasons: {},
});

/** An import run to write places under (places.import_run_id). */
export async function startImportRun(db: Db): Promise<number> {
  const run = await db.kysely
    .insertInto('import_runs')
    .values({ source: 'test', format: 'test', path: '/x', file_sha256: 'x', status: 'running', started_at: new Date().toISOString() })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(run.id);
}

/** Writes places as an import does: through the place writer, under an import run of their own. */
export async function writePlaces(db: Db, records: PlaceRecord[]): Promise<void> {
  await createPlaceWriter(db).writeBatch(records, await startImportRun(db), zeroCounters());
}
