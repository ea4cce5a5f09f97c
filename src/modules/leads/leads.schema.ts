import { type Static, Type } from '@sinclair/typebox';
import { PlaceSchema, placeFields } from '../places/places.schema.ts';

export const leadsPerPage = { default: 20, minimum: 1, maximum: 100 } as const;

export const LeadsQuerySchema = Type.Object(
  {
    per_page: Type.Optional(
      Type.Integer({
        ...leadsPerPage,
        description: `Leads per page: default ${leadsPerPage.default}, from ${leadsPerPage.minimum} to ${leadsPerPage.maximum}`,
      }),
    ),
    cursor: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_-]{1,200}$',
        description: '`next_cursor` of the previous page (keyset paging, stable while leads are added)',
      }),
    ),
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000, description: 'Page number (1-based) when not paging by cursor' })),
    category: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9_]{1,64}$',
        description: 'Places having this category slug (primary or not)',
        examples: ['restaurant'],
      }),
    ),
    city: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'City name as shown on the place, case-insensitive',
        examples: ['München'],
      }),
    ),
    country: Type.Optional(Type.String({ pattern: '^[A-Za-z]{2}$', description: 'ISO 3166-1 alpha-2', examples: ['DE'] })),
    has_phone: Type.Optional(Type.Boolean()),
    has_website: Type.Optional(Type.Boolean()),
    min_rating: Type.Optional(Type.Number({ minimum: 0, maximum: 5 })),
    fields: Type.Optional(
      Type.String({
        description: `Comma-separated place fields to return (default all; \`lead\` always comes). Allowed: ${placeFields.join(', ')}`,
        examples: ['name,phone,website'],
      }),
    ),
  },
  { additionalProperties: false },
);
export type LeadsQuery = Static<typeof LeadsQuerySchema>;

/** A lead: the public place (as in search results and exports; `fields` narrows it) and when the account exported it. */
export const LeadSchema = Type.Object({
  ...Type.Partial(PlaceSchema).properties,
  lead: Type.Object({
    search_id: Type.String({ description: 'The search of the latest export that included the place', examples: ['srch_3f7kq2m5x9ab4cde'] }),
    first_exported_at: Type.String({ format: 'date-time' }),
    last_exported_at: Type.String({ format: 'date-time' }),
  }),
});
export type Lead = Static<typeof LeadSchema>;

export const LeadsPageSchema = Type.Object({
  data: Type.Array(LeadSchema, { description: 'Newest first (by last export), then by lead id' }),
  total: Type.Integer({ description: 'Exact number of leads matching the filters' }),
  per_page: Type.Integer(),
  page: Type.Union([Type.Integer(), Type.Null()], { description: 'The page number when paging by `page`, null with `cursor`' }),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' }),
});
export type LeadsPage = Static<typeof LeadsPageSchema>;

export const LeadCategoriesSchema = Type.Object({
  data: Type.Array(
    Type.Object({
      slug: Type.String({ examples: ['restaurant'] }),
      name: Type.Union([Type.String(), Type.Null()], { description: 'English name from the taxonomy', examples: ['Restaurant'] }),
      count: Type.Integer({ description: 'Leads whose primary category this is' }),
    }),
    { description: 'Most leads first' },
  ),
  total: Type.Integer({ description: 'Every lead of the account' }),
  uncategorised: Type.Integer({ description: 'Leads with no category' }),
});
export type LeadCategories = Static<typeof LeadCategoriesSchema>;
