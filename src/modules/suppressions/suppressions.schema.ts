import { type Static, Type } from '@sinclair/typebox';

/** The kinds of entries a suppression list holds, each matched against a place by its own key. */
export const suppressionKinds = ['phone', 'domain', 'email', 'place'] as const;
export type SuppressionKind = (typeof suppressionKinds)[number];

export const suppressionsPerPage = { default: 100, minimum: 1, maximum: 1000 } as const;
/** Entries a JSON body may carry; longer lists go as CSV, streamed. */
export const maxJsonEntries = 10_000;
/** Entries and bytes one CSV upload may carry. */
export const maxCsvEntries = 2_000_000;
export const maxCsvBytes = 256 * 1024 * 1024;
/** Refused entries an answer lists (it counts them all). */
export const listedRejections = 100;

const kindSchema = Type.Unsafe<SuppressionKind>({
  type: 'string',
  enum: [...suppressionKinds],
  description:
    '`phone` (any format: matched in E.164), `domain` (a website or domain: its registrable domain), `email`, `place` (a public place id)',
});
const countrySchema = Type.String({
  pattern: '^[A-Za-z]{2}$',
  description: 'ISO 3166-1 alpha-2 country of phone numbers written nationally (`089 21 99 89 0` with `DE`)',
  examples: ['DE'],
});
const onInvalidSchema = Type.Unsafe<'reject' | 'skip'>({
  type: 'string',
  enum: ['reject', 'skip'],
  default: 'reject',
  description:
    '`reject` (default): any entry that is not valid refuses the whole request (400 listing them) and nothing is added; `skip`: the valid entries are added and the others counted and listed in `rejected`',
});

export const SuppressionValueSchema = Type.String({
  minLength: 1,
  maxLength: 320,
  description: 'A phone number, website or domain, email address or place id',
  examples: ['+49 89 21 99 89 0', 'www.example.com', 'sales@example.com', 'plc_3f7kq2m5x7ab4cde'],
});

export const SuppressionsBodySchema = Type.Object(
  {
    entries: Type.Array(
      Type.Union([
        SuppressionValueSchema,
        Type.Object(
          { type: Type.Optional(kindSchema), value: SuppressionValueSchema, country: Type.Optional(countrySchema) },
          { additionalProperties: false },
        ),
      ]),
      {
        minItems: 1,
        maxItems: maxJsonEntries,
        description: `At most ${maxJsonEntries.toLocaleString('en')} entries (a CSV upload takes more): a value (its type detected) or {type, value, country}`,
      },
    ),
    country: Type.Optional(countrySchema),
  },
  {
    additionalProperties: false,
    examples: [{ entries: [{ type: 'phone', value: '089 21 99 89 0', country: 'DE' }, 'example.com', 'sales@example.org'] }],
  },
);
export type SuppressionsBody = Static<typeof SuppressionsBodySchema>;

export const SuppressionsUploadQuerySchema = Type.Object(
  { country: Type.Optional(countrySchema), on_invalid: Type.Optional(onInvalidSchema) },
  { additionalProperties: false },
);
export type SuppressionsUploadQuery = Static<typeof SuppressionsUploadQuerySchema>;

const CountsSchema = Type.Object(
  {
    phone: Type.Integer(),
    domain: Type.Integer(),
    email: Type.Integer(),
    place: Type.Integer(),
    total: Type.Integer(),
  },
  { description: 'Entries of the list per type' },
);

export const SuppressionsAddedSchema = Type.Object({
  received: Type.Integer({ description: 'Entries read from the request' }),
  added: Type.Integer({ description: 'Entries new to the list' }),
  duplicates: Type.Integer({ description: 'Valid entries the list already had (or that came twice)' }),
  rejected: Type.Integer({ description: 'Entries that were not valid (with `on_invalid=skip`; otherwise the request is refused)' }),
  rejected_entries: Type.Array(
    Type.Object({ at: Type.String({ description: '`entries[3]` or `line 17`' }), value: Type.String(), message: Type.String() }),
    { description: `The first ${listedRejections} entries that were not valid` },
  ),
  counts: CountsSchema,
});
export type SuppressionsAdded = Static<typeof SuppressionsAddedSchema>;

export const SuppressionsListQuerySchema = Type.Object(
  {
    per_page: Type.Optional(
      Type.Integer({
        ...suppressionsPerPage,
        description: `Entries per page: default ${suppressionsPerPage.default}, from ${suppressionsPerPage.minimum} to ${suppressionsPerPage.maximum}`,
      }),
    ),
    cursor: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,200}$', description: '`next_cursor` of the previous page' })),
    type: Type.Optional(kindSchema),
  },
  { additionalProperties: false },
);
export type SuppressionsListQuery = Static<typeof SuppressionsListQuerySchema>;

export const SuppressionSchema = Type.Object({
  id: Type.Integer({ description: 'Pass to DELETE /api/v1/user-api/suppressions/{id}' }),
  type: kindSchema,
  value: Type.String({ description: 'As sent' }),
  key: Type.String({
    description: 'What places are matched by: E.164, registrable domain, lower-case email or place id',
    examples: ['+49892199890', 'example.com'],
  }),
  created_at: Type.String({ format: 'date-time' }),
});
export type Suppression = Static<typeof SuppressionSchema>;

export const SuppressionsPageSchema = Type.Object({
  data: Type.Array(SuppressionSchema, { description: 'Oldest first' }),
  counts: CountsSchema,
  per_page: Type.Integer(),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' }),
});
export type SuppressionsPage = Static<typeof SuppressionsPageSchema>;

export const SuppressionParamsSchema = Type.Object(
  { id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: '`id` of an entry of the list' }) },
  { additionalProperties: false },
);

export const DeleteAllQuerySchema = Type.Object(
  {
    confirm: Type.Unsafe<'true'>({ type: 'string', enum: ['true'], description: 'Must be `true`: removing every entry cannot be undone' }),
  },
  { additionalProperties: false },
);

export const DeletedSchema = Type.Object({ deleted: Type.Integer(), counts: CountsSchema });
export type Deleted = Static<typeof DeletedSchema>;
