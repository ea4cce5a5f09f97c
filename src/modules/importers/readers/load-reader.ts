import type { ReaderFactory } from './index.ts';

/**
 * Each format's reader, imported on its own. The import worker is told the format and needs only that
 * reader: importing `index.ts` loads every reader with its CSV parser and encoding detection (~35 ms more
 * of the worker's start-up, which every import waits for). `index.ts` stays the list detection goes by;
 * a test checks that both name the same factories.
 */
const loaders: Record<string, () => Promise<ReaderFactory>> = {
  'osm-pbf': async () => (await import('./osm-pbf.ts')).osmPbfReaderFactory,
  'osm-ndjson': async () => (await import('./osm-ndjson.ts')).osmNdjsonReaderFactory,
  'gmaps-csv': async () => (await import('./gmaps-csv.ts')).gmapsCsv,
  'michelin-csv': async () => (await import('./michelin-csv.ts')).michelinCsv,
  'zomato-csv': async () => (await import('./zomato-csv.ts')).zomatoCsv,
  'yelp-fusion-ndjson': async () => (await import('./yelp-ndjson.ts')).yelpFusionNdjson,
  'yelp-open-ndjson': async () => (await import('./yelp-ndjson.ts')).yelpOpenNdjson,
  'overture-ndjson': async () => (await import('./overture-ndjson.ts')).overtureNdjson,
  csv: async () => (await import('./generic.ts')).genericCsv,
  ndjson: async () => (await import('./generic.ts')).genericNdjson,
};

/** The reader of one format, or undefined for a format no reader has. */
export async function loadReaderFactory(format: string): Promise<ReaderFactory | undefined> {
  return Object.hasOwn(loaders, format) ? loaders[format]!() : undefined;
}

/** The formats `loadReaderFactory` knows (for the test that compares them with `readerFactories`). */
export const loadableFormats: readonly string[] = Object.keys(loaders);
