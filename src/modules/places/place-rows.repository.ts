import { sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { type PublicPlaceRow, publicPlaceSelection } from './places.schema.ts';

/** Lookups of one place by id: what the places module reads of its own record for its details. */

/** A place with what its details page shows: where its record comes from and, for a place of several sources, which gave each field. */
export type PlaceDetailsRow = PublicPlaceRow & {
  id: number;
  first_seen_at: string;
  merged_into: number | null;
  field_sources: string | null;
  import_path: string | null;
  import_finished_at: string | null;
};

/**
 * One row by public id or by row id. A record that is part of a place of several sources is found by its
 * own public id too (`merged_into` says which place it is part of).
 */
export async function findPlaceRow(db: Db, by: { publicId: string } | { id: number }): Promise<PlaceDetailsRow | undefined> {
  const row = await db.kysely
    .selectFrom('places')
    .leftJoin('import_runs', 'import_runs.id', 'places.import_run_id')
    .select(publicPlaceSelection)
    .select([
      'places.first_seen_at',
      'places.merged_into',
      'places.field_sources',
      'import_runs.path as import_path',
      'import_runs.finished_at as import_finished_at',
    ])
    .where((eb) => ('publicId' in by ? eb('places.public_id', '=', by.publicId) : eb('places.id', '=', by.id)))
    .executeTakeFirst();
  return row;
}

/** The record of a place of several sources that leads it (of the place's `source`, still held by it first), for its origin. */
export async function leadRecordOf(db: Db, placeId: number, source: string): Promise<PlaceDetailsRow | undefined> {
  const lead = await db.kysely
    .selectFrom('places')
    .select('id')
    .where('merged_into', '=', placeId)
    .where('source', '=', source)
    .orderBy(sql`CASE WHEN closed_reason = 'retired' THEN 1 ELSE 0 END`)
    .orderBy('id')
    .executeTakeFirst();
  return lead ? findPlaceRow(db, { id: lead.id }) : undefined;
}
