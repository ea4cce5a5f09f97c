import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { enrichPlace } from '../../src/modules/importers/enrich.ts';
import { loadEnricher } from '../../src/modules/importers/enricher.ts';
import { readerFactories } from '../../src/modules/importers/readers/index.ts';
import type { PlaceRecord } from '../../src/modules/places/place-record.ts';

/** The real data files (`../shared/data`, beside the work tree): read at test time, never copied into the repository. */
export const sharedData = resolve(import.meta.dirname, '../../../shared/data');

/** A gzipped file of `../shared/data` as text. */
export const sharedText = (gz: string): string => gunzipSync(readFileSync(join(sharedData, gz))).toString('utf8');

/** The named OSM POIs of central Porto (about 1.5 km each way), as the NDJSON export has them. */
export function portoOsmLines(): string[] {
  return sharedText('osm/osm-pois-all.ndjson.gz')
    .split('\n')
    .filter((l) => l.includes('"porto-2020"'))
    .filter((l) => {
      const { lat, lon } = JSON.parse(l) as { lat: number; lon: number };
      return Math.abs(lat - 41.1547) < 0.015 && Math.abs(lon - -8.6157) < 0.02;
    });
}

/** The Foursquare OS Places sample's lines, header first (no field of the sample spans lines). */
export const fsqSampleLines = (): string[] => sharedText('places/fsq-os-places-sample-10k-2024-11-19.csv.gz').split('\n');

/** The header and the Portuguese rows of the Foursquare sample. */
export const fsqPortugueseRows = (lines: string[]): string[] => [lines[0]!, ...lines.filter((l) => l.includes(',PT,'))];

/**
 * The files the judged conflation sample refers to, by the name a pair's reference uses (the source name,
 * except `yelp-open`: the Yelp Open Dataset sample, whose records have the source `yelp` too).
 */
export const sampleFiles: Record<string, { file: string; format: string }> = {
  michelin: { file: 'places/michelin-guide-2022-6510.csv.gz', format: 'michelin-csv' },
  osm: { file: 'osm/osm-pois-all.ndjson.gz', format: 'osm-ndjson' },
  overture: { file: 'places/overture-places-boulder-3545.ndjson.gz', format: 'overture-ndjson' },
  yelp: { file: 'ratings/yelp-fusion-4cities-2018.ndjson.gz', format: 'yelp-fusion-ndjson' },
  zomato: { file: 'ratings/zomato-restaurants-9551.csv.gz', format: 'zomato-csv' },
  gmaps: { file: 'ratings/gmaps-scraper-europe-115.csv.gz', format: 'gmaps-csv' },
  'yelp-open': { file: 'ratings/yelp-open-dataset-business-sample5000.ndjson.gz', format: 'yelp-open-ndjson' },
};

/**
 * Reads a source's file through the import's own reader and enriches the records as an import does
 * (taxonomy, gazetteer, E.164 phone, website domain). With `only`, just those source ids are enriched
 * (reading is cheap, enrichment is not); records that fail to read or enrich are left out.
 */
export async function readSampleSource(source: string, only?: ReadonlySet<string>): Promise<Map<string, PlaceRecord>> {
  const spec = sampleFiles[source];
  if (!spec) throw new Error(`no sample file for source ${source}`);
  const factory = readerFactories.find((f) => f.format === spec.format);
  if (!factory) throw new Error(`no reader ${spec.format}`);
  const reader = await factory.open(resolve(sharedData, spec.file), {});
  const enricher = loadEnricher();
  const out = new Map<string, PlaceRecord>();
  for await (const r of reader.records()) {
    if (!r.ok || (only && !only.has(r.place.sourceId))) continue;
    const e = enrichPlace(reader, r.place, enricher);
    if (e.ok) out.set(e.record.source_id, e.record);
  }
  return out;
}
