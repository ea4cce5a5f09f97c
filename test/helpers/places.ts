import type { Db } from '../../src/infra/db/database.ts';
import { contentHash, type PlaceRecord, publicPlaceId } from '../../src/modules/places/place-record.ts';
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

/** A restaurant in Munich with every other field empty, as an import would write it; `overrides` change any field. */
export function testPlaceRecord(source: string, sourceId: string, overrides: Partial<PlaceRecord> = {}): PlaceRecord {
  const base: Omit<PlaceRecord, 'content_hash'> = {
    public_id: publicPlaceId(source, sourceId),
    source,
    source_id: sourceId,
    name: `Trattoria ${sourceId}`,
    names: null,
    category: 'restaurant',
    categories: ['restaurant'],
    source_categories: null,
    phone: null,
    phone_e164: null,
    website: null,
    website_domain: null,
    email: null,
    street: null,
    housenumber: null,
    postcode: null,
    address: null,
    region: null,
    city: 'München',
    city_id: 2867714,
    city_source: 'address',
    city_distance_m: null,
    country_code: 'DE',
    lat: 48.137,
    lon: 11.575,
    rating: null,
    review_count: null,
    opening_hours: null,
    attributes: null,
    closed: 0,
    ...overrides,
  };
  return { ...base, content_hash: contentHash(base) };
}
