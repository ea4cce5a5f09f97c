import { type Static, Type } from '@sinclair/typebox';
import { placeFields } from '../places/places.schema.ts';
import { type ExportFormatName, exportFormatNames } from './formats/index.ts';

export const ExportQuerySchema = Type.Object(
  {
    search_id: Type.String({
      pattern: '^srch_[a-z2-7]{16}$',
      description: 'A saved search of this account (`search_id` of a search response)',
      examples: ['srch_3f7kq2m5x9ab4cde'],
    }),
    // A plain `enum` (not a union of literals) so a bad value answers with the list of allowed formats.
    format: Type.Optional(
      Type.Unsafe<ExportFormatName>({
        type: 'string',
        enum: exportFormatNames,
        default: 'csv',
        description:
          '`csv` (RFC 4180, UTF-8 with BOM, CRLF, header row, formula-safe), `xlsx`, `json` (a plain array of places), ' +
          '`ndjson` (one place per line) or `geojson` (FeatureCollection of Points)',
      }),
    ),
    only_new: Type.Optional(
      Type.Boolean({
        description:
          'true: only the places this account has not exported before (not among its leads); false: all of them. Default: as the search was made (`only_new` of the search)',
      }),
    ),
    fields: Type.Optional(
      Type.String({
        maxLength: 1000,
        description: `Comma-separated columns, in this order; all when absent. Known: ${placeFields.join(', ')}`,
        examples: ['name,phone,website,city'],
      }),
    ),
  },
  { additionalProperties: false },
);
export type ExportQuery = Static<typeof ExportQuerySchema>;
