import type { FileMetaData } from 'hyparquet';
import type { OpenOptions, ReaderFactory } from '../importer.types.ts';
import { foursquareParquet, isFoursquareColumns } from './foursquare.ts';
import { genericRowToPlace, resolveColumns } from './generic.ts';
import { httpRangeBuffer, isHttpUrl } from './http-range.ts';
import { isOvertureColumns, overtureParquet } from './overture.ts';
import { type CountingBuffer, fileBuffer, isParquet, openParquetReader, type ParquetDialect, topLevelColumns } from './parquet.ts';

/** Any other table: columns by the generic readers' synonyms (`name`, `lat`, `phone`…), a GeoParquet point understood. */
function genericParquet(metadata: FileMetaData, options: OpenOptions): ParquetDialect {
  const names = topLevelColumns(metadata);
  const mapping = resolveColumns(names, options.columns);
  return {
    source: 'parquet',
    columns: names,
    statistics: { minLon: mapping.lon, maxLon: mapping.lon, minLat: mapping.lat, maxLat: mapping.lat, country: mapping.country },
    toPlace: (row) => genericRowToPlace(row, mapping),
  };
}

/** Opens a local path or an `http(s)://` URL (read through range requests). */
export async function openParquetBuffer(location: string, options: OpenOptions): Promise<CountingBuffer> {
  return isHttpUrl(location) ? httpRangeBuffer(location, options.http ?? {}) : fileBuffer(location);
}

export const parquetPlaces: ReaderFactory = {
  format: 'parquet',
  description:
    'Parquet or GeoParquet, local or an http(s) URL: Overture places (any schema), Foursquare OS Places, or any table (columns by synonyms)',
  detect: (_path, head) => isParquet(head),
  open: async (location, options) =>
    openParquetReader(await openParquetBuffer(location, options), 'parquet', options, (metadata) => {
      const names = topLevelColumns(metadata);
      if (isOvertureColumns(names)) return overtureParquet;
      if (isFoursquareColumns(names)) return foursquareParquet(metadata);
      return genericParquet(metadata, options);
    }),
};
