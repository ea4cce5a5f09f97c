import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { emailStatuses, phoneTypes, websiteStatuses } from '../../contacts/trust.types.ts';
import type { AccountExclusion } from '../../leads/exclusion.sql.ts';
import type { OpenAt } from '../../places/opening-hours.reads.ts';

/**
 * What a search resolved to (`PlaceCriteria`); stored with a saved search, so re-running it never re-resolves
 * names. The stored form is this schema's: checked when read back (`parseStoredCriteria`), so a row that is not
 * criteria fails there and not deep in a query. Fields added later are optional: rows saved before them stay valid.
 */

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const words = Type.Array(Type.String());

/**
 * `OpenAt` of places/opening-hours.reads.ts as it is stored (the search passes it to `openCondition`, which checks
 * the two agree); its `recent` is added as a read runs, never saved (`PlaceCriteria`).
 */
const OpenAtSchema = Type.Object({
  clock: Type.Union([Type.Literal('utc'), Type.Literal('local')]),
  at: Type.Number(),
  unparsed: Type.Optional(Type.Literal(true)),
});

/** The kinds of contact a confidence is kept for (`places.<kind>_confidence`). */
export const trustKinds = ['email', 'phone', 'website'] as const;
export type TrustKind = (typeof trustKinds)[number];
const trustKindSchema = Type.Union(trustKinds.map((k) => Type.Literal(k)));

export const StoredCriteriaSchema = Type.Object(
  {
    /** Primary-category slugs (the requested type and its descendants); null = any. */
    categories: nullable(words),
    cityId: nullable(Type.Integer()),
    countryCode: nullable(Type.String()),
    /**
     * Free text on names. `words` must each occur in one of the place's names; `mode: 'fuzzy'` widens the
     * SQL to candidates sharing an exact piece of each long word and leaves the edit-distance check to the caller.
     */
    text: nullable(Type.Object({ words, mode: Type.Union([Type.Literal('substring'), Type.Literal('fuzzy')]) })),
    /**
     * A kind of business the free text named (`dentist`, `pizza Porto`): the places of these categories match
     * the text too when their names contain the text's other `words`, in `cityId` when the text named a city.
     * Substring text only; absent from searches saved before it existed.
     */
    textKind: Type.Optional(nullable(Type.Object({ categories: words, words, cityId: nullable(Type.Integer()) }))),
    /**
     * The places carrying a phone, domain, email or address the text held (`contact-lookup.ts`), found when the
     * search was made: they match and come first (`ids`, then `related`, an email's domain), before the places
     * the rest of the text (`text`, if any) finds by name. Absent from searches saved before it existed.
     */
    contact: Type.Optional(nullable(Type.Object({ ids: Type.Array(Type.Integer()), related: Type.Array(Type.Integer()) }))),
    minRating: nullable(Type.Number()),
    hasPhone: nullable(Type.Boolean()),
    hasWebsite: nullable(Type.Boolean()),
    hasEmail: nullable(Type.Boolean()),
    /** A social profile, the source's or one its website gave (absent from searches saved before it existed). */
    hasSocial: Type.Optional(nullable(Type.Boolean())),
    near: nullable(Type.Object({ lat: Type.Number(), lon: Type.Number(), radiusM: Type.Number() })),
    /** [minLon, minLat, maxLon, maxLat]. */
    bbox: nullable(Type.Tuple([Type.Number(), Type.Number(), Type.Number(), Type.Number()])),
    /**
     * A drawn area (`POST /api/v2/map/search`): GeoJSON MultiPolygon coordinates, with `bbox` its bounding
     * box. The SQL narrows to the box; the caller decides each place with the exact point-in-polygon test.
     * Absent from searches saved before it existed.
     */
    polygon: Type.Optional(nullable(Type.Array(Type.Array(Type.Array(Type.Array(Type.Number())))))),
    /**
     * Open at a moment (`open_now`, `open_at`, see `OpenAt`); `unparsed`: the places whose hours could not be
     * parsed instead (counted for `resolved.open`). Absent from searches saved before it existed.
     */
    open: Type.Optional(nullable(OpenAtSchema)),
    /** true: closed and retired places match too; absent: open places only (`closed_at IS NULL`). */
    includeClosed: Type.Optional(Type.Boolean()),
    /**
     * Trust in the place's contacts (issue 33, docs/trust.md), on the summary the trust pass keeps on the place:
     * the status of its best email, the type of its best phone, the status of its website. Absent from searches
     * saved before they existed.
     */
    emailStatus: Type.Optional(nullable(Type.Union(emailStatuses.map((s) => Type.Literal(s))))),
    phoneType: Type.Optional(nullable(Type.Union(phoneTypes.map((s) => Type.Literal(s))))),
    websiteStatus: Type.Optional(nullable(Type.Union(websiteStatuses.map((s) => Type.Literal(s))))),
    /**
     * The least confidence (0–1) of the best value of each kind a contact filter asks for (`hasEmail: true` or
     * `emailStatus` → the best email's, and so for phones and websites): `contactConfidence` lists the kinds.
     */
    minConfidence: Type.Optional(nullable(Type.Object({ value: Type.Number(), kinds: Type.Array(trustKindSchema) }))),
    minLeadScore: Type.Optional(nullable(Type.Number())),
    /** ISO-8601 instants (`toISOString` form, as the columns hold them): the place's content changed, a value was checked, at or after. */
    updatedSince: Type.Optional(nullable(Type.String())),
    verifiedSince: Type.Optional(nullable(Type.String())),
  },
  { additionalProperties: false },
);

