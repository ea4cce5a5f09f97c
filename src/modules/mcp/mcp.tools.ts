import type { TObject } from '@sinclair/typebox';
import { CreateJobSchema, JobIdParamsSchema } from '../exports/export-jobs.schema.ts';
import { MatchRequestSchema } from '../match/match.schema.ts';
import { PlaceParamsSchema } from '../places/places.routes.ts';
import { CategoriesQuerySchema, CountriesQuerySchema } from '../reference/reference.schema.ts';
import { AutocompleteQuerySchema } from '../search/autocomplete.schema.ts';
import { FacetsQuerySchema, LookupQuerySchema, MapSearchQuerySchema } from '../search/search.schema.ts';
import { SuppressionsBodySchema, SuppressionsUploadQuerySchema } from '../suppressions/suppressions.schema.ts';

/** Where a tool's argument travels in the REST request the tool makes. */
type Location = 'params' | 'body' | 'querystring';

/**
 * One MCP tool: a REST route of the API, called with the caller's token. The input schema is made of the
 * route's own TypeBox schemas (its path parameters, body and query string), so a tool takes what the route
 * takes, validated by the route, and answers what it answers.
 */
export interface ToolRoute {
  name: string;
  title: string;
  description: string;
  method: 'GET' | 'POST';
  /** The route's pattern, `:name` for a path parameter. */
  url: string;
  schemas: Partial<Record<Location, TObject>>;
}

export const toolRoutes: readonly ToolRoute[] = [
  {
    name: 'search_places',
    title: 'Search places',
    description:
      'Search the LeadAtlas catalog of businesses by kind of business (`type`, any language or synonym: "vet", "Tierarzt"), `city`, ' +
      '`country`, name text (`query`), rating, contact details (`has_phone`, `has_website`, `has_email`) and area (`near`+`radius`, `bbox`). ' +
      'Trust in the contacts: `email_status` (valid_domain, no_mx, invalid, unknown), `phone_type` (mobile, fixed_line…), `website_status` ' +
      '(live, redirected, parked, dead, unknown), `min_confidence` (0–1, with a contact filter: "a valid email domain and a mobile, confidence ≥ 0.8" is ' +
      '`email_status=valid_domain&phone_type=mobile&min_confidence=0.8`), `min_lead_score`, `updated_since`, `verified_since`, `sort: lead_score`. ' +
      "`only_new: true` leaves out places the user's account has already exported. Answers the exact `total`, one page of places, " +
      '`search_id` (what `start_export` takes) and `links.next`: pass its `cursor` argument (with `per_page` and `fields` only) for the next page. ' +
      'Mirrors GET /api/v2/map/search (scope `search`).',
    method: 'GET',
    url: '/api/v2/map/search',
    schemas: { querystring: MapSearchQuerySchema },
  },
  {
    name: 'count_places',
    title: 'Count places by value',
    description:
      'Exact counts of the places a search matches (same filters as `search_places`), split by one dimension: `by` is ' +
      '`category`, `city`, `country`, `has_phone`, `has_website`, `has_email` or `has_social`; for the size of a market, e.g. ' +
      'how many dentists with a phone in each city of a country. Answers `{by, total, values: [{value, count}]}`, most first. ' +
      'Mirrors GET /api/v2/map/facets (scope `search`).',
    method: 'GET',
    url: '/api/v2/map/facets',
    schemas: { querystring: FacetsQuerySchema },
  },
  {
    name: 'lookup_place',
    title: 'Find a place by phone, domain, email or address',
    description:
      'The businesses carrying what you already know of one: `phone` (international like "+49 89 24243702", or national with `country`), ' +
      '`domain` (any URL or host name, compared by registrable domain), `email` (then the places of its domain), `address` ("Promenadeplatz 12, ' +
      'München": street and number, abbreviations understood). Several given: places carrying all. Answers `{total, data, resolved}`; the ' +
      "user's suppression list applies. Mirrors GET /api/v2/lookup (scope `search`).",
    method: 'GET',
    url: '/api/v2/lookup',
    schemas: { querystring: LookupQuerySchema },
  },
  {
    name: 'autocomplete',
    title: 'Suggest names, categories or cities',
    description:
      'What the catalog holds that starts like a word the user typed, most places first: `kind` `name` (default: names of businesses, ' +
      'any word or several in order, any script), `category` (kinds of business by their names in every language; `slug` is what ' +
      '`search_places` takes as `type`) or `city` (cities with places, by any of their names: "Cologne" finds Köln). `count` is the ' +
      'number of open places each finds, in `country` when given. Use it to turn a vague or misspelt start into the exact `type`, `city` ' +
      'or `query` of a search. Answers `{kind, country, data: [{value, count, …}]}`. Mirrors GET /api/v2/autocomplete (scope `search`).',
    method: 'GET',
    url: '/api/v2/autocomplete',
    schemas: { querystring: AutocompleteQuerySchema },
  },
  {
    name: 'get_place',
    title: 'Place details',
    description:
      'One place by its public id (`id` of a search result): every public field, its contacts and where it comes from. ' +
      'Mirrors GET /api/v1/places/{id} (scope `places:read`).',
    method: 'GET',
    url: '/api/v1/places/:id',
    schemas: { params: PlaceParamsSchema },
  },
  {
    name: 'start_export',
    title: 'Start an export',
    description:
      'Start a background export of every place of a saved search (`search_id` from `search_places`) as a file: csv (default), xlsx, json, ' +
      'ndjson or geojson. Answers the job (`id`, `status`); read it with `get_export` until `status` is `succeeded`, then hand the user ' +
      '`download.url`. Counts against the export quotas. Mirrors POST /api/v2/exports (scope `export`).',
    method: 'POST',
    url: '/api/v2/exports',
    schemas: { body: CreateJobSchema },
  },
  {
    name: 'get_export',
    title: 'Export status',
    description:
      'An export job: `status` (queued, running with `rows`, succeeded, failed with `failure`) and, once succeeded, a signed `download.url` ' +
      'that works without a token until it expires. Mirrors GET /api/v2/exports/{id} (scope `export`).',
    method: 'GET',
    url: '/api/v2/exports/:id',
    schemas: { params: JobIdParamsSchema },
  },
  {
    name: 'add_suppressions',
    title: 'Add to the suppression list',
    description:
      "Add phone numbers, web domains, email addresses or place ids to the account's suppression list: matching places never show again " +
      'in its searches, exports or leads. Each entry is a value (its type detected) or `{type, value, country}`; a national phone number ' +
      'needs its `country`. Added whole or not at all. Mirrors POST /api/v1/user-api/suppressions with a JSON body (scope `suppressions:write`).',
    method: 'POST',
    url: '/api/v1/user-api/suppressions',
    schemas: { body: SuppressionsBodySchema, querystring: SuppressionsUploadQuerySchema },
  },
  {
    name: 'match_places',
    title: 'Match a list of businesses',
    description:
      "Find the user's own records (a CRM's accounts: name, and any of address, street, housenumber, postcode, city, country, phone, " +
      'website, email, lat/lon) in the catalog, up to 100 a call. Each result, in order, has the matched place (as `search_places` shows ' +
      'it; `status` says when it is closed or retired) with its `score` (0–1) and `evidence`, or `match: null` with the `candidates` when ' +
      'no place is clearly the one; a bad record gets an `error` of its own. Mirrors POST /api/v2/match (scope `match`).',
    method: 'POST',
    url: '/api/v2/match',
    schemas: { body: MatchRequestSchema },
  },
  {
    name: 'list_categories',
    title: 'List categories',
    description:
      'The categories of businesses (`slug`, localised `name`, `parent`) with place counts; `parent` lists the direct children of a slug. ' +
      'Any slug or name is a valid `type` of `search_places`. Mirrors GET /api/v2/categories (scope `places:read`).',
    method: 'GET',
    url: '/api/v2/categories',
    schemas: { querystring: CategoriesQuerySchema },
  },
  {
    name: 'list_countries',
    title: 'List countries',
    description: 'The countries (ISO code, localised name) with place counts. Mirrors GET /api/v2/countries (scope `places:read`).',
    method: 'GET',
    url: '/api/v2/countries',
    schemas: { querystring: CountriesQuerySchema },
  },
];

