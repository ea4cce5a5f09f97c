import { basename } from 'node:path';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { placeContacts } from '../contacts/contacts.ts';
import { findPlaceRow, leadRecordOf } from './place-rows.repository.ts';
import { type PlaceDetails, placeRowToPlace } from './places.schema.ts';

const osmElements: Record<string, string> = { n: 'node', w: 'way', r: 'relation' };

/** The record's page at its source, where the source has public pages (OpenStreetMap's element ids). */
export function sourceUrl(source: string, sourceId: string): string | null {
  const m = /^([nwr])(\d+)$/.exec(sourceId);
  return source === 'osm' && m ? `https://www.openstreetmap.org/${osmElements[m[1]!]}/${m[2]}` : null;
}

/**
 * One place by public id with its origin; `not_found` when no place has that id. The public id of a record
 * that has become part of a place of several sources answers that place (whose own id is the one to keep).
 */
export async function getPlaceDetails(db: Db, publicId: string): Promise<PlaceDetails> {
  let row = await findPlaceRow(db, { publicId });
  if (row?.merged_into != null) row = await findPlaceRow(db, { id: row.merged_into });
  if (!row) throw new AppError('not_found', `place ${publicId} does not exist`);
  // A place of several sources: its origin is its leading record's.
  const origin = row.sources === null ? row : ((await leadRecordOf(db, row.id, row.source)) ?? row);
  return {
    ...placeRowToPlace(row),
    origin: {
      source: origin.source,
      source_id: origin.source_id,
      url: sourceUrl(origin.source, origin.source_id),
      first_seen_at: origin.first_seen_at,
      // The base name only: the server's directories are nobody's business.
      file: origin.import_path === null ? null : basename(origin.import_path),
      imported_at: origin.import_finished_at,
    },
    field_sources: {
      ...(row.field_sources === null ? {} : (JSON.parse(row.field_sources) as Record<string, string>)),
      ...Object.fromEntries(placeContacts(row).filled.map((f) => [f, 'website'])),
    },
  };
}
