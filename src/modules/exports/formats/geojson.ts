import { Readable } from 'node:stream';
import type { PlaceField } from '../../places/places.schema.ts';
import { pickFields, placeRowToPlace, placeTupleToRow } from '../../places/places.schema.ts';
import type { PlaceBatches } from './cells.ts';

/**
 * A GeoJSON FeatureCollection (RFC 7946): one Point feature per place at [lon, lat], the place id as the
 * feature `id`, the chosen fields as `properties`. A place without coordinates keeps its row with a
 * `null` geometry (allowed by RFC 7946 §3.2), so every format exports the same rows.
 */
export function placesToGeojson(batches: PlaceBatches, fields: readonly PlaceField[]): Readable {
  return Readable.from(geojsonChunks(batches, fields), { objectMode: false });
}

export async function* geojsonChunks(batches: PlaceBatches, fields: readonly PlaceField[]): AsyncGenerator<string> {
  let first = true;
  yield '{"type":"FeatureCollection","features":[';
  for await (const rows of batches) {
    let chunk = '';
    for (const row of rows) {
      const place = placeRowToPlace(placeTupleToRow(row));
      const geometry = place.lat !== null && place.lon !== null ? { type: 'Point', coordinates: [place.lon, place.lat] } : null;
      const feature = { type: 'Feature', id: place.id, geometry, properties: pickFields(place, fields) };
      chunk += `${first ? '\n' : ',\n'}${JSON.stringify(feature)}`;
      first = false;
    }
    yield chunk;
  }
  yield '\n]}\n';
}
