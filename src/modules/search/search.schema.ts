import { type Static, type TProperties, Type } from '@sinclair/typebox';
import { emailStatuses, phoneTypes, websiteStatuses } from '../contacts/trust.types.ts';
import { PlaceSchema, placeFields } from '../places/places.schema.ts';
import { type FacetDimension, facetDimensions } from './engine/bitmap-index.ts';
import { polygonLimits } from './polygon.ts';
import { type PlaceSort, placeSorts } from './query/criteria.ts';

/** Bounds of `per_page` and `radius` (metres), shared by the schema and the service. */
export const perPage = { default: 20, min: 1, max: 100 } as const;
export const radiusM = { default: 5000, min: 1, max: 200_000 } as const;
export const defaultPerPage = perPage.default;

/** The properties, each optional, keeping their types (which `Object.fromEntries` would lose). */
const optional = <T extends TProperties>(properties: T) => Type.Partial(Type.Object(properties)).properties;

/** An enum rather than a union of literals: one validation error naming the allowed values, not one per value. */
const oneOf = <T extends string>(values: readonly T[], description: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], description: `${description}. One of: ${values.join(', ')}` });

/** A date (`2026-11-01`, midnight UTC) or an instant (`2026-11-01T08:00:00Z`, an offset, or no zone: UTC). */
const instantPattern = '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})?)?$';

const text = (description: string, examples: string[]) => Type.String({ minLength: 1, maxLength: 200, description, examples });

