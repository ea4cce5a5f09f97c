import type { Readable } from 'node:stream';
import type { PlaceField } from '../../places/places.schema.ts';
import type { PlaceBatches } from './cells.ts';
import { csvChunks, placesToCsv } from './csv.ts';
import { geojsonChunks, placesToGeojson } from './geojson.ts';
import { jsonChunks, placesToJson } from './json.ts';
import { ndjsonChunks, placesToNdjson } from './ndjson.ts';
import { placesToXlsx } from './xlsx.ts';

export interface ExportFormat {
  contentType: string;
  extension: string;
  write(batches: PlaceBatches, fields: readonly PlaceField[]): Readable;
  /**
   * The body as text chunks, for formats whose output is of use cut short (text): the export then knows
   * where each batch ends in the body. Absent for a workbook, whose zip is only readable whole.
   */
  chunks?(batches: PlaceBatches, fields: readonly PlaceField[]): AsyncIterable<string>;
}

/** Every export format by its `format=` name. */
export const exportFormats = {
  csv: { contentType: 'text/csv; charset=utf-8; header=present', extension: 'csv', write: placesToCsv, chunks: csvChunks },
  xlsx: { contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', extension: 'xlsx', write: placesToXlsx },
  json: { contentType: 'application/json; charset=utf-8', extension: 'json', write: placesToJson, chunks: jsonChunks },
  ndjson: { contentType: 'application/x-ndjson; charset=utf-8', extension: 'ndjson', write: placesToNdjson, chunks: ndjsonChunks },
  geojson: { contentType: 'application/geo+json; charset=utf-8', extension: 'geojson', write: placesToGeojson, chunks: geojsonChunks },
} as const satisfies Record<string, ExportFormat>;

export type ExportFormatName = keyof typeof exportFormats;
export const exportFormatNames = Object.keys(exportFormats) as ExportFormatName[];
