import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Enricher } from './enrich.ts';
import { enrichedChunks } from './enriched-chunks.ts';
import type { ReadResult, SourceReader } from './importer.types.ts';

const enricher: Enricher = {
  classifier: { classify: () => ['cafe'] },
  locator: { countryCode: () => null, assignCity: () => ({ city: null, cityId: null, source: null, distanceM: null, countryCode: null }) },
  normalisePhone: () => null,
} as unknown as Enricher;

function reader(count: number): SourceReader {
  let read = 0;
  return {
    source: 'test',
    publisher: 'test',
    format: 'test',
    totalBytes: count,
    bytesRead: () => read,
    async *records(): AsyncIterable<ReadResult> {
      for (let i = 0; i < count; i++) {
        read++;
        // Every tenth record has no name and is skipped: chunk sizes count storable places.
        yield { ok: true, place: { sourceId: `n${i}`, name: i % 10 === 9 ? '' : `Place ${i}`, sourceCategories: [] } };
      }
    },
  };
}

test('chunks start small and double up to the batch size, so the writer starts early', async () => {
  const sizes: number[] = [];
  let read = 0;
  for await (const chunk of enrichedChunks(reader(20_000), enricher, 5000)) {
    sizes.push(chunk.rows.count);
    read += chunk.read;
  }
  assert.deepEqual(sizes, [500, 1000, 2000, 4000, 5000, 5000, 500]);
  assert.equal(read, 20_000);
});

test('a batch size below the first chunk size is every chunk size', async () => {
  const sizes: number[] = [];
  for await (const chunk of enrichedChunks(reader(1000), enricher, 300)) sizes.push(chunk.rows.count);
  assert.deepEqual(sizes, [300, 300, 300, 0]); // the last chunk carries the skipped records' count
});
