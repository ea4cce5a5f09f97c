import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import type { PlaceInput } from '../places/place-input.ts';

/**
 * The category fields of the real sample files in /work/shared/data (see its README), read the way the
 * readers hand them over in `PlaceInput.sourceCategories`, for the classifier's tests and coverage bench.
 */
export interface SourceSample {
  source: string;
  file: string;
  places: Array<Pick<PlaceInput, 'sourceCategories' | 'osmTags'>>;
}

const gz = (path: string, encoding: BufferEncoding = 'utf8'): string => gunzipSync(readFileSync(path)).toString(encoding);
const ndjson = (path: string): Array<Record<string, unknown>> =>
  gz(path)
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const csv = (path: string, encoding: BufferEncoding = 'utf8'): Array<Record<string, string>> =>
  parse(gz(path, encoding), { columns: true, skip_empty_lines: true }) as Array<Record<string, string>>;
const list = (v: string | undefined): string[] =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

export function readSourceSamples(dataDir: string): SourceSample[] {
  const at = (f: string) => join(dataDir, f);
  const gmaps = ['ratings/gmaps-scraper-europe-115.csv.gz', 'ratings/gmaps-scraper-plano-tx-73.csv.gz'];
  return [
    {
      source: 'osm',
      file: 'osm/osm-pois-all.ndjson.gz',
      places: ndjson(at('osm/osm-pois-all.ndjson.gz'))
        .filter((r) => typeof r['name'] === 'string' && r['name'] !== '')
        .map((r) => ({ sourceCategories: [String(r['category'])], osmTags: r['tags'] as Record<string, string> })),
    },
    {
      source: 'gmaps',
      file: gmaps.join(' + '),
      places: gmaps.flatMap((f) => csv(at(f)).map((r) => ({ sourceCategories: list(r['category']) }))),
    },
    {
      source: 'yelp',
      file: 'ratings/yelp-fusion-4cities-2018.ndjson.gz (aliases)',
      places: ndjson(at('ratings/yelp-fusion-4cities-2018.ndjson.gz')).map((r) => ({
        sourceCategories: (r['categories'] as Array<{ alias: string }>).map((c) => c.alias),
      })),
    },
    {
      source: 'yelp',
      file: 'ratings/yelp-fusion-4cities-2018.ndjson.gz (titles)',
      places: ndjson(at('ratings/yelp-fusion-4cities-2018.ndjson.gz')).map((r) => ({
        sourceCategories: (r['categories'] as Array<{ title: string }>).map((c) => c.title),
      })),
    },
    {
      source: 'yelp',
      file: 'ratings/yelp-open-dataset-business-sample5000.ndjson.gz',
      places: ndjson(at('ratings/yelp-open-dataset-business-sample5000.ndjson.gz')).map((r) => ({
        sourceCategories: list(r['categories'] as string | undefined),
      })),
    },
    {
      source: 'overture',
      file: 'places/overture-places-boulder-3545.ndjson.gz',
      places: ndjson(at('places/overture-places-boulder-3545.ndjson.gz')).map((r) => {
        const c = r['categories'] as { primary?: string | null; alternate?: string[] | null } | null;
        return { sourceCategories: [c?.primary, ...(c?.alternate ?? [])].filter((s): s is string => !!s) };
      }),
    },
    {
      source: 'michelin',
      file: 'places/michelin-guide-2022-6510.csv.gz',
      places: csv(at('places/michelin-guide-2022-6510.csv.gz')).map((r) => ({ sourceCategories: list(r['Cuisine']) })),
    },
    {
      source: 'zomato',
      file: 'ratings/zomato-restaurants-9551.csv.gz',
      places: csv(at('ratings/zomato-restaurants-9551.csv.gz'), 'latin1').map((r) => ({ sourceCategories: list(r['Cuisines']) })),
    },
  ];
}