const filterProperties = {
  type: text('A kind of business, in any language or synonym the taxonomy knows. Matches that category and the ones below it.', [
    'restaurant',
    'Tierarzt',
    'opticien',
  ]),
  city: text(
    'A city name or exonym. An ambiguous name resolves to the most populous match (within `country` when given); `resolved.city` says which and lists the alternatives.',
    ['Köln', 'Cologne'],
  ),
  country: Type.String({
    minLength: 2,
    maxLength: 100,
    description: 'ISO 3166-1 alpha-2/alpha-3 code or a country name, e.g. to tell Paris FR from Paris TX',
    examples: ['DE', 'France'],
  }),
  query: text(
    'Free text on names (every localised and alternative name), or what you know of a place: a phone number (`089 2424 3702` in the country or city given, `+49 89 24243702` anywhere), a web address or domain (`www.example.de`), an email address, a street address (`Promenadeplatz 12, München`); the places carrying it come first (see `resolved.query`), then the name search of the rest. For names: each word must occur (words of one or two letters at the start of a word); case, accents and script are folded; typos are tolerated when nothing matches exactly. A kind of business in it (`dentist`, `Zahnarzt`, `coffee shop`) also finds the places of that kind, those whose names match first (see `resolved.type`), and a city named next to it (`pizza Porto`) narrows them.',
    ['ratskeller', 'Koln', 'Zahnarzt'],
  ),
  min_rating: Type.Number({ minimum: 0, maximum: 5, description: 'Only places rated at least this (0–5)', examples: [4] }),
  has_phone: Type.Boolean({ description: 'true: only places with a phone number; false: only places without one' }),
  has_website: Type.Boolean({ description: 'true: only places with a website; false: only without' }),
  has_email: Type.Boolean({
    description: "true: only places with an email address (the source's, or one found on the place's website); false: only without",
  }),
  has_social: Type.Boolean({
    description:
      "true: only places with a social profile (Facebook, Instagram, LinkedIn, X, YouTube, TikTok: the source's or found on the place's website); false: only without",
  }),
  include_closed: Type.Boolean({
    description:
      'true: closed places (the source says so) and retired ones (gone from the latest import of their dataset) match too, with `status` and `closed_at`; default false: open places only',
  }),
  open_now: Type.Boolean({
    description:
      'true: only places open at the moment of the search, by their OpenStreetMap `opening_hours` in their own time zone (public holidays of their country where the library knows them). Places without hours are left out; those whose hours cannot be parsed are neither open nor closed: left out and counted in `resolved.open.unparsed`. A saved search keeps that moment: its pages and exports are of the places open then',
  }),
  open_at: Type.String({
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}$',
    description:
      'Only places open at this local date and time of each place (`YYYY-MM-DDTHH:MM`, no zone: 18:00 is 18:00 in Munich and in Tokyo), from a week back to `OPENING_HOURS_WINDOW_DAYS` ahead (default 42). Same rules as `open_now`, which it cannot be combined with',
    examples: ['2026-12-24T18:00'],
  }),
  near: Type.String({
    pattern: '^\\s*-?\\d+(\\.\\d+)?\\s*,\\s*-?\\d+(\\.\\d+)?\\s*$',
    description: 'Centre point `lat,lon` in degrees; with `radius`',
    examples: ['48.1374,11.5755'],
  }),
  radius: Type.Integer({
    minimum: radiusM.min,
    maximum: radiusM.max,
    description: `Radius around \`near\` in metres (default ${radiusM.default})`,
    examples: [1000],
  }),
  bbox: Type.String({
    pattern: '^\\s*-?\\d+(\\.\\d+)?\\s*(,\\s*-?\\d+(\\.\\d+)?\\s*){3}$',
    description: 'Bounding box `minLon,minLat,maxLon,maxLat` in degrees',
    examples: ['11.50,48.10,11.65,48.18'],
  }),
  email_status: oneOf(
    emailStatuses,
    'Only places whose best email (highest confidence) has this status: `valid_domain` (its domain accepts mail: MX, else A), `no_mx` (neither), `invalid` (not an address), `unknown` (not checked, or DNS gave no answer). See docs/trust.md',
  ),
  phone_type: oneOf(
    phoneTypes,
    "Only places whose best phone is of this type, as libphonenumber knows it in the place's country (`unknown`: an invalid number or one its metadata cannot type)",
  ),
  website_status: oneOf(
    websiteStatuses,
    "Only places whose website's last fetch found it `live`, `redirected` (to another domain), `parked` (a parking or for-sale page), `dead` (DNS or connection failure) or `unknown` (never fetched, or no verdict)",
  ),
  min_confidence: Type.Number({
    minimum: 0,
    maximum: 1,
    description:
      'With a contact filter (`has_email=true`, `has_phone=true`, `has_website=true`, `email_status`, `phone_type`, `website_status`): the best value of each kind asked for must have at least this confidence (0–1, calibrated: of values at 0.8, about 80 % are right). Alone it is refused',
    examples: [0.8],
  }),
  min_lead_score: Type.Number({
    minimum: 0,
    maximum: 1,
    description:
      'Only places whose `lead_score` (0–1: how reachable the place is, from its best email, phone, website, whether it is open and fresh) is at least this',
    examples: [0.6],
  }),
  updated_since: Type.String({
    pattern: instantPattern,
    description:
      'Only places whose content (name, contacts, category, hours…) changed at or after this instant (`2026-11-01`, `2026-11-01T08:00:00Z`; no zone: UTC)',
    examples: ['2026-11-01T00:00:00Z'],
  }),
  verified_since: Type.String({
    pattern: instantPattern,
    description:
      "Only places with a value (an email domain's DNS, the website's fetch: `leadatlas verify`) checked at or after this instant (`2026-11-01`, `2026-11-01T08:00:00Z`; no zone: UTC)",
    examples: ['2026-11-01T00:00:00Z'],
  }),
  // An enum rather than a union of literals: one validation error naming the allowed values, not one per value.
  sort: Type.Unsafe<PlaceSort>({
    type: 'string',
    enum: [...placeSorts],
    description:
      'Order of the results (default `relevance`: names starting with the query first when there is one, else the nearest with `near`, else the most reviewed). `rating`, `review_count` and `lead_score` run highest first; `distance` needs `near`; `name` A–Z. Ties break on a stable id.',
  }),
};

/** Not a filter of the catalog but of the account: kept with the saved search, applied each time it runs. */
const accountFilterProperties = {
  only_new: Type.Boolean({
    description:
      'true: leave out the places this account has already exported (its leads); `total` counts the others. An export of the search keeps to it too',
  }),
};

const pagingProperties = {
  per_page: Type.Integer({
    minimum: perPage.min,
    maximum: perPage.max,
    default: perPage.default,
    description: `Places per page, ${perPage.min}–${perPage.max} (default ${perPage.default})`,
  }),
  fields: Type.String({
    description: `Comma-separated place fields to return (default all). Allowed: ${placeFields.join(', ')}`,
    examples: ['name,phone,website,rating'],
  }),
};

export const MapSearchQuerySchema = Type.Object(
  {
    ...optional(filterProperties),
    ...optional(accountFilterProperties),
    ...optional(pagingProperties),
    cursor: Type.Optional(
      Type.String({
        maxLength: 500,
        description: 'Continues a saved search: the opaque cursor of `links.next`. Send it with `per_page`/`fields` only.',
      }),
    ),
    lang: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$',
        description: 'Language of `type` and of category names in the response; defaults to Accept-Language',
        examples: ['de'],
      }),
    ),
  },
  { additionalProperties: false },
);
export type MapSearchQuery = Static<typeof MapSearchQuerySchema>;

