import { sql, type RawBuilder, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type { Database } from '../../infra/db/schema.ts';
import type { Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';
import { publicPlaceColumns, type PublicPlaceRow } from './places.schema.ts';

/**
 * Place queries for search and export: one set of filters, keyset paging on a unique order, exact counts.
 * What differs per dialect (full text, geography) sits in `PlaceTextGeo` below, one implementation each.
 */

/** What a search resolved to; stored with a saved search, so re-running it never re-resolves names. */
export interface PlaceCriteria {
  /** Primary-category slugs (the requested type and its descendants); null = any. */
  categories: string[] | null;
  cityId: number | null;
  countryCode: string | null;
  /**
   * Free text on names. `words` must each occur in one of the place's names; `mode: 'fuzzy'` widens the
   * SQL to candidates sharing an exact piece of each long word and leaves the edit-distance check to the caller.
   */
  text: { words: string[]; mode: 'substring' | 'fuzzy' } | null;
  minRating: number | null;
  hasPhone: boolean | null;
  hasWebsite: boolean | null;
  hasEmail: boolean | null;
  near: { lat: number; lon: number; radiusM: number } | null;
  /** [minLon, minLat, maxLon, maxLat]. */
  bbox: [number, number, number, number] | null;
}

export const placeSorts = ['relevance', 'rating', 'review_count', 'distance', 'name'] as const;
export type PlaceSort = (typeof placeSorts)[number];

/** Position in a sorted result: the sort key and the row id (the tie-breaker, in the key's direction, that makes the order unique). */
export interface PlaceKey {
  key: number | string;
  id: number;
}

export type PlaceRowWithKey = PublicPlaceRow & { sort_key: number | string; distance_m: number | null };

/**
 * What a page reads of each place: the public columns only. Pages travel from a read thread to the
 * event loop by structured clone; the JSON columns nobody shows (attributes, source categories, names)
 * would be most of the bytes.
 */
const pageColumns = publicPlaceColumns.map((c) => `places.${c}` as const);

type Eb = ExpressionBuilder<Database, 'places'>;

/** Full-text and geography, per dialect. */
interface PlaceTextGeo {
  /** Places whose names contain every word (case and diacritics folded where the dialect can). */
  containsWords(eb: Eb, words: string[]): Expression<SqlBool>;
  /** Candidates for a fuzzy match: for each word, one of its pieces occurs exactly. */
  containsAnyPiece(eb: Eb, piecesPerWord: string[][]): Expression<SqlBool>;
  /** Places whose coordinates fall in the box (inclusive). */
  inBox(eb: Eb, minLon: number, minLat: number, maxLon: number, maxLat: number): Expression<SqlBool>;
  /** Text relevance: 0 when the display name starts with `word`, else 1. */
  startsWith(word: string): RawBuilder<number>;
  /**
   * A search on text alone, answered from the text index without reading `places`: the matching ids in
   * relevance order and their count. Null where the dialect has no such index.
   */
  textOnly: {
    count(words: string[]): RawBuilder<{ n: number }>;
    page(words: string[], after: PlaceKey | null, limit: number): RawBuilder<{ id: number; k: number }>;
    /**
     * Every match of one word with its relevance key (0: the display name starts with it), at most
     * `cap + 1` rows, from a single pass over the index: a rare word's total and first page at once.
     */
    allOfOneWord(word: string, cap: number): RawBuilder<{ id: number; k: number }>;
  } | null;
}

/** A phrase for FTS5: the text in double quotes, inner quotes doubled. */
function ftsPhrase(text: string): string {
  return `"${text.replaceAll('"', '""')}"`;
}

function likePattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function exactBox(eb: Eb, minLon: number, minLat: number, maxLon: number, maxLat: number): Expression<SqlBool>[] {
  return [eb('places.lat', '>=', minLat), eb('places.lat', '<=', maxLat), eb('places.lon', '>=', minLon), eb('places.lon', '<=', maxLon)];
}

/** The FTS5 condition on `places_fts` for names containing every word. */
function ftsWords(words: string[]): RawBuilder<SqlBool> {
  // The trigram tokenizer indexes pieces of three characters: shorter words (CJK pairs, "Bo") go through LIKE.
  const long = words.filter((w) => [...w].length >= 3);
  const short = words.filter((w) => [...w].length < 3);
  const parts = [
    ...(long.length > 0 ? [sql`places_fts MATCH ${long.map(ftsPhrase).join(' ')}`] : []),
    ...short.map((w) => sql`names LIKE ${likePattern(w)} ESCAPE '\\'`),
  ];
  return sql<SqlBool>`(${sql.join(parts, sql` AND `)})`;
}

/** Relevance from the text index alone: 0 when the id's display name starts with `word` (`^"word"`: the first characters of the names column), else 1. */
function ftsStartsWith(id: RawBuilder<number>, word: string): RawBuilder<number> {
  const prefix = [...word].length >= 3 ? sql`places_fts MATCH ${`^${ftsPhrase(word)}`}` : sql`names LIKE ${likePattern(word).slice(1)} ESCAPE '\\'`;
  return sql<number>`(CASE WHEN ${id} IN (SELECT rowid FROM places_fts WHERE ${prefix}) THEN 0 ELSE 1 END)`;
}

/** Latitude bands a box may span before its condition is one range of bands instead of a list. */
const MAX_LISTED_BANDS = 64;

/**
 * The bands of `places_geo_band_idx` (migration 0013; the same expression, or SQLite does not use the
 * index) that a latitude range touches. Listed, SQLite reads each band's longitude range and nothing
 * else; a tall box is one range of bands whose entries are each checked for longitude within the index.
 */
function bandsOf(minLat: number, maxLat: number): RawBuilder<SqlBool> {
  const band = (lat: number) => Math.trunc((Math.min(90, Math.max(-90, lat)) + 90) * 10);
  const first = band(minLat);
  const last = band(maxLat);
  const expr = sql`cast((lat + 90) * 10 as integer)`;
  if (last - first >= MAX_LISTED_BANDS) return sql<SqlBool>`${expr} BETWEEN ${first} AND ${last}`;
  const bands = Array.from({ length: last - first + 1 }, (_, i) => first + i);
  return sql<SqlBool>`${expr} IN (${sql.join(bands)})`;
}

/** Marks the start of a match in `highlight()` output: a control character no name contains. */
const matchMark = '\u0001';

const sqliteTextGeo: PlaceTextGeo = {
  containsWords(eb, words) {
    return eb('places.id', 'in', sql<number>`(SELECT rowid FROM places_fts WHERE ${ftsWords(words)})`);
  },
  containsAnyPiece(eb, piecesPerWord) {
    // Words under 3 characters cannot use the trigram index; the caller's check still requires them.
    const indexable = piecesPerWord.filter((pieces) => pieces.every((p) => [...p].length >= 3));
    if (indexable.length === 0) return eb.and([]);
    const query = indexable.map((pieces) => `(${pieces.map(ftsPhrase).join(' OR ')})`).join(' AND ');
    return eb('places.id', 'in', sql<number>`(SELECT rowid FROM places_fts WHERE places_fts MATCH ${query})`);
  },
  inBox(eb, minLon, minLat, maxLon, maxLat) {
    // The latitude-band index of migration 0013 narrows, the columns decide exactly.
    const near = sql<number>`(SELECT id FROM places WHERE ${bandsOf(minLat, maxLat)} AND lon BETWEEN ${minLon} AND ${maxLon})`;
    return eb.and([eb('places.id', 'in', near), ...exactBox(eb, minLon, minLat, maxLon, maxLat)]);
  },
  startsWith: (word) => ftsStartsWith(sql<number>`places.id`, word),
  textOnly: {
    count: (words) => sql<{ n: number }>`SELECT count(*) AS n FROM places_fts WHERE ${ftsWords(words)}`,
    page(words, after, limit) {
      // Two streams in id order, each stopping after `limit` rows (FTS5 reads doclists lazily): names that
      // start with the first word (key 0), then the other matches (key 1). No sort over every match.
      const [first = '', ...rest] = words.map(ftsPhrase);
      const others = rest.map((w) => ` AND ${w}`).join('');
      const starting = `^${first}${others}`;
      const remaining = `(${[first, ...rest].join(' AND ')}) NOT ^${first}`;
      const fromStarting = after === null || after.key === 0 ? (after?.id ?? 0) : Number.MAX_SAFE_INTEGER;
      const fromRemaining = after?.key === 1 ? after.id : 0;
      return sql<{ id: number; k: number }>`SELECT id, k FROM (
          SELECT * FROM (SELECT rowid AS id, 0 AS k FROM places_fts WHERE places_fts MATCH ${starting} AND rowid > ${fromStarting} ORDER BY rowid LIMIT ${limit})
          UNION ALL
          SELECT * FROM (SELECT rowid AS id, 1 AS k FROM places_fts WHERE places_fts MATCH ${remaining} AND rowid > ${fromRemaining} ORDER BY rowid LIMIT ${limit})
        ) ORDER BY k, id LIMIT ${limit}`;
    },
    allOfOneWord(word, cap) {
      // highlight() marks every match of the phrase; one at offset 0 is exactly what `^"word"` matches.
      return sql<{ id: number; k: number }>`SELECT rowid AS id, CASE WHEN substr(highlight(places_fts, 0, ${matchMark}, ''), 1, 1) = ${matchMark} THEN 0 ELSE 1 END AS k
        FROM places_fts WHERE places_fts MATCH ${ftsPhrase(word)} LIMIT ${cap + 1}`;
    },
  },
};

/**
 * PostgreSQL: substring on the name and the JSON of other names, case and accents folded by `la_fold`
 * (migration 0011; the trigram index is on la_fold(name)).
 */
const postgresTextGeo: PlaceTextGeo = {
  containsWords(eb, words) {
    return eb.and(
      words.map((w) => {
        const pattern = sql`la_fold(${likePattern(w)})`;
        return eb.or([sql<SqlBool>`la_fold(places.name) LIKE ${pattern}`, sql<SqlBool>`la_fold(places.names) LIKE ${pattern}`]);
      }),
    );
  },
  containsAnyPiece(eb, piecesPerWord) {
    return eb.and(piecesPerWord.map((pieces) => eb.or(pieces.map((p) => postgresTextGeo.containsWords(eb, [p])))));
  },
  inBox(eb, minLon, minLat, maxLon, maxLat) {
    return eb.and(exactBox(eb, minLon, minLat, maxLon, maxLat));
  },
  startsWith(word) {
    return sql<number>`(CASE WHEN la_fold(places.name) LIKE la_fold(${likePattern(word).slice(1)}) ESCAPE '\\' THEN 0 ELSE 1 END)`;
  },
  textOnly: null,
};

const textGeo = byDialect<PlaceTextGeo>({ sqlite: () => sqliteTextGeo, postgres: () => postgresTextGeo });

const earthRadiusM = 6_371_008.8;

/** Great-circle distance in metres from (lat, lon) to the place (haversine; both dialects have the math functions). */
export function distanceExpr(lat: number, lon: number) {
  return sql<number>`(${2 * earthRadiusM} * asin(sqrt(power(sin(radians(places.lat - ${lat}) / 2), 2) + cos(radians(${lat})) * cos(radians(places.lat)) * power(sin(radians(places.lon - ${lon}) / 2), 2))))`;
}

/** Degrees of latitude/longitude that cover `radiusM` around a point: the index pre-filter of `near`. */
function boxAround(lat: number, lon: number, radiusM: number): [number, number, number, number] {
  const dLat = (radiusM / earthRadiusM) * (180 / Math.PI);
  const cosLat = Math.cos((lat * Math.PI) / 180);
  const dLon = cosLat < 1e-6 ? 180 : Math.min(180, dLat / cosLat);
  return [lon - dLon, Math.max(-90, lat - dLat), lon + dLon, Math.min(90, lat + dLat)];
}

function whereCriteria(db: Db, criteria: PlaceCriteria, eb: Eb): Expression<SqlBool> {
  const tg = textGeo(db);
  const c: Expression<SqlBool>[] = [];
  if (criteria.categories) c.push(eb('places.category', 'in', criteria.categories.length > 0 ? criteria.categories : ['']));
  if (criteria.cityId !== null) c.push(eb('places.city_id', '=', criteria.cityId));
  if (criteria.countryCode !== null) c.push(eb('places.country_code', '=', criteria.countryCode));
  if (criteria.minRating !== null) c.push(eb('places.rating', '>=', criteria.minRating));
  const presence = (column: 'places.phone' | 'places.website' | 'places.email', wanted: boolean | null) => {
    if (wanted === true) c.push(eb.and([eb(column, 'is not', null), eb(column, '!=', '')]));
    if (wanted === false) c.push(eb.or([eb(column, 'is', null), eb(column, '=', '')]));
  };
  presence('places.phone', criteria.hasPhone);
  presence('places.website', criteria.hasWebsite);
  presence('places.email', criteria.hasEmail);
  if (criteria.bbox) c.push(tg.inBox(eb, ...criteria.bbox));
  if (criteria.near) {
    const { lat, lon, radiusM } = criteria.near;
    c.push(tg.inBox(eb, ...boxAround(lat, lon, radiusM)));
    c.push(eb(distanceExpr(lat, lon), '<=', radiusM));
  }
  if (criteria.text) {
    if (criteria.text.mode === 'substring') c.push(tg.containsWords(eb, criteria.text.words));
    else c.push(tg.containsAnyPiece(eb, criteria.text.words.map(fuzzyPieces)));
  }
  return eb.and(c);
}

/**
 * Exact pieces of a word that a spelling with few edits must still contain (pigeonhole): with k edits
 * allowed, split into k+1 parts and one survives intact. Words too short for 3-character pieces are kept whole.
 */
export function fuzzyPieces(word: string): string[] {
  const chars = [...word];
  const edits = allowedEdits(word);
  if (edits === 0) return [word];
  const parts = edits + 1;
  const out: string[] = [];
  for (let i = 0; i < parts; i++) {
    out.push(chars.slice(Math.floor((i * chars.length) / parts), Math.floor(((i + 1) * chars.length) / parts)).join(''));
  }
  return out;
}

/**
 * Typos tolerated in a word: none under 4 characters, 1 up to 8, 2 from 9. From 6 characters every piece
 * keeps 3 characters and the text index finds the candidates; a 4–5 character word's pieces are too short
 * for it, so its candidates must come from the other criteria (see `fuzzyNarrowed`).
 */
export function allowedEdits(word: string): number {
  const n = [...word].length;
  return n >= 9 ? 2 : n >= 4 ? 1 : 0;
}

/** Whether a typo-tolerant search would be narrowed by an index (a long word's pieces, or a city, area…), not a scan of every place. */
export function fuzzyNarrowed(criteria: PlaceCriteria): boolean {
  const { text, minRating: _rating, hasPhone: _phone, hasWebsite: _website, hasEmail: _email, ...narrowing } = criteria;
  const indexedWord = (text?.words ?? []).some((w) => fuzzyPieces(w).every((p) => [...p].length >= 3));
  return indexedWord || Object.values(narrowing).some((v) => v !== null);
}

/** The sort key of a row, as SQL: a number or a text, never null, so keyset comparisons stay simple. */
export function sortKeyExpr(db: Db, criteria: PlaceCriteria, sort: PlaceSort): { expr: RawBuilder<number | string>; descending: boolean } {
  switch (sort) {
    case 'rating':
      return { expr: sql<number>`coalesce(places.rating, -1)`, descending: true };
    case 'review_count':
      return { expr: sql<number>`coalesce(places.review_count, -1)`, descending: true };
    case 'name':
      return { expr: sql<string>`places.name`, descending: false };
    case 'distance': {
      if (!criteria.near) throw new Error('sort=distance needs near');
      return { expr: distanceExpr(criteria.near.lat, criteria.near.lon), descending: false };
    }
    case 'relevance': {
      // Names that start with the first word come first; without text, the nearest; else the most reviewed.
      if (criteria.text && criteria.text.mode === 'substring') return { expr: textGeo(db).startsWith(criteria.text.words[0] ?? ''), descending: false };
      if (criteria.near) return { expr: distanceExpr(criteria.near.lat, criteria.near.lon), descending: false };
      return { expr: sql<number>`coalesce(places.review_count, -1)`, descending: true };
    }
  }
}

/** `places` narrowed by the criteria: the base of every search, count and export query. */
export function filtered(db: Db, criteria: PlaceCriteria) {
  return db.kysely.selectFrom('places').where((eb) => whereCriteria(db, criteria, eb));
}

const versionStatements = new WeakMap<object, { get(): unknown }>();

/**
 * Reads the places version. Asked on every search, so SQLite reads it through one prepared statement per
 * connection rather than building the query each time.
 */
const readPlacesVersion = byDialect<() => Promise<number>>({
  sqlite: (db) => {
    let statement = versionStatements.get(db.sqlite);
    if (!statement) {
      statement = db.sqlite.prepare('SELECT version FROM places_version WHERE id = 1').pluck();
      versionStatements.set(db.sqlite, statement);
    }
    const prepared = statement;
    return async () => Number(prepared.get());
  },
  postgres: (db) => async () => {
    const row = await db.kysely
      .withTables<{ places_version: { id: number; version: number } }>()
      .selectFrom('places_version')
      .select('version')
      .where('id', '=', 1)
      .executeTakeFirstOrThrow();
    return Number(row.version);
  },
});

/** Moves whenever `places` changes (migration 0007): what cached counts and pages are checked against. */
export function placesVersion(db: Db): Promise<number> {
  return readPlacesVersion(db)();
}

/** The text index alone answers a substring search with no other criterion (no `places` row is read). */
function textOnlySearch(db: Db, criteria: PlaceCriteria) {
  const { text, ...rest } = criteria;
  if (!text || text.mode !== 'substring' || Object.values(rest).some((v) => v !== null)) return null;
  // Words under 3 characters are matched by LIKE, outside the index.
  if (text.words.some((w) => [...w].length < 3)) return null;
  return textGeo(db).textOnly;
}

/**
 * A search on one word alone, answered in one pass over the text index: every match with its relevance
 * key (0 when the display name starts with the word), unsorted; null when the dialect cannot, or when
 * there are more than `cap` matches (then counting and the two lazy streams of `findPlacesPage` cost less
 * than reading them all).
 */
export async function findOneWordMatches(db: Db, criteria: PlaceCriteria, cap: number): Promise<Array<{ id: number; k: number }> | null> {
  const textOnly = textOnlySearch(db, criteria);
  if (!textOnly || criteria.text!.words.length !== 1) return null;
  const { rows } = await textOnly.allOfOneWord(criteria.text!.words[0]!, cap).execute(db.kysely);
  return rows.length > cap ? null : rows;
}

/** Exact number of places matching (the fuzzy mode counts candidates: the caller verifies them). */
export async function countPlaces(db: Db, criteria: PlaceCriteria): Promise<number> {
  const textOnly = textOnlySearch(db, criteria);
  if (textOnly) return Number((await textOnly.count(criteria.text!.words).execute(db.kysely)).rows[0]?.n ?? 0);
  const row = await filtered(db, criteria).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * One page in the requested order, strictly after `after`. Sorting happens on ids and sort keys only
 * (a covering index serves city/category searches by review count or rating), then the page's rows are read:
 * thousands of matches cost an index scan, not thousands of row reads.
 */
export async function findPlacesPage(db: Db, criteria: PlaceCriteria, sort: PlaceSort, after: PlaceKey | null, limit: number): Promise<PlaceRowWithKey[]> {
  const { expr, descending } = sortKeyExpr(db, criteria, sort);
  // Ties break on the id in the same direction as the key, so an index on the key gives the whole order.
  const direction = descending ? 'desc' : 'asc';
  const past = descending ? '<' : '>';
  const textOnly = sort === 'relevance' ? textOnlySearch(db, criteria) : null;
  if (textOnly) {
    const page = sql<{ id: number; k: number }>`(${textOnly.page(criteria.text!.words, after, limit)})`;
    return (await db.kysely
      .selectFrom(page.as('page'))
      .innerJoin('places', 'places.id', 'page.id')
      .select(pageColumns)
      .select(['page.k as sort_key', sql<null>`NULL`.as('distance_m')])
      .orderBy('page.k')
      .orderBy('page.id')
      .execute()) as PlaceRowWithKey[];
  }
  let ids = filtered(db, criteria).select('places.id');
  if (after) ids = ids.where((eb) => eb.or([eb(expr, past, after.key), eb.and([eb(expr, '=', after.key), eb('places.id', past, after.id)])]));
  const rows = await db.kysely
    .selectFrom('places')
    .select(pageColumns)
    .select(expr.as('sort_key'))
    .select(criteria.near ? distanceExpr(criteria.near.lat, criteria.near.lon).as('distance_m') : sql<null>`NULL`.as('distance_m'))
    .where('places.id', 'in', ids.orderBy(expr, direction).orderBy('places.id', direction).limit(limit))
    .orderBy(expr, direction)
    .orderBy('places.id', direction)
    .execute();
  return rows as PlaceRowWithKey[];
}

/** Fuzzy candidates with what the caller needs to verify and order them: the names and the sort key. */
export async function findFuzzyCandidates(
  db: Db,
  criteria: PlaceCriteria,
  sort: PlaceSort,
): Promise<Array<{ id: number; name: string; names: string | null; sort_key: number | string }>> {
  const { expr } = sortKeyExpr(db, criteria, sort === 'relevance' ? 'name' : sort);
  return filtered(db, criteria).select(['places.id', 'places.name', 'places.names']).select(expr.as('sort_key')).execute();
}

export async function findPlacesByIds(db: Db, ids: number[], near: PlaceCriteria['near']): Promise<Array<PublicPlaceRow & { distance_m: number | null }>> {
  if (ids.length === 0) return [];
  const rows = await db.kysely
    .selectFrom('places')
    .select(pageColumns)
    .select(near ? distanceExpr(near.lat, near.lon).as('distance_m') : sql<null>`NULL`.as('distance_m'))
    .where('places.id', 'in', ids)
    .execute();
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)).filter((r): r is PublicPlaceRow & { distance_m: number | null } => r !== undefined);
}
