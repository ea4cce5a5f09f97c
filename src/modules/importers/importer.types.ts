import type { PlaceInput } from '../places/place-input.ts';
import type { WayRows } from './osm-geometry.ts';

/**
 * Contracts between the three stages of an import:
 *   reader (one per file format) -> enrich (taxonomy, gazetteer, phone) -> PlaceWriter (batched upsert).
 */

export type ReadResult = { ok: true; place: PlaceInput } | { ok: false; reason: string };

/** A file opened for import. */
export interface SourceReader {
  /** Source name stored with each place (`osm`, `gmaps`, `yelp`, `overture`, `michelin`, `zomato`…). */
  readonly source: string;
  /**
   * Whose vocabulary the records' categories are written in (`overture`, `foursquare`, `gmaps`, `osm`…): the
   * format's own source name, whatever `--source` labels the places. The classifier picks the publisher's
   * category table by it, never by the label.
   */
  readonly publisher: string;
  /** Format name for the import log (`osm-pbf`, `osm-ndjson`, `gmaps-csv`…). */
  readonly format: string;
  /** Size of the file in bytes, for the progress bar. */
  readonly totalBytes: number;
  /** Records in the file, when its format says before it is read (Parquet's row counts). */
  readonly totalRecords?: number;
  /** Bytes consumed so far (of the file on disk, compressed or not). */
  bytesRead(): number;
  records(): AsyncIterable<ReadResult>;
  /**
   * OpenStreetMap readers that know ways' nodes: the ways read since the last call that the catalog keeps
   * for change files (`osm-geometry.ts`). Called whenever a chunk of places is handed on.
   */
  takeWays?(): WayRows | undefined;
}

export interface OpenOptions {
  /** Text encoding when the caller knows it (`utf-8`, `latin1`, `windows-1252`…); detected otherwise. */
  encoding?: string;
  /** Overrides the source name stored with each place. */
  source?: string;
  /** Generic `csv`/`ndjson` only: field → column (or NDJSON key / dotted path), e.g. `{ name: 'Business Name' }`. */
  columns?: Record<string, string>;
  /** Parquet only: keep the places inside minLon, minLat, maxLon, maxLat (whole row groups outside are not read). */
  bbox?: [number, number, number, number];
  /** Parquet only: keep the places of this country (ISO 3166-1 alpha-2). */
  country?: string;
  /** Parquet only: keep the places whose source confidence (Overture's `confidence`, 0–1) is at least this. */
  minConfidence?: number;
  /**
   * Parquet only: keep the places inside any of these boxes (minLon, minLat, maxLon, maxLat each): a country's
   * (`geo/country-area.ts`), whose row groups and rows outside every box are not read. With `border`.
   */
  areas?: Array<[number, number, number, number]>;
  /**
   * Keep only the places the gazetteer files under this country (ISO 3166-1 alpha-2) once enriched: the
   * country's border decides, not the source's address; the others are skipped as `outside the border`.
   */
  border?: string;
  /** A file given as an http(s) URL (Parquet). */
  http?: HttpReadOptions;
}

/** How a file given as a URL is read. */
export interface HttpReadOptions {
  /** Let the URL reach private and loopback addresses (a mirror on the local network); refused otherwise. */
  allowPrivate?: boolean;
  /** Limit for each request, from sending it to the last byte of the answer (default 30 s). */
  timeoutMs?: number;
  /** Headers sent with every request (`Authorization: Bearer …` for a host that wants a token). */
  headers?: Record<string, string>;
}

/** One importable file format. `detect` looks at the file name and its first (decompressed) bytes. */
export interface ReaderFactory {
  readonly format: string;
  readonly description: string;
  detect(path: string, head: Buffer): boolean;
  open(path: string, options: OpenOptions): Promise<SourceReader>;
}
