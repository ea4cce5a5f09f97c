import type { SourceReader } from '../importer.types.ts';
import { genericCsv, genericNdjson } from './generic.ts';
import { gmapsCsv } from './gmaps-csv.ts';
import { michelinCsv } from './michelin-csv.ts';
import { osmNdjsonReaderFactory } from './osm-ndjson.ts';
import { osmPbfReaderFactory } from './osm-pbf.ts';
import { overtureNdjson } from './overture-ndjson.ts';
import { yelpFusionNdjson, yelpOpenNdjson } from './yelp-ndjson.ts';
import { zomatoCsv } from './zomato-csv.ts';

export interface OpenOptions {
  /** Text encoding when the caller knows it (`utf-8`, `latin1`, `windows-1252`…); detected otherwise. */
  encoding?: string;
  /** Overrides the source name stored with each place. */
  source?: string;
  /** Generic `csv`/`ndjson` only: field → column (or NDJSON key / dotted path), e.g. `{ name: 'Business Name' }`. */
  columns?: Record<string, string>;
}

/** One importable file format. `detect` looks at the file name and its first (decompressed) bytes. */
export interface ReaderFactory {
  readonly format: string;
  readonly description: string;
  detect(path: string, head: Buffer): boolean;
  open(path: string, options: OpenOptions): Promise<SourceReader>;
}

/**
 * Every format `leadatlas import` knows, most specific first (auto-detection takes the first match): the
 * generic `csv` and `ndjson` readers accept almost any text file, so they come last.
 */
export const readerFactories: ReaderFactory[] = [
  osmPbfReaderFactory,
  osmNdjsonReaderFactory,
  gmapsCsv,
  michelinCsv,
  zomatoCsv,
  yelpFusionNdjson,
  yelpOpenNdjson,
  overtureNdjson,
  genericCsv,
  genericNdjson,
];
