import { type Expression, type ExpressionBuilder, expressionBuilder, type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Db } from '../../../infra/db/database.ts';
import { byDialect } from '../../../infra/db/dialect.ts';
import type { Database } from '../../../infra/db/schema.ts';
import { rowBudget, sqliteRowBudget } from '../../../infra/db/time-budget.ts';
import { nameMark, searchFold, searchForm } from '../../../infra/text.ts';
import { exclusionConditions } from '../../leads/exclusion.sql.ts';
import { openCondition } from '../../places/opening-hours.reads.ts';
import { foundHas, hasSocialExpr } from '../../places/place-facts.ts';
import type { PlaceCriteria, PlaceKey, PlaceSort, TrustKind } from './criteria.ts';
import { fuzzyMaxAreaDeg2, fuzzyPieces, indexablePiece } from './typos.ts';

/**
 * A search's criteria as SQL conditions on `places`: one set of filters for every search, count and export
 * query (`whereCriteria`), and the orders. What differs per dialect (full text, geography) sits in
 * `PlaceTextGeo` below, one implementation each.
 */

type Eb = ExpressionBuilder<Database, 'places'>;

/** Full-text and geography, per dialect. */
interface PlaceTextGeo {
  /** Places whose names contain every word (see `wordPhrase`: case, accents and letters folded). */
  containsWords(eb: Eb, words: string[]): Expression<SqlBool>;
  /**
   * The same condition for one side of an OR: checked place by place against the text index's set rather than
   * leading the query (SQLite would otherwise walk every match in the world, then look up each place to test
   * its city, where the city's index reads far fewer rows).
   */
  containsWordsChecked(eb: Eb, words: string[]): Expression<SqlBool>;
  /**
   * Candidates for a fuzzy match: for each word, one of its pieces (folded) occurs exactly. With `cap`, the
   * text index lists at most that many (the caller gives one only when the text index leads the query).
   */
  containsAnyPiece(eb: Eb, piecesPerWord: string[][], cap?: number): Expression<SqlBool>;
  /** How many places hold a piece of each word, counted up to `cap` (null where the dialect caps nothing). */
  countAnyPiece(piecesPerWord: string[][], cap: number): RawBuilder<{ n: number }> | null;
  /**
   * Places whose coordinates fall in the box (inclusive). `textLeads`: the text index lists the places,
   * so the box is checked on their rows only (listing every place in a large box would cost more).
   */
  inBox(eb: Eb, minLon: number, minLat: number, maxLon: number, maxLat: number, textLeads: boolean): Expression<SqlBool>;
  /** Text relevance of a place matching `words` (or, `withKind`, of the kind of business the text named): see `textTiers`. */
  relevance(words: string[], withKind: boolean): RawBuilder<number>;
  /**
   * A search on text alone, answered from the text index without reading `places`: the matching ids in
   * relevance order and their count. Null where the dialect has no such index.
   */
  textOnly: {
    count(words: string[], openOnly: boolean): RawBuilder<{ n: number }>;
    page(words: string[], after: PlaceKey | null, limit: number, openOnly: boolean): RawBuilder<{ id: number; k: number }>;
    /**
     * Every match of one word with its relevance key, at most `cap + 1` rows, from a single pass over the
     * index: a rare word's total and first page at once.
     */
    allOfOneWord(word: string, cap: number, openOnly: boolean): RawBuilder<{ id: number; k: number }>;
  } | null;
}

/**
 * Relevance of a text match, best first: 0, one of the place's names is the query (folded, word for word);
 * 1, its display name starts with the first word; 2, its names contain the words elsewhere; 3, it is of the
 * kind of business the query named, without the words in its names.
 */
export const textTiers = { exact: 0, starts: 1, contains: 2, kind: 3 } as const;

/**
 * A query word as the text index looks it up: its search form (`searchForm`: folded, CJK letters apart),
 * null when it folds to nothing. Three characters or more match anywhere in a name; shorter words match
 * the start of a word of the name (` xy`, or ` x ` for one letter: a whole word), which keeps them three
 * characters long for the trigram index. One or two CJK letters are `字 字` or ` 字 `: anywhere, as each
 * CJK letter is a word of its own in the index.
 */
