import { type Static, Type } from '@sinclair/typebox';
import { PlaceSchema } from '../places/places.schema.ts';

/** Records one call of `POST /api/v2/match` takes at most. */
export const maxRecordsPerCall = 100;

/**
 * The score at or above which the best candidate is a match (when it also clearly beats the runner-up): the
 * threshold whose precision and recall docs/matching.md publishes.
 */
export const defaultMatchThreshold = 0.75;

const text = (maxLength: number, description: string, examples?: string[]) =>
  Type.Optional(Type.String({ maxLength, description, ...(examples ? { examples } : {}) }));

/**
 * One record of a customer's list, typed the way a CRM holds it. Only `ref` and `name` are needed; any other
 * subset works. A record's own problems (no name, an unknown country, coordinates out of range) are answered
 * in its result, never for the whole call: so `name` is optional here and `lat`/`lon` have no range.
 */
export const MatchRecordSchema = Type.Object(
  {
    ref: Type.String({
      minLength: 1,
      maxLength: 200,
      description: "The caller's own id of the record, echoed in its result",
      examples: ['crm-17'],
    }),
    name: text(300, 'The business name as the CRM has it, legal form and all', ['Müller Bäckerei GmbH & Co. KG']),
    address: text(500, 'A one-line address, when the parts are not apart', ['Hotterstr. 12, 80331 München']),
    street: text(200, 'Street, with or without the house number', ['Hotterstr.']),
    housenumber: text(50, 'House number', ['12']),
    postcode: text(20, 'Postcode', ['80331']),
    city: text(200, 'City in any language or spelling the gazetteer knows', ['Munich']),
    country: text(100, 'ISO 3166-1 alpha-2 or alpha-3 code, or a country name', ['DE']),
    phone: text(50, "Phone in any format; national formats are read in the record's country", ['089 1234567']),
    website: text(500, 'Website or bare domain', ['mueller-baeckerei.de']),
    email: text(320, 'Email; its domain counts as the website when that is not a mail provider', ['info@mueller-baeckerei.de']),
    lat: Type.Optional(Type.Number({ description: 'Latitude (WGS 84), −90 to 90', examples: [48.137] })),
    lon: Type.Optional(Type.Number({ description: 'Longitude (WGS 84), −180 to 180', examples: [11.575] })),
  },
  { additionalProperties: false },
);
export type MatchRecordInput = Static<typeof MatchRecordSchema>;

export const MatchRequestSchema = Type.Object(
  {
    records: Type.Array(MatchRecordSchema, {
      minItems: 1,
      maxItems: maxRecordsPerCall,
      description: `Up to ${maxRecordsPerCall} records; results come back in the same order`,
    }),
    threshold: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        description: `Score (0–1) a best candidate needs to be the match; default ${defaultMatchThreshold}, whose precision docs/matching.md publishes`,
      }),
    ),
  },
  { additionalProperties: false },
);
export type MatchRequest = Static<typeof MatchRequestSchema>;

/** Why the best candidate is the match, field by field: what the record and the place have in common. */
export const MatchEvidenceSchema = Type.Object({
  name: Type.Number({ description: 'Name similarity, 0–1, legal forms and business words left out' }),
  address: Type.Union([Type.Literal('same'), Type.Literal('same_street'), Type.Literal('different'), Type.Null()], {
    description:
      '`same`: street and number; `same_street`: the street, no number to compare; `different`: another number or street; null: not compared',
  }),
  phone: Type.Union([Type.Literal('same'), Type.Literal('different'), Type.Null()], {
    description: 'E.164 compared; null when one side has none',
  }),
  website: Type.Union([Type.Literal('same'), Type.Literal('different'), Type.Null()], {
    description: 'Registrable domains compared; null when one side has none',
  }),
  city: Type.Union([Type.Literal('same'), Type.Literal('different'), Type.Null()], {
    description: "The record's city (any spelling the gazetteer knows) and the place's",
  }),
  distance_m: Type.Union([Type.Number(), Type.Null()], {
    description: "Metres between the record's coordinates and the place; null without coordinates",
  }),
});
export type MatchEvidence = Static<typeof MatchEvidenceSchema>;

/** A record's own problem, in the shape of a problem document (RFC 9457) without the request's members. */
export const RecordProblemSchema = Type.Object({
  type: Type.String({ examples: ['https://leadatlas.dev/problems/validation_failed'] }),
  title: Type.String(),
  status: Type.Integer({ description: 'The status the record alone would have had: 400' }),
  detail: Type.String(),
  code: Type.String({ description: 'Stable machine-readable error code', examples: ['validation_failed'] }),
  errors: Type.Array(
    Type.Object({
      field: Type.String({ description: 'The bad field of the record', examples: ['country'] }),
      message: Type.String(),
      allowed: Type.Optional(Type.Unknown()),
    }),
  ),
});
export type RecordProblem = Static<typeof RecordProblemSchema>;

export const MatchCandidateSchema = Type.Object({
  id: Type.String({ description: 'Public place id', examples: ['plc_3f7kq2m5x9ab4cde'] }),
  score: Type.Number({ minimum: 0, maximum: 1 }),
});
export type MatchCandidate = Static<typeof MatchCandidateSchema>;

export const MatchResultSchema = Type.Object({
  ref: Type.String(),
  match: Type.Union(
    [
      Type.Object({
        place: Type.Object(PlaceSchema.properties, {
          description: 'The public place, as search returns it; `status` says whether it is closed or retired',
        }),
        score: Type.Number({ minimum: 0, maximum: 1 }),
        evidence: MatchEvidenceSchema,
      }),
      Type.Null(),
    ],
    { description: 'The place the record is, or null when no candidate reaches the threshold or clearly beats the runner-up' },
  ),
  candidates: Type.Array(MatchCandidateSchema, { description: 'The best candidates, best first (the match among them), at most 5' }),
  error: Type.Optional(RecordProblemSchema),
});

/**
 * A record's result as the service gives it: the public shape plus the catalog's own row id of the matched
 * place (what a job needs to record leads), which the route's schema leaves out of the answer.
 */
export type MatchResult = Omit<Static<typeof MatchResultSchema>, 'match'> & {
  match: { place: Static<typeof PlaceSchema>; score: number; evidence: MatchEvidence; placeRowId: number } | null;
};

export const MatchResponseSchema = Type.Object({
  results: Type.Array(MatchResultSchema, { description: 'One result per record, in the order of the request' }),
  threshold: Type.Number({ description: 'The threshold applied' }),
});
