import type { PlaceCriteria, PlaceKey, PlaceSort } from '../query/criteria.ts';
import type { PlacePage } from '../search.reads.ts';
import type { FacetDimension, FacetValue } from './bitmap-index.ts';
import type { ContactHit } from './contact-index.ts';

/**
 * The one way search reads places: `search.service.ts` asks the engine, the engine answers from its index
 * or hands the read to SQL (the read pool: `search.reads.ts`).
 */
export interface SearchEngine {
  /** One page in `sort` after `after`, with the exact total (see `searchPage` in search.reads.ts). */
  searchPage(criteria: PlaceCriteria, sort: PlaceSort, after: PlaceKey | null, limit: number, candidateLimit: number): Promise<PlacePage>;
  countMatches(criteria: PlaceCriteria): Promise<number>;
  /** Exact matches per value of a dimension, largest first. */
  facets(criteria: PlaceCriteria, by: FacetDimension): Promise<FacetValue[]>;
  /** The open places carrying each contact key (`contact-keys.ts`), in the order of the keys, each place once. */
  contactHits(keys: string[]): Promise<ContactHit[]>;
  state(): EngineState;
  /** When the opening-hours pass that the open filter answers from ran (ISO), null before the first. */
  hoursComputedAt(): Promise<string | null>;
  /** Reloads what the engine holds of the opening-hours tables when a pass replaced them (`PlaceMaintenance`, after each check). */
  followHours(): Promise<void>;
  /** Builds the index (memory) and starts following the catalog; resolves once the first build is done. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** What `/readyz` shows of the engine. */
export type EngineState =
  | { engine: 'sql' }
  | {
      engine: 'memory';
      status: 'building' | 'ready' | 'failed';
      version: number | null;
      places: number;
      tail: number;
      builtMs: number | null;
    };