export function wordPhrase(word: string): string | null {
  const form = searchForm(word);
  const n = [...form].length;
  if (n === 0) return null;
  if (n >= 3) return form;
  return n === 2 ? ` ${form}` : ` ${form} `;
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

/** The FTS5 query for names containing every word; null when no word folds to anything (nothing matches). */
function ftsAllWords(words: string[]): string | null {
  const phrases = words.map(wordPhrase).filter((p): p is string => p !== null);
  return phrases.length === 0 ? null : phrases.map(ftsPhrase).join(' AND ');
}

/** In a search document: the query as a whole name (`$ dominos pizza $`), and the display name's start (`$ dominos`). */
function documentTiers(words: string[]): { exact: string; start: string } {
  const forms = words.map(searchForm).filter((f) => f !== '');
  return { exact: `${nameMark} ${forms.join(' ')} ${nameMark}`, start: `${nameMark} ${forms[0] ?? ''}` };
}

/** `documentTiers` as FTS5 queries: the whole name anywhere, the start at the document's start. */
function ftsTierPhrases(words: string[]): { exact: string; starts: string } {
  const { exact, start } = documentTiers(words);
  return { exact: ftsPhrase(exact), starts: `^${ftsPhrase(start)}` };
}

const nothing = sql<SqlBool>`0`;

/**
 * The ids of the closed and retired places, from the partial index of migration 0022 (closed_at IS NOT
 * NULL), for the full-text-only search (`textOnly`), which reads no `places` row: SQLite builds the set
 * once per query and checks each match's rowid against it. Its cost grows with the closed places.
 */
const closedIds = sql<number>`(SELECT id FROM places WHERE closed_at IS NOT NULL)`;

/** The records that are part of a place of several sources (partial index of migration 0025): never shown as themselves. */
const memberIds = sql<number>`(SELECT id FROM places WHERE merged_into IS NOT NULL)`;

/** For a text-index query (rowids of places_fts): the open places only, or everything but records of places of several sources (closed too). */
const openRowids = (openOnly: boolean) => (openOnly ? sql` AND rowid NOT IN ${closedIds}` : sql` AND rowid NOT IN ${memberIds}`);

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

/**
 * The FTS5 query for fuzzy candidates: for each word whose pieces the trigram index holds (3 characters or
 * more), one of its pieces; null when no word has such pieces (the caller's check decides alone).
 */
function ftsAnyPiece(piecesPerWord: string[][]): string | null {
  const indexable = piecesPerWord.map((pieces) => pieces.map(searchForm)).filter((forms) => forms.every((f) => [...f].length >= 3));
  if (indexable.length === 0) return null;
  return indexable.map((forms) => `(${forms.map(ftsPhrase).join(' OR ')})`).join(' AND ');
}

/** The time budget's check on the text index's rows: its doclists are where a common word's cost is. */
const ftsBudget = sqliteRowBudget(sql`rowid`);

/**
 * SQLite: `places_fts` (migration 0016) holds every name of a place folded, display name first, names
 * between marks (`$ cafe nandu $ カ フ ェ $`), under the trigram tokenizer.
 */
const sqliteTextGeo: PlaceTextGeo = {
  containsWords(eb, words) {
    const query = ftsAllWords(words);
    if (query === null) return nothing;
    return eb('places.id', 'in', sql<number>`(SELECT rowid FROM places_fts WHERE places_fts MATCH ${query} AND ${ftsBudget})`);
  },
  containsWordsChecked(_eb, words) {
    const query = ftsAllWords(words);
    // The unary + keeps SQLite from using the rowid set as an index: the OR is then no multi-index OR.
    return query === null
      ? nothing
      : sql<SqlBool>`+places.id IN (SELECT rowid FROM places_fts WHERE places_fts MATCH ${query} AND ${ftsBudget})`;
  },
  containsAnyPiece(eb, piecesPerWord, cap) {
    const query = ftsAnyPiece(piecesPerWord);
    if (query === null) return eb.and([]);
    // FTS5 reads its doclists lazily: a cap stops the listing, not only its result.
    const limit = cap === undefined ? sql`` : sql` LIMIT ${cap}`;
    return eb('places.id', 'in', sql<number>`(SELECT rowid FROM places_fts WHERE places_fts MATCH ${query} AND ${ftsBudget}${limit})`);
  },
  countAnyPiece(piecesPerWord, cap) {
    const query = ftsAnyPiece(piecesPerWord);
    if (query === null) return null;
    return sql<{
      n: number;
    }>`SELECT count(*) AS n FROM (SELECT 1 FROM places_fts WHERE places_fts MATCH ${query} AND ${ftsBudget} LIMIT ${cap})`;
  },
  inBox(eb, minLon, minLat, maxLon, maxLat, textLeads) {
    if (textLeads) return eb.and(exactBox(eb, minLon, minLat, maxLon, maxLat));
    // The latitude-band index of migration 0013 narrows, the columns decide exactly.
    const near = sql<number>`(SELECT id FROM places WHERE ${bandsOf(minLat, maxLat)} AND lon BETWEEN ${minLon} AND ${maxLon} AND ${sqliteRowBudget(sql`id`)})`;
    return eb.and([eb('places.id', 'in', near), ...exactBox(eb, minLon, minLat, maxLon, maxLat)]);
  },
  relevance(words, withKind) {
    // Read from each matching place's own document (a rowid look-up) rather than by phrase queries over the
    // whole index: the phrases of a whole name or a name's start hold the marks (`$ b`, `r $`), trigrams
    // in a large share of all documents, and the places to rank are already narrowed.
    const { exact, start } = documentTiers(words);
    const startsWith = sql`substr(names, 1, ${[...start].length}) = ${start}`;
    if (!withKind) {
      return sql<number>`(SELECT CASE WHEN instr(names, ${exact}) > 0 THEN ${textTiers.exact} WHEN ${startsWith} THEN ${textTiers.starts} ELSE ${textTiers.contains} END
        FROM places_fts WHERE rowid = places.id)`;
    }
    // Places of the kind match without the words (often most of the matches: every restaurant of a city for
    // `restaurant`): only those with the words are looked up, in the set the text index gives.
    const all = ftsAllWords(words);
    if (all === null) return sql<number>`${textTiers.kind}`;
    return sql<number>`(CASE WHEN places.id IN (SELECT rowid FROM places_fts WHERE places_fts MATCH ${all} AND ${ftsBudget}) THEN (SELECT CASE WHEN instr(names, ${exact}) > 0 THEN ${textTiers.exact}
      WHEN ${startsWith} THEN ${textTiers.starts} ELSE ${textTiers.contains} END FROM places_fts WHERE rowid = places.id) ELSE ${textTiers.kind} END)`;
  },
  textOnly: {
    count(words, openOnly) {
      const query = ftsAllWords(words);
      return query === null
        ? sql<{ n: number }>`SELECT 0 AS n`
        : sql<{ n: number }>`SELECT count(*) AS n FROM places_fts WHERE places_fts MATCH ${query} AND ${ftsBudget}${openRowids(openOnly)}`;
    },
    page(words, after, limit, openOnly) {
      // One stream per tier, in id order, each stopping after `limit` rows (FTS5 reads doclists lazily):
      // whole names first, then display names starting with the first word, then the other matches.
      const all = ftsAllWords(words) ?? ftsPhrase(nameMark.repeat(3));
      const { exact, starts } = ftsTierPhrases(words);
      const tiers: Array<[number, string]> = [
        [textTiers.exact, exact],
        [textTiers.starts, `(${starts} AND ${all}) NOT ${exact}`],
        [textTiers.contains, `(${all}) NOT ${starts} NOT ${exact}`],
      ];
      const afterKey = after === null ? -1 : Number(after.key);
      const from = (k: number) => (afterKey < k ? 0 : afterKey === k ? after!.id : Number.MAX_SAFE_INTEGER);
      const streams = tiers.map(
        ([k, query]) =>
          sql`SELECT * FROM (SELECT rowid AS id, ${k} AS k FROM places_fts WHERE places_fts MATCH ${query} AND rowid > ${from(k)} AND ${ftsBudget}${openRowids(openOnly)} ORDER BY rowid LIMIT ${limit})`,
      );
      return sql<{ id: number; k: number }>`SELECT id, k FROM (${sql.join(streams, sql` UNION ALL `)}) ORDER BY k, id LIMIT ${limit}`;
    },
    allOfOneWord(word, cap, openOnly) {
      // The document is folded text: a whole name is `$ word $` in it, the display name's start `$ word`.
      const form = searchForm(word);
      const query = ftsAllWords([word]);
      if (query === null) return sql<{ id: number; k: number }>`SELECT 0 AS id, 0 AS k WHERE 0`;
      const start = `${nameMark} ${form}`;
      return sql<{ id: number; k: number }>`SELECT rowid AS id,
          CASE WHEN instr(names, ${`${start} ${nameMark}`}) > 0 THEN ${textTiers.exact}
               WHEN substr(names, 1, ${[...start].length}) = ${start} THEN ${textTiers.starts} ELSE ${textTiers.contains} END AS k
        FROM places_fts WHERE places_fts MATCH ${query} AND ${ftsBudget}${openRowids(openOnly)} LIMIT ${cap + 1}`;
    },
  },
};

/** Scripts written without spaces: a short word of theirs matches anywhere, as in the SQLite index. */
const unspacedWord = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;

/**
 * The other names of a place on PostgreSQL: the `names` JSON (`{"de": …, "alt": […]}`) with its keys taken
 * out, so that only names are searched, as `searchDocument` takes them on SQLite (`bar` is the key of the
 * Bavarian name, not a name). Scalar text functions only: a set-returning function per row makes the planner
 * price a text search high enough to compile it (JIT), which costs more than the search.
 */
const otherNames = sql`regexp_replace(places.names, ${'"(?:[^"\\\\]|\\\\.)*"\\s*:'}, '', 'g')`;

/** `la_fold` after NFKC, for the checks outside the trigram index: `C.ª` holds the word `a`, as `foldText` has it. */
const foldCompat = (text: RawBuilder<unknown>) => sql`la_fold(normalize(${text}, NFKC))`;

/** A name folded to the form relevance compares: letters and digits, single spaces (as `searchFold`). */
const foldWords = (text: RawBuilder<unknown>) => sql`trim(regexp_replace(${foldCompat(text)}, '[^[:alnum:]]+', ' ', 'g'))`;

/**
 * The other names folded as a search document: ` $ first name $ $ second name $ `, each name's letters and
 * digits between marks (the quotes that delimited it), so that ` $ query $ ` is one whole name.
 */
const otherNamesDocument = sql`regexp_replace(regexp_replace(replace(regexp_replace(${foldCompat(otherNames)}, '[$]', ' ', 'g'), '"', '$'), '[^[:alnum:]$]+', ' ', 'g'), ' *[$] *', ' $ ', 'g')`;

/** Whether the name or one of the other names passes `test`; the other names only when the JSON text as a whole does (keys can pass it, no name fails it). */
function anyName(test: (text: RawBuilder<unknown>) => RawBuilder<SqlBool>): RawBuilder<SqlBool> {
  return sql<SqlBool>`(${test(sql.ref('places.name'))} OR (places.names IS NOT NULL AND ${test(sql.ref('places.names'))} AND ${test(otherNames)}))`;
}

/**
 * PostgreSQL: substring on the name and on each of the other names, case and accents folded by `la_fold`
 * (migration 0011; the trigram index is on la_fold(name)). Words under three characters match at the start
 * of a word, as on SQLite (a regular expression, outside the index).
 */
const postgresTextGeo: PlaceTextGeo = {
  containsWords(eb, words) {
    const forms = words.map(searchFold).filter((f) => f !== '');
    if (forms.length === 0) return nothing;
    return eb.and(
      forms.map((f) => {
        const n = [...f].length;
        if (n >= 3 || unspacedWord.test(f)) {
          const pattern = sql`la_fold(${likePattern(f)})`;
          return anyName((text) => sql<SqlBool>`la_fold(${text}) LIKE ${pattern}`);
        }
        const re = `(^|[^[:alnum:]])${f}${n === 1 ? '([^[:alnum:]]|$)' : ''}`;
        return anyName((text) => sql<SqlBool>`${foldCompat(text)} ~ ${re}`);
      }),
    );
  },
  containsWordsChecked: (eb, words) => postgresTextGeo.containsWords(eb, words),
  countAnyPiece: () => null,
  containsAnyPiece(eb, piecesPerWord) {
    // Pieces are parts of a word: substrings however short. (No cap: the trigram index is one condition
    // of the plan, and the statement timeout bounds it.)
    const contains = (piece: string) => {
      const pattern = sql`la_fold(${likePattern(piece)})`;
      return anyName((text) => sql<SqlBool>`la_fold(${text}) LIKE ${pattern}`);
    };
    return eb.and(piecesPerWord.map((pieces) => eb.or(pieces.map(contains))));
  },
  inBox(eb, minLon, minLat, maxLon, maxLat) {
    return eb.and(exactBox(eb, minLon, minLat, maxLon, maxLat));
  },
  relevance(words, withKind) {
    const forms = words.map(searchFold).filter((f) => f !== '');
    const query = forms.join(' ');
    const folded = foldWords(sql.ref('places.name'));
    // A whole name: the display name or any other name is the query, word for word (the SQLite document's `$ query $`).
    const exact = sql`(${folded} = ${query} OR (places.names IS NOT NULL AND position(${` ${nameMark} ${query} ${nameMark} `} IN ${otherNamesDocument}) > 0))`;
    const starts = sql`${folded} LIKE ${`${(forms[0] ?? '').replace(/[\\%_]/g, (c) => `\\${c}`)}%`} ESCAPE '\\'`;
    const tiers = sql<number>`(CASE WHEN ${exact} THEN ${textTiers.exact} WHEN ${starts} THEN ${textTiers.starts} ELSE ${textTiers.contains} END)`;
    if (!withKind) return tiers;
    const contains = postgresTextGeo.containsWords(expressionBuilder<Database, 'places'>(), words);
    return sql<number>`(CASE WHEN ${contains} THEN ${tiers} ELSE ${textTiers.kind} END)`;
  },
  textOnly: null,
};

const textGeo = byDialect<PlaceTextGeo>({ sqlite: () => sqliteTextGeo, postgres: () => postgresTextGeo });

export const earthRadiusM = 6_371_008.8;

/** Great-circle distance in metres from (lat, lon) to the place (haversine; both dialects have the math functions). */
export function distanceExpr(lat: number, lon: number) {
  return sql<number>`(${2 * earthRadiusM} * asin(sqrt(power(sin(radians(places.lat - ${lat}) / 2), 2) + cos(radians(${lat})) * cos(radians(places.lat)) * power(sin(radians(places.lon - ${lon}) / 2), 2))))`;
}

/** Degrees of latitude/longitude that cover `radiusM` around a point: the index pre-filter of `near`. */
export function boxAround(lat: number, lon: number, radiusM: number): [number, number, number, number] {
  const dLat = (radiusM / earthRadiusM) * (180 / Math.PI);
  const cosLat = Math.cos((lat * Math.PI) / 180);
  const dLon = cosLat < 1e-6 ? 180 : Math.min(180, dLat / cosLat);
  return [lon - dLon, Math.max(-90, lat - dLat), lon + dLon, Math.min(90, lat + dLat)];
}

/**
 * Whether the text index lists the places of a search (the other criteria then check its rows): substring
 * text without a kind of business, or typo-tolerant text with a word whose pieces the index can look up.
 */
export function textLeads(criteria: PlaceCriteria): boolean {
  const { text } = criteria;
  if (!text) return false;
  if (text.mode === 'substring') return !criteria.textKind;
  return text.words.some((w) => fuzzyPieces(w).every(indexablePiece));
}

export function whereCriteria(db: Db, criteria: PlaceCriteria, eb: Eb, fuzzyCap?: number): Expression<SqlBool> {
  const tg = textGeo(db);
  // First, so that it runs on every row examined, whichever index leads.
  const c: Expression<SqlBool>[] = [rowBudget(db)(sql`places.id`)];
  // Open places only: `closed_at` sits in the search indexes right after the category (migration 0022), so
  // a type + city or country search seeks it within the index and counts from index entries alone.
  if (!criteria.includeClosed) c.push(eb('places.closed_at', 'is', null));
  // Closed and retired places too, but never a record that is part of a place of several sources: the place shows it.
  else c.push(eb('places.merged_into', 'is', null));
  const byText = textLeads(criteria);
  if (criteria.categories) c.push(eb('places.category', 'in', criteria.categories.length > 0 ? criteria.categories : ['']));
  if (criteria.cityId !== null) c.push(eb('places.city_id', '=', criteria.cityId));
  if (criteria.countryCode !== null) c.push(eb('places.country_code', '=', criteria.countryCode));
  if (criteria.minRating !== null) c.push(eb('places.rating', '>=', criteria.minRating));
  // A phone or email that the place's website gave counts as the place's (`found`).
  const presence = (
    column: 'places.phone' | 'places.website' | 'places.email',
    wanted: boolean | null,
    found?: 'found_email' | 'found_phone',
  ) => {
    if (wanted === true) {
      const own = eb.and([eb(column, 'is not', null), eb(column, '!=', '')]);
      c.push(found ? eb.or([own, eb(foundHas(found), '=', 1)]) : own);
    }
    if (wanted === false) {
      const none = eb.or([eb(column, 'is', null), eb(column, '=', '')]);
      c.push(found ? eb.and([none, eb(foundHas(found), '=', 0)]) : none);
    }
  };
  presence('places.phone', criteria.hasPhone, 'found_phone');
  presence('places.website', criteria.hasWebsite);
  presence('places.email', criteria.hasEmail, 'found_email');
  if (criteria.hasSocial === true || criteria.hasSocial === false) c.push(eb(hasSocialExpr, '=', criteria.hasSocial ? 1 : 0));
  c.push(...trustConditions(eb, criteria));
  if (criteria.bbox) c.push(tg.inBox(eb, ...criteria.bbox, byText));
  if (criteria.near) {
    const { lat, lon, radiusM } = criteria.near;
    c.push(tg.inBox(eb, ...boxAround(lat, lon, radiusM), byText));
    c.push(eb(distanceExpr(lat, lon), '<=', radiusM));
  }
  const byName: Expression<SqlBool>[] = [];
  if (criteria.text) {
    const kind = criteria.text.mode === 'substring' ? criteria.textKind : null;
    if (kind) {
      // A query that is nothing but the kind (`restaurant`) has words in names all over the world: within a
      // city, country or area, that index leads and the text is checked place by place. Otherwise (`pizza hut`,
      // or no place) the text index and the category index each give their side of the OR.
      const narrowed = criteria.cityId !== null || criteria.countryCode !== null || criteria.near !== null || criteria.bbox !== null;
      const contains = (words: string[]) =>
        narrowed && kind.words.length === 0 ? tg.containsWordsChecked(eb, words) : tg.containsWords(eb, words);
      const ofKind: Expression<SqlBool>[] = [eb('places.category', 'in', kind.categories.length > 0 ? kind.categories : [''])];
      if (kind.words.length > 0) ofKind.push(contains(kind.words));
      if (kind.cityId !== null) ofKind.push(eb('places.city_id', '=', kind.cityId));
      byName.push(eb.or([contains(criteria.text.words), eb.and(ofKind)]));
    } else {
      const text =
        criteria.text.mode === 'substring'
          ? tg.containsWords(eb, criteria.text.words)
          : tg.containsAnyPiece(eb, criteria.text.words.map(fuzzyPieces), fuzzyCap);
      byName.push(text);
    }
  }
  // The places carrying the contact the text held match besides those the rest of the text names.
  const carrying = contactIds(criteria);
  if (carrying.length > 0)
    c.push(byName.length > 0 ? eb.or([eb('places.id', 'in', carrying), ...byName]) : eb('places.id', 'in', carrying));
  else c.push(...byName);
  if (criteria.open) c.push(openCondition(criteria.open));
  c.push(...exclusionConditions(criteria.exclude));
  return eb.and(c);
}

/**
 * The trust filters (issue 33) on the summary the trust pass keeps on each place (migration 0037): the status or
 * type of its best value of a kind, that value's confidence, the lead score, and when its content changed or a
 * value was last checked (ISO text in `toISOString` form on both dialects, so text order is time order). A null
 * column (no value of the kind, or not seen by the pass) matches no condition. The engine's index holds the same
 * columns (`indexedPlaceFacts`).
 */
function trustConditions(eb: Eb, criteria: PlaceCriteria): Expression<SqlBool>[] {
  const c: Expression<SqlBool>[] = [];
  if (criteria.emailStatus != null) c.push(eb('places.email_status', '=', criteria.emailStatus));
  if (criteria.phoneType != null) c.push(eb('places.phone_type', '=', criteria.phoneType));
  if (criteria.websiteStatus != null) c.push(eb('places.website_status', '=', criteria.websiteStatus));
  if (criteria.minConfidence != null)
    for (const kind of criteria.minConfidence.kinds) c.push(eb(confidenceColumn[kind], '>=', criteria.minConfidence.value));
  if (criteria.minLeadScore != null) c.push(eb('places.lead_score', '>=', criteria.minLeadScore));
  if (criteria.updatedSince != null) c.push(eb('places.updated_at', '>=', criteria.updatedSince));
  if (criteria.verifiedSince != null) c.push(eb('places.verified_at', '>=', criteria.verifiedSince));
  return c;
}

const confidenceColumn = {
  email: 'places.email_confidence',
  phone: 'places.phone_confidence',
  website: 'places.website_confidence',
} as const satisfies Record<TrustKind, string>;

/** The places of a contact criterion, those carrying it first. */
const contactIds = (criteria: PlaceCriteria): number[] => (criteria.contact ? [...criteria.contact.ids, ...criteria.contact.related] : []);

/**
 * Relevance with a contact: the places carrying it (-2), those of an email's domain (-1), then the name
 * search's own order (`textTiers`, from 0), or 0 without text.
 */
function contactRelevance(criteria: PlaceCriteria, byName: RawBuilder<number> | null): RawBuilder<number> {
  const { ids = [], related = [] } = criteria.contact ?? {};
  const tiers = [
    ...(ids.length > 0 ? [sql`WHEN places.id IN (${sql.join(ids)}) THEN -2`] : []),
    ...(related.length > 0 ? [sql`WHEN places.id IN (${sql.join(related)}) THEN -1`] : []),
  ];
  if (tiers.length === 0) return byName ?? sql<number>`0`;
  // Integers on both dialects: PostgreSQL reads the name tiers' parameters as text otherwise.
  return sql<number>`(CASE ${sql.join(tiers, sql` `)} ELSE CAST(${byName ?? sql`0`} AS integer) END)`;
}

function areaDeg2([minLon, minLat, maxLon, maxLat]: [number, number, number, number]): number {
  return (maxLon - minLon) * (maxLat - minLat);
}

/** Whether an index other than the text's narrows the candidates to a city, country, type or a small area. */
export function placeNarrowed(criteria: PlaceCriteria): boolean {
  const near = criteria.near ? boxAround(criteria.near.lat, criteria.near.lon, criteria.near.radiusM) : null;
  return (
    criteria.cityId !== null ||
    criteria.countryCode !== null ||
    criteria.categories !== null ||
    (criteria.bbox !== null && areaDeg2(criteria.bbox) <= fuzzyMaxAreaDeg2) ||
    (near !== null && areaDeg2(near) <= fuzzyMaxAreaDeg2)
  );
}

/**
 * Whether a typo-tolerant search is narrowed by an index (a long word's pieces, a city, country, type or a
 * small area), not a walk through every place of the catalog or of a world-sized box.
 */
export function fuzzyNarrowed(criteria: PlaceCriteria): boolean {
  const indexedWord = (criteria.text?.words ?? []).some((w) => fuzzyPieces(w).every(indexablePiece));
  return indexedWord || placeNarrowed(criteria);
}

/**
 * Names in code point order on both dialects: SQLite compares the UTF-8 bytes (code point order); PostgreSQL
 * would follow the database's collation (`en_US.UTF-8` puts `apple` before `Banana`, `C` after), so it is told
 * `C`. No index serves the name order, so the collation costs nothing.
 */
const nameOrder = byDialect<RawBuilder<string>>({
  sqlite: () => sql<string>`places.name`,
  postgres: () => sql<string>`(places.name COLLATE "C")`,
});

/** The sort key of a row, as SQL: a number or a text, never null, so keyset comparisons stay simple. */
export function sortKeyExpr(db: Db, criteria: PlaceCriteria, sort: PlaceSort): { expr: RawBuilder<number | string>; descending: boolean } {
  switch (sort) {
    case 'rating':
      return { expr: sql<number>`coalesce(places.rating, -1)`, descending: true };
    case 'review_count':
      return { expr: sql<number>`coalesce(places.review_count, -1)`, descending: true };
    case 'lead_score':
      // Places the trust pass has not scored yet last (a criterion on trust waits for the pass: `usesTrust`).
      return { expr: sql<number>`coalesce(places.lead_score, -1)`, descending: true };
    case 'name':
      return { expr: nameOrder(db), descending: false };
    case 'distance': {
      if (!criteria.near) throw new Error('sort=distance needs near');
      return { expr: distanceExpr(criteria.near.lat, criteria.near.lon), descending: false };
    }
    case 'relevance': {
      // With text, whole names, then display names starting with the first word (`textTiers`); without, the nearest; else the most reviewed.
      if (criteria.contact) {
        const byName = criteria.text?.mode === 'substring' ? textGeo(db).relevance(criteria.text.words, Boolean(criteria.textKind)) : null;
        return { expr: contactRelevance(criteria, byName), descending: false };
      }
      if (criteria.text && criteria.text.mode === 'substring')
        return { expr: textGeo(db).relevance(criteria.text.words, Boolean(criteria.textKind)), descending: false };
      if (criteria.near) return { expr: distanceExpr(criteria.near.lat, criteria.near.lon), descending: false };
      return { expr: sql<number>`coalesce(places.review_count, -1)`, descending: true };
    }
  }
}

/** `places` narrowed by the criteria: the base of every search, count and export query. */
export function filtered(db: Db, criteria: PlaceCriteria) {
  return db.kysely.selectFrom('places').where((eb) => whereCriteria(db, criteria, eb));
}

/** The text index alone answers a substring search with no other criterion (no `places` row is read). */
export function textOnlySearch(db: Db, criteria: PlaceCriteria) {
  const { text, includeClosed: _closed, ...rest } = criteria;
  if (!text || text.mode !== 'substring' || Object.values(rest).some((v) => v != null)) return null;
  return textGeo(db).textOnly;
}

/** How many places the text index lists for typo-tolerant words, counted up to `cap`; null where the dialect caps nothing. */
export function fuzzyListing(db: Db, words: string[], cap: number): RawBuilder<{ n: number }> | null {
  return textGeo(db).countAnyPiece(words.map(fuzzyPieces), cap);
}
