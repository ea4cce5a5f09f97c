import type { WayRows } from './osm-geometry.ts';

/**
 * Contracts between the three stages of an import:
 *   reader (one per file format) -> enrich (taxonomy, gazetteer, phone) -> PlaceWriter (batched upsert).
 */

/** One business as a reader found it, in source terms but with the fields already picked out. */
export interface PlaceInput {
  /** Id unique within the source: OSM `n123`/`w45`/`r6`, a Google place id, a Yelp id… */
  sourceId: string;
  name: string;
  /** Alternative and localised names: `{ en: 'Vienna State Opera', de: 'Wiener Staatsoper', alt: ['…'] }`. */
  names?: Record<string, string | string[]>;
  /** Categories as the source writes them: `amenity=restaurant`, `Italian restaurant`, `sandwiches`. */
  sourceCategories: string[];
  /** All OSM tags, when the source is OpenStreetMap (classification matches presets on them). */
  osmTags?: Record<string, string>;
  phone?: string | null;
  website?: string | null;
  email?: string | null;
  street?: string | null;
  housenumber?: string | null;
  postcode?: string | null;
  /** One-line address when the source has one. */
  address?: string | null;
  /** City as written in the address. */
  city?: string | null;
  region?: string | null;
  /** ISO 3166-1 alpha-2 when the source has it. */
  countryCode?: string | null;
  /** Country as a name when the source has no code (`Italy`, `Deutschland`). */
  countryName?: string | null;
  lat?: number | null;
  lon?: number | null;
  rating?: number | null;
  reviewCount?: number | null;
  /** Opening hours kept as the source wrote them (OSM syntax where it is OSM). */
  openingHours?: string | null;
  attributes?: Record<string, unknown>;
  /**
   * Every contact the source gives, in the source's order, beyond the first of each that `phone`, `website`
   * and `email` carry (those are repeated here first): Overture's `phones`/`websites`/`emails`/`socials`,
   * Foursquare's `tel`/`website`/`email`/`facebook_id`/`instagram`/`twitter`, OSM's `contact:*` tags. Socials
   * are profile URLs or `network:handle` (`facebook:12345`, `instagram:cafe_x`). The enrichment module
   * (`modules/enrichment/`) normalises and stores them as the place's source contacts.
   */
  contacts?: SourceContacts;
  /** The source says the business is closed (Yelp `is_open: 0`, Overture `operating_status` other than open, OSM `disused=yes`…). */
  closed?: boolean;
}

/** A source's own contact lists (see `PlaceInput.contacts`). */
export interface SourceContacts {
  emails?: string[];
  phones?: string[];
  websites?: string[];
  socials?: string[];
}

export type ReadResult = { ok: true; place: PlaceInput } | { ok: false; reason: string };

/** A file opened for import. */
export interface SourceReader {
  /** Source name stored with each place (`osm`, `gmaps`, `yelp`, `overture`, `michelin`, `zomato`…). */
  readonly source: string;
  /** Format name for the import log (`osm-pbf`, `osm-ndjson`, `gmaps-csv`…). */
  readonly format: string;
  /** Size of the file in bytes, for the progress bar. */
  readonly totalBytes: number;
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
  /** A file given as an http(s) URL (Parquet). */
  http?: HttpReadOptions;
}

/** How a file given as a URL is read. */
export interface HttpReadOptions {
  /** Let the URL reach private and loopback addresses (a mirror on the local network); refused otherwise. */
  allowPrivate?: boolean;
  /** Limit for each request, from sending it to the last byte of the answer (default 30 s). */
  timeoutMs?: number;
}

/** One importable file format. `detect` looks at the file name and its first (decompressed) bytes. */
export interface ReaderFactory {
  readonly format: string;
  readonly description: string;
  detect(path: string, head: Buffer): boolean;
  open(path: string, options: OpenOptions): Promise<SourceReader>;
}

/** Chooses taxonomy categories for a place. Returns slugs, primary first; empty when nothing fits. */
export interface Classifier {
  classify(source: string, place: PlaceInput): string[];
}

export interface CityAssignment {
  /** Display name: the address city as written, else the gazetteer city's name. */
  city: string | null;
  cityId: number | null;
  /** `address`: the address city matched the gazetteer; `address_unmatched`: kept as written, not found
   *  (filed under the nearest populated place when there is a point, as `nearest`);
   *  `nearest`: no address city, the nearest populated place was taken; null: no city and no coordinates. */
  source: 'address' | 'address_unmatched' | 'nearest' | null;
  distanceM: number | null;
  /** Country code: with a point, the country whose borders hold it (the input's near a border); else the input's, or the assigned city's. */
  countryCode: string | null;
}

/** Resolves countries and cities for places. */
export interface PlaceLocator {
  /** ISO code from a code or a name in any language the data knows; undefined when unknown. */
  countryCode(codeOrName: string): string | undefined;
  assignCity(input: { city?: string | null; countryCode?: string | null; lat?: number | null; lon?: number | null }): CityAssignment;
}

/** E.164 form of a phone number, or null when it is not a valid number. */
export type PhoneNormaliser = (raw: string, countryCode: string | null) => string | null;
