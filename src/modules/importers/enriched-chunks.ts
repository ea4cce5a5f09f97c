import { appendPlaceRow, emptyPlaceRows, type PlaceRows } from '../places/place-record.ts';
import { type Enricher, enrichPlace } from './enrich.ts';
import type { SourceReader } from './importer.types.ts';
import type { WayRows } from './osm-geometry.ts';

/** A batch of enriched places plus what the reader consumed to produce it. */
export interface EnrichedChunk {
  /** The storable places, as flat rows (see PlaceRows: the shape that crosses threads cheaply). */
  rows: PlaceRows;
  /** Records read for this chunk, stored or skipped. */
  read: number;
  skipped: Record<string, number>;
  bytesRead: number;
  /** OpenStreetMap ways read alongside, kept for change files (`SourceReader.takeWays`). */
  ways?: WayRows;
  /** After the last chunk of a part of a split release: the part, written whole once this chunk is stored. */
  partDone?: string;
}

const emptyChunk = (): EnrichedChunk => ({ rows: emptyPlaceRows(), read: 0, skipped: {}, bytesRead: 0 });

/** Storable places in the first chunk; each next chunk doubles it, up to the batch size. */
const FIRST_CHUNK = 500;

/**
 * Reads and enriches in batches of `batchSize` storable places. The first chunks are smaller (500, 1,000,
 * 2,000, 4,000, then `batchSize`), so the writer starts within a few milliseconds of the first place read
 * instead of waiting for `batchSize` of them: on a small file (the merged .osm.pbf has 19,327 places) the
 * wait for a first chunk of 5,000 was a quarter of the file. `keep.border`: see `OpenOptions.border`.
 */
export async function* enrichedChunks(
  reader: SourceReader,
  enricher: Enricher,
  batchSize: number,
  keep: { border?: string } = {},
): AsyncGenerator<EnrichedChunk> {
  let limit = Math.min(FIRST_CHUNK, batchSize);
  let chunk = emptyChunk();
  const skip = (reason: string) => {
    chunk.skipped[reason] = (chunk.skipped[reason] ?? 0) + 1;
  };
  for await (const item of reader.records()) {
    chunk.read++;
    if (!item.ok) {
      skip(item.reason);
      continue;
    }
    const enriched = enrichPlace(reader, item.place, enricher);
    if (!enriched.ok) {
      skip(enriched.reason);
      continue;
    }
    // The country's border, as the gazetteer files the place (`OpenOptions.border`), whatever its address says.
    if (keep.border !== undefined && enriched.record.country_code !== keep.border) {
      skip('outside the border');
      continue;
    }
    if (item.place.withheld !== undefined) {
      skip(item.place.withheld);
      continue;
    }
    appendPlaceRow(chunk.rows, enriched.record);
    if (chunk.rows.count >= limit) {
      chunk.bytesRead = reader.bytesRead();
      takeWays(reader, chunk);
      yield chunk;
      chunk = emptyChunk();
      limit = Math.min(limit * 2, batchSize);
    }
  }
  chunk.bytesRead = reader.bytesRead();
  takeWays(reader, chunk);
  if (chunk.read > 0 || chunk.ways) yield chunk;
}

function takeWays(reader: SourceReader, chunk: EnrichedChunk): void {
  const ways = reader.takeWays?.();
  if (ways) chunk.ways = ways;
}
