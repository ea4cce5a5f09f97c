import { Readable } from 'node:stream';
import type { PlaceField } from '../../places/places.schema.ts';
import { type PlaceBatches, pickedPlaces } from './cells.ts';

/** Newline-delimited JSON: one place object per line (the chosen fields), `\n` after every line. */
export function placesToNdjson(batches: PlaceBatches, fields: readonly PlaceField[]): Readable {
  return Readable.from(ndjsonChunks(batches, fields), { objectMode: false });
}

export async function* ndjsonChunks(batches: PlaceBatches, fields: readonly PlaceField[]): AsyncGenerator<string> {
  for await (const places of pickedPlaces(batches, fields)) {
    let chunk = '';
    for (const p of places) chunk += `${JSON.stringify(p)}\n`;
    yield chunk;
  }
}
