import type { Readable } from 'node:stream';
import type { PlaceField } from '../../places/places.schema.ts';
import type { PlaceBatches } from './cells.ts';
import { placesToCsv } from './csv.ts';
import { placesToGeojson } from './geojson.ts';
import { placesToJson } from './json.ts';
import { placesToNdjson } from './ndjson.ts';
import { placesToXlsx } from './xlsx.ts';

export interface ExportFormat {
  contentType: string;
  extension: string;
  write(batches: PlaceBatches, fields: readonly PlaceField[]): Readable;
}

/** Every export format by its `format=` name. */
export const exportFormats = {
  csv: { contentType: 'text/csv; charset=utf-8; header=present', extension: 'csv', write: placesToCsv },
  xlsx: { contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', extension: 'xlsx', write: placesToXlsx },
  json: { contentType: 'application/json; charset=utf-8', extension: 'json', write: placesToJson },
  ndjson: { contentType: 'application/x-ndjson; charset=utf-8', extension: 'ndjson', write: placesToNdjson },
  geojson: { contentType: 'application/geo+json; charset=utf-8', extension: 'geojson', write: placesToGeojson },
} as const satisfies Record<string, ExportFormat>;

export type ExportFormatName = keyof typeof exportFormats;
export const exportFormatNames = Object.keys(exportFormats) as ExportFormatName[];