/**
 * `POST /api/v2/map/search`: a drawn area and the filters of the GET form, except those of another area
 * (`near`, `radius`, `bbox`). The polygon's shape is checked by `parseSearchPolygon` (each bad ring or
 * position named), so the schema only says what it is.
 */
const { near: _near, radius: _radius, bbox: _bbox, ...areaFilterProperties } = filterProperties;
export const MapSearchBodySchema = Type.Object(
  {
    polygon: Type.Object(
      {
        type: Type.Unsafe<'Polygon' | 'MultiPolygon'>({ type: 'string', enum: ['Polygon', 'MultiPolygon'] }),
        coordinates: Type.Optional(
          Type.Array(Type.Unknown(), {
            description:
              'Required. GeoJSON (RFC 7946) coordinates, [lon, lat] in degrees: Polygon `[[[lon, lat], …], …]` (the outer ring, then holes); MultiPolygon `[Polygon coordinates, …]`. Each ring closed (last position = first), at least 4 positions',
          }),
        ),
      },
      {
        description: `A GeoJSON Polygon or MultiPolygon: the places inside it (holes excluded; a place on an edge counts as inside). Limits: at most ${polygonLimits.maxVertices} positions in all, ${polygonLimits.maxPolygons} polygons, ${polygonLimits.maxRings} rings a polygon; its bounding box at most ${polygonLimits.maxSpanDeg}° of longitude and of latitude (no ring crosses the antimeridian)`,
        examples: [
          {
            type: 'Polygon',
            coordinates: [
              [
                [11.555, 48.13],
                [11.59, 48.13],
                [11.59, 48.15],
                [11.555, 48.15],
                [11.555, 48.13],
              ],
            ],
          },
        ],
      },
    ),
    ...optional(areaFilterProperties),
    per_page: Type.Optional(pagingProperties.per_page),
    fields: Type.Optional(pagingProperties.fields),
    lang: MapSearchQuerySchema.properties.lang,
  },
  {
    additionalProperties: false,
    description: 'A drawn area and, optionally, the filters of `GET /api/v2/map/search` (not `near`, `radius`, `bbox`)',
  },
);
export type MapSearchBody = Static<typeof MapSearchBodySchema>;

/** The filters of a search, as validated: the service's input. */
const SearchFiltersSchema = Type.Partial(Type.Object({ ...filterProperties, ...accountFilterProperties }));
export type SearchFilters = Static<typeof SearchFiltersSchema>;

/** A place in a search response: the public shape narrowed by `fields`, plus the distance when `near` was given. */
export const PlaceItemSchema = Type.Composite(
  [
    Type.Partial(Type.Object(PlaceSchema.properties)),
    Type.Object({ distance_m: Type.Optional(Type.Integer({ description: 'Metres from `near` (only with `near`)' })) }),
  ],
  { description: 'A place (the Place fields); `fields=` keeps only the fields asked for' },
);

const CitySchema = Type.Object({
  id: Type.Integer({ description: 'GeoNames id' }),
  name: Type.String(),
  country: Type.String({ description: 'ISO 3166-1 alpha-2' }),
  admin1: Type.Union([Type.String(), Type.Null()], { description: 'First-level region code' }),
  population: Type.Integer(),
  lat: Type.Number(),
  lon: Type.Number(),
});

const placesCarrying = Type.Integer({ description: 'Places carrying it (0: the whole text was searched by name instead)' });

/** How a search's text was read when it held a contact (`contact-lookup.ts`, `ResolvedContact`). */
export const ResolvedContactSchema = Type.Union(
  [
    Type.Object({
      kind: Type.Literal('phone'),
      input: Type.String(),
      e164: Type.String({ examples: ['+498924243702'] }),
      places: placesCarrying,
    }),
    Type.Object({
      kind: Type.Literal('domain'),
      input: Type.String(),
      domain: Type.String({ examples: ['example.de'] }),
      places: placesCarrying,
    }),
    Type.Object({
      kind: Type.Literal('email'),
      input: Type.String(),
      email: Type.String(),
      domain: Type.Union([Type.String(), Type.Null()], {
        description: "The address's registrable domain: places with that website follow",
      }),
      places: placesCarrying,
    }),
    Type.Object({
      kind: Type.Literal('address'),
      input: Type.String(),
      street: Type.String(),
      housenumber: Type.String(),
      postcode: Type.Union([Type.String(), Type.Null()]),
      city: Type.Union([Type.String(), Type.Null()]),
      places: placesCarrying,
    }),
  ],
  {
    description:
      'Present when the text held a phone number, web address or domain, email address or street address: how it was read and how many places carry it (they come first)',
  },
);