/** A JSON Schema as MCP's `inputSchema` carries it. */
export interface InputSchema {
  type: 'object';
  properties: Record<string, object>;
  required?: string[];
  additionalProperties: false;
  [key: string]: unknown;
}

/** The order in which a name declared in two places is given to one: a path parameter, then the body, then the query. */
const locations: readonly Location[] = ['params', 'body', 'querystring'];

/** For each argument name, where it travels. */
function argumentLocations(tool: ToolRoute): Map<string, Location> {
  const where = new Map<string, Location>();
  for (const location of locations)
    for (const name of Object.keys(tool.schemas[location]?.properties ?? {})) if (!where.has(name)) where.set(name, location);
  return where;
}

/**
 * The tool's input schema: the properties of the route's schemas in one object, each required where its route
 * requires it. Serialised through JSON, which drops TypeBox's symbol keys and leaves plain JSON Schema.
 */
export function inputSchemaOf(tool: ToolRoute): InputSchema {
  const properties: Record<string, object> = {};
  const required: string[] = [];
  for (const [name, location] of argumentLocations(tool)) {
    const schema = tool.schemas[location]!;
    properties[name] = JSON.parse(JSON.stringify(schema.properties[name]));
    if (schema.required?.includes(name)) required.push(name);
  }
  return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false };
}

/** The REST request a tool call makes. */
export interface ToolRequest {
  method: 'GET' | 'POST';
  url: string;
  body?: Record<string, unknown>;
}

/**
 * The request of a call: path parameters in the URL (encoded), query parameters as the query string, the rest
 * as the JSON body. An argument the tool does not declare goes to the query string, where the route names it
 * in its 400 like any unknown parameter.
 */
export function toolRequest(tool: ToolRoute, args: Record<string, unknown>): ToolRequest {
  const where = argumentLocations(tool);
  const query = new URLSearchParams();
  const body: Record<string, unknown> = {};
  let url = tool.url;
  for (const [name, value] of Object.entries(args)) {
    if (value === undefined || value === null) continue;
    const location = where.get(name) ?? 'querystring';
    if (location === 'body') body[name] = value;
    else if (location === 'params') url = url.replace(`:${name}`, encodeURIComponent(String(value)));
    else query.append(name, typeof value === 'object' ? JSON.stringify(value) : String(value));
  }
  // A path parameter the call left out: the segment stays empty and the route answers 404/400 for it.
  url = url.replace(/:[a-z_]+/g, '');
  const search = query.toString();
  return { method: tool.method, url: search ? `${url}?${search}` : url, ...(tool.method === 'POST' ? { body } : {}) };
}