/** What a search resolved to, as it runs. */
export type PlaceCriteria = Static<typeof StoredCriteriaSchema> & {
  /**
   * The open filter as a read gives it to the SQL: with the places changed since the opening-hours pass decided
   * directly (`OpenAt.recent`, added by the engine or `trueOpenCriteria` as the read runs), never saved with a
   * search: stored criteria hold the moment alone.
   */
  open?: OpenAt | null;
  /**
   * What the account running the search leaves out (`only_new`, its suppression list). Added each time a
   * search runs, never saved with it: a saved search always sees the account's list as it is now.
   */
  exclude?: AccountExclusion | null;
};

/** Criteria that read what the trust pass keeps on places: answered only once the pass has caught up with the catalog. */
export function usesTrust(criteria: PlaceCriteria, sort?: PlaceSort): boolean {
  return (
    sort === 'lead_score' ||
    criteria.emailStatus != null ||
    criteria.phoneType != null ||
    criteria.websiteStatus != null ||
    criteria.minConfidence != null ||
    criteria.minLeadScore != null ||
    criteria.verifiedSince != null
  );
}

/** Stored criteria read back from their JSON text: checked against the schema (a row that is not criteria throws). */
export function parseStoredCriteria(json: string): PlaceCriteria {
  const value: unknown = JSON.parse(json);
  if (!Value.Check(StoredCriteriaSchema, value)) {
    const first = Value.Errors(StoredCriteriaSchema, value).First();
    throw new Error(`stored search criteria do not match their schema: ${first?.path ?? ''} ${first?.message ?? ''}`.trim());
  }
  return value;
}

/** Criteria with nothing set: a search spreads it and sets what it narrows by. */
export const noCriteria: Readonly<PlaceCriteria> = Object.freeze({
  categories: null,
  cityId: null,
  countryCode: null,
  text: null,
  minRating: null,
  hasPhone: null,
  hasWebsite: null,
  hasEmail: null,
  near: null,
  bbox: null,
});

export const placeSorts = ['relevance', 'rating', 'review_count', 'distance', 'name', 'lead_score'] as const;
export type PlaceSort = (typeof placeSorts)[number];

/** Position in a sorted result: the sort key and the row id (the tie-breaker, in the key's direction, that makes the order unique). */
export interface PlaceKey {
  key: number | string;
  id: number;
}
