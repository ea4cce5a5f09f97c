import { type Static, Type } from '@sinclair/typebox';

export const suggestionKinds = ['name', 'category', 'city'] as const;
export type SuggestionKind = (typeof suggestionKinds)[number];

/** Bounds of `limit`, shared by the schema and the service. */
export const suggestionLimit = { default: 10, min: 1, max: 50 } as const;

/** `GET /api/v2/autocomplete`. */
export const AutocompleteQuerySchema = Type.Object(
  {
    q: Type.String({
      minLength: 1,
      maxLength: 100,
      description:
        'What the user typed so far: a prefix of any word of a name, or of several words in order (case, accents, width and script folded)',
      examples: ['caf', 'zahn', 'muen'],
    }),
    kind: Type.Optional(
      Type.Unsafe<SuggestionKind>({
        type: 'string',
        enum: [...suggestionKinds],
        default: 'name',
        description: `What to suggest: names of places (default), categories (in every language the taxonomy ships) or cities (with their exonyms). One of: ${suggestionKinds.join(', ')}`,
      }),
    ),
    country: Type.Optional(
      Type.String({
        minLength: 2,
        maxLength: 100,
        description: 'ISO 3166-1 alpha-2/alpha-3 code or a country name: only places (and cities) of that country, counted there',
        examples: ['DE'],
      }),
    ),
    limit: Type.Optional(
      Type.Integer({
        minimum: suggestionLimit.min,
        maximum: suggestionLimit.max,
        default: suggestionLimit.default,
        description: `Suggestions at most (${suggestionLimit.min}–${suggestionLimit.max})`,
      }),
    ),
  },
  { additionalProperties: false },
);
export type AutocompleteQuery = Static<typeof AutocompleteQuerySchema>;

const SuggestionSchema = Type.Object({
  value: Type.String({
    description: 'What to show and to search with: a name (`query=`), a category name (`type=` takes it, or `slug`), a city name (`city=`)',
  }),
  count: Type.Integer({ description: 'Open places in the catalog it finds (in `country` when given): what the suggestions are ranked by' }),
  place_id: Type.Optional(Type.String({ description: 'kind=name: the most reviewed place of that name (`GET /api/v1/places/{id}`)' })),
  slug: Type.Optional(Type.String({ description: 'kind=category: the category (`type=` takes it); count includes its subcategories' })),
  lang: Type.Optional(Type.String({ description: 'kind=category: the language of `value`' })),
  city_id: Type.Optional(Type.Integer({ description: 'kind=city: the GeoNames id' })),
  country: Type.Optional(Type.String({ description: 'kind=city: ISO 3166-1 alpha-2' })),
  matched: Type.Optional(
    Type.String({ description: 'kind=city: the other name (an exonym, folded) the prefix matched, when not the city’s own' }),
  ),
});
export type Suggestion = Static<typeof SuggestionSchema>;

export const AutocompleteResponseSchema = Type.Object({
  kind: Type.Union(
    suggestionKinds.map((k) => Type.Literal(k)),
    { description: 'What was suggested' },
  ),
  country: Type.Union([Type.String(), Type.Null()], { description: 'The country the suggestions were limited to (ISO 3166-1 alpha-2)' }),
  data: Type.Array(SuggestionSchema, { description: 'Most places first' }),
});
export type AutocompleteResponse = Static<typeof AutocompleteResponseSchema>;
