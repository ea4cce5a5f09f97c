import type { ReaderFactory } from '../importer.types.ts';
import { foursquareCsv } from './foursquare.ts';
import { genericCsv, genericNdjson } from './generic.ts';
import { gmapsCsv } from './gmaps-csv.ts';
import { michelinCsv } from './michelin-csv.ts';
import { osmNdjsonReaderFactory } from './osm-ndjson.ts';
import { osmPbfReaderFactory } from './osm-pbf.ts';
import { overtureNdjson } from './overture.ts';
import { parquetPlaces } from './parquet-places.ts';
import { yelpFusionNdjson, yelpOpenNdjson } from './yelp-ndjson.ts';
import { zomatoCsv } from './zomato-csv.ts';

/**
 * Every format `leadatlas import` knows, most specific first (auto-detection takes the first match): the
 * generic `csv` and `ndjson` readers accept almost any text file, so they come last.
 */
export const readerFactories: ReaderFactory[] = [
  osmPbfReaderFactory,
  parquetPlaces,
  osmNdjsonReaderFactory,
  gmapsCsv,
  michelinCsv,
  zomatoCsv,
  yelpFusionNdjson,
  yelpOpenNdjson,
  overtureNdjson,
  foursquareCsv,
  genericCsv,
  genericNdjson,
];
