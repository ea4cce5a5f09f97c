import { Readable } from 'node:stream';
import type { PlaceField } from '../../places/places.schema.ts';
import { type PlaceBatches, pickedPlaces } from './cells.ts';

/**
 * A plain JSON array of places (the chosen fields), written element by element. No envelope: the
 * export's metadata travels in headers (`x-export-id`, Content-Disposition), and a bare array is what
 * `jq '.[]'`, spreadsheets' JSON import and `JSON.parse` expect.
 */
export function placesToJson(batches: PlaceBatches, fields: readonly PlaceField[]): Readable {
  return Readable.from(jsonChunks(batches, fields), { objectMode: false });
}

export async function* jsonChunks(batches: PlaceBatches, fields: readonly PlaceField[]): AsyncGenerator<string> {
  let first = true;
  yield '[';
  for await (const places of pickedPlaces(batches, fields)) {
    let chunk = '';
    for (const p of places) {
      chunk += `${first ? '\n' : ',\n'}${JSON.stringify(p)}`;
      first = false;
    }
    yield chunk;
  }
  yield first ? ']\n' : '\n]\n';
}