export const ResolutionSchema = Type.Object(
  {
    type: Type.Union([
      Type.Object({
        input: Type.String(),
        slug: Type.String({ examples: ['veterinary'] }),
        name: Type.String({ examples: ['Veterinary'] }),
        includes: Type.Array(Type.String(), { description: 'The category and the ones below it, all matched' }),
        categories: Type.Optional(
          Type.Array(Type.Object({ slug: Type.String(), name: Type.String() }), {
            description:
              'Every category the term names, `slug` first: several when its language uses the term for several (`pizza`: the pizza restaurant and the pizza fast food). `includes` has all of them and the ones below them',
          }),
        ),
        from: Type.Optional(
          Type.Union([Type.Literal('type'), Type.Literal('query')], {
            description:
              '`type`: the `type` parameter; `query`: a kind of business found in the free text (`dentist`, `coffee shop`), whose places match too, those whose names also match first',
          }),
        ),
      }),
      Type.Null(),
    ]),
    city: Type.Union([
      Type.Object({
        input: Type.String(),
        chosen: CitySchema,
        alternatives: Type.Array(CitySchema, { description: 'Other cities of that name, most likely first (at most 10)' }),
        chosen_by: Type.Optional(
          Type.Union([Type.Literal('population'), Type.Literal('matches'), Type.Literal('address'), Type.Literal('query')], {
            description:
              'Why this city: `population`, the most populous of that name (within `country`); `matches`, that one had no match and this one, of the same name or where places with that address city are filed, has; `address`, GeoNames does not know the name and places with that address city (a village, a ward) are filed under this city; `query`, named in the free text (`pizza Porto`)',
          }),
        ),
      }),
      Type.Null(),
    ]),
    country: Type.Union([Type.Object({ input: Type.String(), code: Type.String(), name: Type.String() }), Type.Null()]),
    open: Type.Optional(
      Type.Object(
        {
          mode: Type.Union([Type.Literal('now'), Type.Literal('at')], { description: '`now`: `open_now`; `at`: `open_at`' }),
          at: Type.String({
            description: 'The moment: an instant in UTC to the minute (`2026-11-27T14:05Z`) for `now`, the local time asked for with `at`',
          }),
          unparsed: Type.Integer({
            description:
              'Places matching the rest of the search whose opening hours could not be parsed: neither open nor closed, so not in the results',
          }),
          computed_at: Type.Optional(
            Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
              description:
                'When the opening-hours pass this answer comes from ran. The pass runs in the background after the catalog changes (an import) and once a day; meanwhile the places changed since the previous pass are evaluated directly, so the answer is exact. When it cannot be (no pass yet, a moment the last pass does not reach, too many places changed), the search waits for the pass within its time budget or answers 503 not_ready with Retry-After. null only in searches saved before that rule (they may have counted nothing open). Absent from searches saved before it existed',
            }),
          ),
        },
        { description: 'Present with `open_now` or `open_at`' },
      ),
    ),
    query: Type.Optional(ResolvedContactSchema),
    typos: Type.Optional(
      Type.Object(
        {
          tolerated: Type.Boolean({
            description: 'true: the places found needed typos tolerated; false: typos were not tolerated, see `reason`',
          }),
          reason: Type.Optional(
            Type.Union([Type.Literal('not_narrowed'), Type.Literal('too_many_candidates')], {
              description:
                '`not_narrowed`: the words are too short for the text index (4–5 letters) and no city, country, type or area under 1 square degree narrows the places to check; `too_many_candidates`: more places than `candidate_limit` would have to be checked. Narrow the search to have typos tolerated',
            }),
          ),
          candidate_limit: Type.Integer({ description: 'The most places a typo-tolerant search checks' }),
        },
        { description: 'Present when nothing matched exactly and a word of `query` is long enough for typos (4 letters or more)' },
      ),
    ),
  },
  { description: 'How `type`, `city` and `country` were understood, and whether typos were tolerated' },
);

export const SearchPageSchema = Type.Object({
  search_id: Type.String({ description: 'The saved search (exports take it)', examples: ['srch_k3v9x2q7m4p8a6td'] }),
  total: Type.Integer({
    description: 'Exact number of matching places (without the suppressed ones, and with `only_new` without those exported before)',
  }),
  suppressed: Type.Integer({ description: "Exact number of matching places the account's suppression list leaves out" }),
  per_page: Type.Integer(),
  sort: Type.String(),
  resolved: ResolutionSchema,
  data: Type.Array(PlaceItemSchema),
  links: Type.Object({
    self: Type.String(),
    next: Type.Union([Type.String(), Type.Null()], { description: 'The next page, null on the last' }),
  }),
});

