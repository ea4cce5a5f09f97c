import type { Db } from '../../../infra/db/database.ts';
import { type Coverage, countryCoverage } from '../../places/coverage.repository.ts';
import type { Enricher } from '../enrich.ts';
import type { ImportProgress } from '../import.service.ts';
import type { HttpReadOptions } from '../importer.types.ts';
import {
  importFoursquare,
  importOsm,
  importOverture,
  type OsmImportOptions,
  type Publisher,
  type PublisherImport,
} from './publisher-import.service.ts';

/**
 * `leadatlas market XX`: a country from the three open sources in one command. OpenStreetMap first (the
 * source conflation trusts most for names, points and addresses), then Overture, then Foursquare, each the
 * publisher import of `publisher-import.service.ts`; every import conflates its records with the others'
 * as it commits (`conflation/`), so a business the three describe is one place. The summary counts the
 * country's places per source and after merging, with their phone, website and email coverage.
 */

/** Where a mirror of the three keeps each layout, under its one `--base-url`. */
export const MIRROR_LAYOUT: Record<Publisher, string> = { osm: 'geofabrik/', overture: 'overture/', foursquare: 'foursquare/' };

export interface MarketOptions {
  country: string;
  /** Per publisher: its root (public by default) and release (`latest` by default). */
  sources: Partial<Record<Publisher, { baseUrl?: string; release?: string }>>;
  http: HttpReadOptions;
  osm: Pick<OsmImportOptions, 'cacheDir' | 'follow'>;
  batchSize?: number;
  onProgress?: (publisher: Publisher, progress: ImportProgress) => void;
  log?: (message: string) => void;
  /** See `PublisherImportOptions.enricher`. */
  enricher?: Enricher;
}

export interface MarketSummary {
  country: string;
  imports: PublisherImport[];
  /** The country's live records per source, and its places once merged, with their contacts. */
  bySource: Record<string, Coverage>;
  merged: Coverage;
}

export const MARKET_PUBLISHERS: readonly Publisher[] = ['osm', 'overture', 'foursquare'];

export async function loadMarket(db: Db, options: MarketOptions): Promise<MarketSummary> {
  const imports: PublisherImport[] = [];
  for (const publisher of MARKET_PUBLISHERS) {
    const source = options.sources[publisher] ?? {};
    const common = {
      country: options.country,
      http: options.http,
      ...(source.baseUrl ? { baseUrl: source.baseUrl } : {}),
      ...(source.release ? { release: source.release } : {}),
      ...(options.batchSize ? { batchSize: options.batchSize } : {}),
      ...(options.onProgress ? { onProgress: (p: ImportProgress) => options.onProgress!(publisher, p) } : {}),
      ...(options.log ? { log: options.log } : {}),
      ...(options.enricher ? { enricher: options.enricher } : {}),
    };
    if (publisher === 'osm') imports.push(await importOsm(db, { ...common, ...options.osm }));
    else if (publisher === 'overture') imports.push(await importOverture(db, common));
    else imports.push(await importFoursquare(db, common));
  }
  const coverage = await countryCoverage(db, options.country, MARKET_PUBLISHERS);
  return { country: options.country, imports, ...coverage };
}
