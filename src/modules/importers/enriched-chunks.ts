import type { PlaceRecord } from '../places/place-record.ts';
import { enrichPlace, type Enricher } from './enrich.ts';
import type { SourceReader } from './importer.types.ts';

/** A batch of enriched places plus what the reader consumed to produce it. */
export interface EnrichedChunk {
  records: PlaceRecord[];
  /** Records read for this chunk, stored or skipped. */
  read: number;
  skipped: Record<string, number>;
  bytesRead: number;
}

/** Reads and enriches in batches of `batchSize` storable places. */
export async function* enrichedChunks(reader: SourceReader, enricher: Enricher, batchSize: number): AsyncGenerator<EnrichedChunk> {
  let chunk: EnrichedChunk = { records: [], read: 0, skipped: {}, bytesRead: 0 };
  const skip = (reason: string) => {
    chunk.skipped[reason] = (chunk.skipped[reason] ?? 0) + 1;
  };
  for await (const item of reader.records()) {
    chunk.read++;
    if (!item.ok) {
      skip(item.reason);
      continue;
    }
    const enriched = enrichPlace(reader.source, item.place, enricher);
    if (!enriched.ok) {
      skip(enriched.reason);
      continue;
    }
    chunk.records.push(enriched.record);
    if (chunk.records.length >= batchSize) {
      chunk.bytesRead = reader.bytesRead();
      yield chunk;
      chunk = { records: [], read: 0, skipped: {}, bytesRead: 0 };
    }
  }
  chunk.bytesRead = reader.bytesRead();
  if (chunk.read > 0) yield chunk;
}
