import type { SourceReader } from '../importer.types.ts';
import { osmNdjsonReaderFactory } from './osm-ndjson.ts';
import { osmPbfReaderFactory } from './osm-pbf.ts';

export interface OpenOptions {
  /** Text encoding when the caller knows it (`utf-8`, `latin1`, `windows-1252`…); detected otherwise. */
  encoding?: string;
  /** Overrides the source name stored with each place. */
  source?: string;
}

/** One importable file format. `detect` looks at the file name and its first (decompressed) bytes. */
export interface ReaderFactory {
  readonly format: string;
  readonly description: string;
  detect(path: string, head: Buffer): boolean;
  open(path: string, options: OpenOptions): Promise<SourceReader>;
}

/** Every format `leadatlas import` knows, most specific first (auto-detection takes the first match). */
export const readerFactories: ReaderFactory[] = [osmPbfReaderFactory, osmNdjsonReaderFactory];