const v1Properties = {
  query: filterProperties.query,
  city: filterProperties.city,
  country: filterProperties.country,
  type: filterProperties.type,
  include_closed: filterProperties.include_closed,
  open_now: filterProperties.open_now,
  open_at: filterProperties.open_at,
  per_page: pagingProperties.per_page,
};

export const V1SearchBodySchema = Type.Object(optional(v1Properties), {
  additionalProperties: false,
  description: 'At least one of `query`, `city`, `type`',
  examples: [{ query: 'ratskeller', city: 'München' }],
});
export type V1SearchInput = Static<typeof V1SearchBodySchema>;

export const V1SearchResponseSchema = Type.Object({
  total: Type.Integer({ description: "Exact number of matching places (without the ones the account's suppression list leaves out)" }),
  suppressed: Type.Integer({ description: "Exact number of matching places the account's suppression list leaves out" }),
  data: Type.Array(PlaceItemSchema, { description: 'The first `per_page` places, best match first' }),
  resolved: ResolutionSchema,
});

/** `GET /api/v2/map/facets`: the search's filters (no paging, no order) and the dimension to count by. */
const { sort: _sort, ...facetFilterProperties } = filterProperties;
export const FacetsQuerySchema = Type.Object(
  {
    ...optional(facetFilterProperties),
    ...optional(accountFilterProperties),
    // An enum rather than a union of literals: one validation error naming the allowed values.
    by: Type.Unsafe<FacetDimension>({
      type: 'string',
      enum: [...facetDimensions],
      description:
        'What to count the matches by: `category` (primary category slug), `city` (GeoNames id), `country` (ISO code), or a contact filter (`true`/`false`)',
    }),
    lang: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$',
        description: 'Language of `type`; defaults to Accept-Language',
        examples: ['de'],
      }),
    ),
  },
  { additionalProperties: false },
);
export type FacetsQuery = Static<typeof FacetsQuerySchema>;

export const FacetsResponseSchema = Type.Object({
  by: Type.String({ description: 'The dimension counted by' }),
  total: Type.Integer({ description: 'Exact number of places the filters match' }),
  values: Type.Array(
    Type.Object({
      value: Type.Union([Type.String(), Type.Integer(), Type.Boolean()], {
        description: 'A category slug, a GeoNames city id, a country code, or true/false',
      }),
      count: Type.Integer({ description: 'Exact number of matches with this value' }),
      name: Type.Optional(Type.String({ description: "by=city: the city's name (GeoNames)" })),
      country: Type.Optional(Type.String({ description: "by=city: the city's country (ISO 3166-1 alpha-2)" })),
    }),
    { description: 'Every value with at least one match, most matches first' },
  ),
});
export type FacetsResponse = Static<typeof FacetsResponseSchema>;

/** `GET /api/v2/lookup`: exact lookups by what is known of a place. */
export const LookupQuerySchema = Type.Object(
  optional({
    phone: Type.String({
      minLength: 1,
      maxLength: 50,
      description: 'A phone number: international (`+49 89 24243702`, `0049…`), or national with `country` (`089 2424 3702`)',
      examples: ['+49 89 24243702'],
    }),
    domain: Type.String({
      minLength: 1,
      maxLength: 300,
      description: 'A web address or domain, compared by registrable domain (`https://www.example.de/shop` is `example.de`)',
      examples: ['www.example.de'],
    }),
    email: Type.String({ minLength: 1, maxLength: 300, description: 'An email address (case ignored)', examples: ['info@example.de'] }),
    address: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'A street address: street and house number, optionally postcode and city (`Promenadeplatz 12, 80333 München`)',
      examples: ['Promenadeplatz 12, München'],
    }),
    country: filterProperties.country,
    per_page: pagingProperties.per_page,
    fields: pagingProperties.fields,
  }),
  { additionalProperties: false, description: 'At least one of `phone`, `domain`, `email`, `address`' },
);
export type LookupQuery = Static<typeof LookupQuerySchema>;

export const LookupResponseSchema = Type.Object({
  total: Type.Integer({ description: 'Places carrying everything asked (without those the account suppresses)' }),
  data: Type.Array(PlaceItemSchema, { description: 'The first `per_page` of them' }),
  resolved: Type.Object(
    {
      phone: Type.Optional(ResolvedContactSchema),
      domain: Type.Optional(ResolvedContactSchema),
      email: Type.Optional(ResolvedContactSchema),
      address: Type.Optional(ResolvedContactSchema),
    },
    { description: 'How each parameter was read, and how many places carry it' },
  ),
});
