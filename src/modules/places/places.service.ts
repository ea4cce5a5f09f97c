import { basename } from 'node:path';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { findPlaceByPublicId } from './places.repository.ts';
import { placeRowToPlace, type PlaceDetails } from './places.schema.ts';

const osmElements: Record<string, string> = { n: 'node', w: 'way', r: 'relation' };

/** The record's page at its source, where the source has public pages (OpenStreetMap's element ids). */
export function sourceUrl(source: string, sourceId: string): string | null {
  const m = /^([nwr])(\d+)$/.exec(sourceId);
  return source === 'osm' && m ? `https://www.openstreetmap.org/${osmElements[m[1]!]}/${m[2]}` : null;
}

/** One place by public id with its origin; `not_found` when no place has that id. */
export async function getPlaceDetails(db: Db, publicId: string): Promise<PlaceDetails> {
  const row = await findPlaceByPublicId(db, publicId);
  if (!row) throw new AppError('not_found', `place ${publicId} does not exist`);
  return {
    ...placeRowToPlace(row),
    origin: {
      source: row.source,
      source_id: row.source_id,
      url: sourceUrl(row.source, row.source_id),
      first_seen_at: row.first_seen_at,
      // The base name only: the server's directories are nobody's business.
      file: row.import_path === null ? null : basename(row.import_path),
      imported_at: row.import_finished_at,
    },
  };
}
