import { Type } from '@sinclair/typebox';

const lang = Type.String({
  pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$',
  description: 'Language of the names (default: Accept-Language, then English)',
  examples: ['de', 'fr'],
});

export const CategoriesQuerySchema = Type.Object(
  {
    lang: Type.Optional(lang),
    parent: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'Only the direct children of this slug', examples: ['shop'] }),
    ),
  },
  { additionalProperties: false },
);

export const CategorySchema = Type.Object({
  slug: Type.String({ examples: ['veterinary'] }),
  name: Type.String({ description: 'In the language asked for, else its base language, else English', examples: ['Tierarzt'] }),
  parent: Type.Union([Type.String(), Type.Null()], { description: 'Parent slug, null at the top' }),
  place_count: Type.Integer({ description: 'Places whose primary category is this one' }),
  place_count_with_children: Type.Integer({
    description: 'Places a `type=` search for this slug matches: this category and every one below it',
  }),
});

export const CategoriesResponseSchema = Type.Object({
  lang: Type.String({ description: 'The language asked for (names fall back to English where the taxonomy has none)' }),
  total: Type.Integer(),
  data: Type.Array(CategorySchema),
});

export const CountriesQuerySchema = Type.Object({ lang: Type.Optional(lang) }, { additionalProperties: false });

export const CountrySchema = Type.Object({
  code: Type.String({ description: 'ISO 3166-1 alpha-2', examples: ['DE'] }),
  alpha3: Type.Union([Type.String(), Type.Null()], { description: 'ISO 3166-1 alpha-3', examples: ['DEU'] }),
  name: Type.String({ description: 'In the language asked for when known, else English', examples: ['Germany'] }),
  native_name: Type.Union([Type.String(), Type.Null()], { examples: ['Deutschland'] }),
  continent: Type.Union([Type.String(), Type.Null()], { examples: ['EU'] }),
  place_count: Type.Integer(),
});

export const CountriesResponseSchema = Type.Object({
  lang: Type.String(),
  total: Type.Integer(),
  data: Type.Array(CountrySchema),
});
