import { expressionBuilder, sql, type RawBuilder, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type { Database } from '../../infra/db/schema.ts';
import type { Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';
import { rowBudget, sqliteRowBudget } from '../../infra/db/time-budget.ts';
import { foldText, nameMark, searchFold, searchForm } from '../../infra/text.ts';
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
  /**
   * A kind of business the free text named (`dentist`, `pizza Porto`): the places of these categories match
   * the text too when their names contain the text's other `words`, in `cityId` when the text named a city.
   * Substring text only; absent from searches saved before it existed.
   */
  textKind?: { categories: string[]; words: string[]; cityId: number | null } | null;
  minRating: number | null;
  hasPhone: boolean | null;
  hasWebsite: boolean | null;
  hasEmail: boolean | null;
  /** A social profile, the source's or one its website gave (absent from searches saved before it existed). */
  hasSocial?: boolean | null;
  near: { lat: number; lon: number; radiusM: number } | null;
  /** [minLon, minLat, maxLon, maxLat]. */
  bbox: [number, number, number, number] | null;
  /**
   * A drawn area (`POST /api/v2/map/search`): GeoJSON MultiPolygon coordinates, with `bbox` its bounding
   * box. The SQL narrows to the box; the caller decides each place with the exact point-in-polygon test.
   * Absent from searches saved before it existed.
   */
  polygon?: number[][][][] | null;
  /**
   * Open at a moment (`open_now`, `open_at`): `clock` 'utc', `at` an instant; 'local', `at` a wall-clock time
   * of each place (both in seconds since 1970 on that clock, docs/opening-hours.md). `unparsed`: the places
   * whose hours could not be parsed instead (neither open nor closed; counted for `resolved.open`). Absent
   * from searches saved before it existed.
   */
  open?: OpenAt | null;
  /** true: closed and retired places match too; absent: open places only (`closed_at IS NULL`). */
  includeClosed?: boolean;
  /**
   * What the account running the search leaves out (`only_new`, its suppression list). Added each time a
   * search runs, never saved with it: a saved search always sees the account's list as it is now.
   */
  exclude?: AccountExclusion | null;
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

export interface OpenAt {
  clock: 'utc' | 'local';
  at: number;
  unparsed?: true;
  /**
   * The places changed since the opening-hours pass, decided without its tables (`opening-hours.recent.ts`):
   * `changed` all of them, `matching` those open at the moment (or unparsed). Added as a read runs, never saved.
   */
  recent?: { changed: number[]; matching: number[] };
}

/**
 * The places open at the moment (migration 0031): a probe of `place_hours`' primary key per place (a place has
 * one schedule), the schedule checked against the set of schedules open then, which the database reads once
 * per statement from one day of `place_open_intervals` (a few thousand schedules at most, whatever the
 * catalog's size).
 */
export function openCondition(open: OpenAt): RawBuilder<SqlBool> {
  const byPass = open.unparsed
    ? sql<SqlBool>`EXISTS (SELECT 1 FROM place_hours AS oh WHERE oh.place_id = places.id AND oh.schedule_id = 0 AND oh.state = 'unparsed')`
    : // The place's schedule (one probe of place_hours' primary key) looked up in the set: both databases build the
      // set once per statement. As EXISTS with the set inside, SQLite probed one (place, schedule) pair per open
      // schedule and PostgreSQL drove the query from every open place of the catalog.
      sql<SqlBool>`(SELECT oh.schedule_id FROM place_hours AS oh WHERE oh.place_id = places.id) IN ${openSchedulesAt(open)}`;
  const recent = open.recent;
  if (!recent || recent.changed.length === 0) return byPass;
  // The places changed since the pass: its rows of them are stale or missing, so they are decided by `matching`.
  const ids = (list: number[]) => sql.join(list.map((id) => sql.lit(id)));
  const kept = sql<SqlBool>`(places.id NOT IN (${ids(recent.changed)}) AND ${byPass})`;
  return recent.matching.length === 0 ? kept : sql<SqlBool>`(${kept} OR places.id IN (${ids(recent.matching)}))`;
}

/**
 * The schedules open at the moment, as a subquery: one day of one kind of `place_open_intervals`. The search
 * engine reads the same set (`schedulesOpenAt`) to answer the open filter from its index.
 */
export function openSchedulesAt(open: OpenAt): RawBuilder<{ schedule_id: number }> {
  const day = Math.floor(open.at / 86_400);
  return sql`(SELECT oi.schedule_id FROM place_open_intervals AS oi WHERE oi.kind = ${open.clock === 'utc' ? 'u' : 'l'} AND oi.day = ${day} AND oi.start_s <= ${open.at} AND oi.end_s > ${open.at})`;
}

export const suppressionKinds = ['phone', 'domain', 'email', 'place'] as const;
export type SuppressionKind = (typeof suppressionKinds)[number];

/**
 * Places an account leaves out of its searches, exports and leads. The revisions are not used in the SQL:
 * they make the criteria (and so the read cache's and the count cache's keys) change whenever the
 * account's leads or list change, which the places version does not follow.
 */
export interface AccountExclusion {
  accountId: number;
  /** `only_new`: leave out the places the account has exported; the value is its newest lead's id (0 when none). */
  exported: number | null;
  /** Leave out places matching the account's suppression list: the kinds it has entries of, and the list's revision. */
  suppressed: { kinds: SuppressionKind[]; revision: number } | null;
}

/** The column (or expression) of a place a suppression entry's key is compared with. */
const suppressionKeyOfPlace: Record<SuppressionKind, RawBuilder<string | null>> = {
  phone: sql`places.phone_e164`,
  domain: sql`places.website_domain`,
  email: sql`lower(places.email)`,
  place: sql`places.public_id`,
};

/**
 * What enrichment found counts only while the website (or email) it was found from is still the place's
 * (`contacts/contacts.ts`, `foundStillValid`): a re-import that changed it hides the found values at once.
 */
const foundValid = sql<SqlBool>`places.enrich_basis = coalesce(places.website, places.email)`;

/** 1 when the place has `column` (found by enrichment) and it still counts, else 0 (never null, so it negates). */
const foundHas = (column: 'found_email' | 'found_phone') =>
  sql<number>`(CASE WHEN places.${sql.ref(column)} IS NOT NULL AND ${foundValid} THEN 1 ELSE 0 END)`;

/**
 * 1 when the place has a social profile: in its source's lists (`source_contacts`, JSON whose `socials` key
 * is only written when the list has items) or found on its website; else 0.
 */
const hasSocialExpr = sql<number>`(CASE WHEN places.source_contacts LIKE '%"socials":%' OR (places.found_social = 1 AND ${foundValid}) THEN 1 ELSE 0 END)`;

/**
 * Whether a place has each kind of contact, from its source alone (`source`) and with what its website gave
 * (`enriched`): 1 or 0, for coverage counts (`leadatlas stats`).
 */
export const contactPresence = {
  source: {
    phone: sql<number>`(CASE WHEN places.phone IS NOT NULL THEN 1 ELSE 0 END)`,
    website: sql<number>`(CASE WHEN places.website IS NOT NULL THEN 1 ELSE 0 END)`,
    email: sql<number>`(CASE WHEN places.email IS NOT NULL THEN 1 ELSE 0 END)`,
    social: sql<number>`(CASE WHEN places.source_contacts LIKE '%"socials":%' THEN 1 ELSE 0 END)`,
  },
  enriched: {
    phone: sql<number>`(CASE WHEN places.phone IS NOT NULL OR ${foundHas('found_phone')} = 1 THEN 1 ELSE 0 END)`,
    email: sql<number>`(CASE WHEN places.email IS NOT NULL OR ${foundHas('found_email')} = 1 THEN 1 ELSE 0 END)`,
    social: hasSocialExpr,
  },
};

/** The kinds of suppression entries a found contact can match (`place_found_keys.kind`). */
const foundKeyKinds: ReadonlySet<SuppressionKind> = new Set(['email', 'domain', 'phone']);

/**
 * The exclusion as conditions on `places`: one anti-join per kind of entry the account has, each a probe
 * of the unique index (account_id, kind, key) per place, so the cost follows the places a search reads
 * and not the length of the list; and, for `only_new`, a probe of the leads' (account_id, place_id) index.
 * An email, email domain or phone that the place's website gave is matched too (`place_found_keys`, one
 * probe of its primary key per place).
 */
export function exclusionConditions(exclude: AccountExclusion | null | undefined): RawBuilder<SqlBool>[] {
  if (!exclude) return [];
  const out: RawBuilder<SqlBool>[] = [];
  if (exclude.exported !== null) {
    out.push(
      sql<SqlBool>`NOT EXISTS (SELECT 1 FROM leads AS ex_leads WHERE ex_leads.account_id = ${exclude.accountId} AND ex_leads.place_id = places.id)`,
    );
  }
  for (const kind of exclude.suppressed?.kinds ?? []) {
    out.push(
      sql<SqlBool>`NOT EXISTS (SELECT 1 FROM suppressions AS ex_s WHERE ex_s.account_id = ${exclude.accountId} AND ex_s.kind = ${kind} AND ex_s.key = ${suppressionKeyOfPlace[kind]})`,
    );
    if (foundKeyKinds.has(kind)) {
      out.push(
        sql<SqlBool>`NOT EXISTS (SELECT 1 FROM place_found_keys AS ex_f JOIN suppressions AS ex_fs ON ex_fs.account_id = ${exclude.accountId} AND ex_fs.kind = ex_f.kind AND ex_fs.key = ex_f.key WHERE ex_f.place_id = places.id AND ex_f.kind = ${kind} AND places.found_contacts IS NOT NULL AND ${foundValid})`,
      );
    }
  }
  return out;
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

/**
 * Whether the text index lists the places of a search (the other criteria then check its rows): substring
 * text without a kind of business, or typo-tolerant text with a word whose pieces the index can look up.
 */
function textLeads(criteria: PlaceCriteria): boolean {
  const { text } = criteria;
  if (!text) return false;
  if (text.mode === 'substring') return !criteria.textKind;
  return text.words.some((w) => fuzzyPieces(w).every(indexablePiece));
}

function whereCriteria(db: Db, criteria: PlaceCriteria, eb: Eb, fuzzyCap?: number): Expression<SqlBool> {
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
  if (criteria.bbox) c.push(tg.inBox(eb, ...criteria.bbox, byText));
  if (criteria.near) {
    const { lat, lon, radiusM } = criteria.near;
    c.push(tg.inBox(eb, ...boxAround(lat, lon, radiusM), byText));
    c.push(eb(distanceExpr(lat, lon), '<=', radiusM));
  }
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
      c.push(eb.or([contains(criteria.text.words), eb.and(ofKind)]));
    } else {
      const text =
        criteria.text.mode === 'substring'
          ? tg.containsWords(eb, criteria.text.words)
          : tg.containsAnyPiece(eb, criteria.text.words.map(fuzzyPieces), fuzzyCap);
      c.push(text);
    }
  }
  if (criteria.open) c.push(openCondition(criteria.open));
  c.push(...exclusionConditions(criteria.exclude));
  return eb.and(c);
}

/**
 * What `whereCriteria` decides about a place without text, geography or an account, as 0/1 (or the value)
 * per row: the facts the search engine's in-memory index holds (`search/engine/`). Each says exactly what
 * the condition of the same name above says; the engine's parity test compares the two on real data.
 */
export const indexedPlaceFacts = {
  open: sql<number>`(CASE WHEN places.closed_at IS NULL THEN 1 ELSE 0 END)`,
  visible: sql<number>`(CASE WHEN places.merged_into IS NULL THEN 1 ELSE 0 END)`,
  has_phone: sql<number>`(CASE WHEN (places.phone IS NOT NULL AND places.phone != '') OR ${foundHas('found_phone')} = 1 THEN 1 ELSE 0 END)`,
  has_website: sql<number>`(CASE WHEN places.website IS NOT NULL AND places.website != '' THEN 1 ELSE 0 END)`,
  has_email: sql<number>`(CASE WHEN (places.email IS NOT NULL AND places.email != '') OR ${foundHas('found_email')} = 1 THEN 1 ELSE 0 END)`,
  has_social: hasSocialExpr,
  /** The default order's key (relevance without text or `near`, and `review_count`): see `sortKeyExpr`. */
  review_key: sql<number>`coalesce(places.review_count, -1)`,
};

/**
 * Exact pieces of a word (folded) that a spelling with few edits must still contain, so that the text index
 * can list the candidates (the edit distance decides). With k edits allowed, k+1 pieces with a letter left
 * out between neighbours: an edit, two neighbouring letters swapped included, breaks at most one of them,
 * so one survives. A word too short for that gets k+1 adjoining pieces, plus for each boundary the two
 * pieces beside it with its letters swapped back (`Belrin`: `bel`, `rin` and `berlin`). Words too short
 * for pieces of 3 characters have pieces the index cannot look up (see `fuzzyNarrowed`).
 */
export function fuzzyPieces(word: string): string[] {
  const chars = [...searchFold(word)];
  const edits = allowedEdits(word);
  if (edits === 0) return [chars.join('')];
  const parts = edits + 1;
  const n = chars.length;
  const gapped = n >= 3 * parts + edits;
  const letters = gapped ? n - edits : n;
  const bounds: Array<[number, number]> = [];
  for (let i = 0, at = 0; i < parts; i++) {
    const size = Math.floor(((i + 1) * letters) / parts) - Math.floor((i * letters) / parts);
    bounds.push([at, at + size]);
    at += size + (gapped ? 1 : 0);
  }
  const out = bounds.map(([from, to]) => chars.slice(from, to).join(''));
  if (!gapped) {
    for (let i = 0; i + 1 < parts; i++) {
      const joined = chars.slice(bounds[i]![0], bounds[i + 1]![1]);
      const b = bounds[i]![1] - bounds[i]![0];
      [joined[b - 1], joined[b]] = [joined[b]!, joined[b - 1]!];
      out.push(joined.join(''));
    }
  }
  return out;
}

/**
 * Typos tolerated in a word: none under 4 characters, 1 up to 8, 2 from 9. From 6 characters the text
 * index finds the candidates by pieces of 3 characters; a 4–5 character word's pieces are too short for
 * it, so its candidates must come from the other criteria (see `fuzzyNarrowed`).
 */
export function allowedEdits(word: string): number {
  const n = [...foldText(word)].length;
  return n >= 9 ? 2 : n >= 4 ? 1 : 0;
}

/** Whether a piece of a word can be looked up in the text index (3 characters or more in search form). */
const indexablePiece = (piece: string): boolean => [...searchForm(piece)].length >= 3;

/**
 * Typo-tolerant candidates verified at most (the default of `SEARCH_TYPO_CANDIDATES`). A search with more candidates does not tolerate typos
 * (its answer says so: `resolved.typos`): the candidates are read and checked one by one.
 */
export const fuzzyCandidateLimit = 10_000;

/**
 * The largest area (square degrees: about 111 × 111 km at the equator) whose places may be the
 * typo-tolerant candidates when no city, country, type or indexable word narrows them.
 */
export const fuzzyMaxAreaDeg2 = 1;

function areaDeg2([minLon, minLat, maxLon, maxLat]: [number, number, number, number]): number {
  return (maxLon - minLon) * (maxLat - minLat);
}

/** Whether an index other than the text's narrows the candidates to a city, country, type or a small area. */
function placeNarrowed(criteria: PlaceCriteria): boolean {
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
    case 'name':
      return { expr: nameOrder(db), descending: false };
    case 'distance': {
      if (!criteria.near) throw new Error('sort=distance needs near');
      return { expr: distanceExpr(criteria.near.lat, criteria.near.lon), descending: false };
    }
    case 'relevance': {
      // With text, whole names, then display names starting with the first word (`textTiers`); without, the nearest; else the most reviewed.
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
  const { text, includeClosed: _closed, ...rest } = criteria;
  if (!text || text.mode !== 'substring' || Object.values(rest).some((v) => v != null)) return null;
  return textGeo(db).textOnly;
}

/**
 * A search on one word alone, answered in one pass over the text index: every match with its relevance
 * key (`textTiers`), unsorted; null when the dialect cannot, or when
 * there are more than `cap` matches (then counting and the two lazy streams of `findPlacesPage` cost less
 * than reading them all).
 */
export async function findOneWordMatches(db: Db, criteria: PlaceCriteria, cap: number): Promise<Array<{ id: number; k: number }> | null> {
  const textOnly = textOnlySearch(db, criteria);
  if (!textOnly || criteria.text!.words.length !== 1) return null;
  const { rows } = await textOnly.allOfOneWord(criteria.text!.words[0]!, cap, !criteria.includeClosed).execute(db.kysely);
  return rows.length > cap ? null : rows;
}

/** Exact number of places matching (the fuzzy mode counts candidates: the caller verifies them). */
export async function countPlaces(db: Db, criteria: PlaceCriteria): Promise<number> {
  const textOnly = textOnlySearch(db, criteria);
  if (textOnly) return Number((await textOnly.count(criteria.text!.words, !criteria.includeClosed).execute(db.kysely)).rows[0]?.n ?? 0);
  const row = await filtered(db, criteria)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * One page in the requested order, strictly after `after`. Sorting happens on ids and sort keys only
 * (a covering index serves city/category searches by review count or rating), then the page's rows are read:
 * thousands of matches cost an index scan, not thousands of row reads.
 */
export async function findPlacesPage(
  db: Db,
  criteria: PlaceCriteria,
  sort: PlaceSort,
  after: PlaceKey | null,
  limit: number,
): Promise<PlaceRowWithKey[]> {
  const { expr, descending } = sortKeyExpr(db, criteria, sort);
  // Ties break on the id in the same direction as the key, so an index on the key gives the whole order.
  const direction = descending ? 'desc' : 'asc';
  const past = descending ? '<' : '>';
  const textOnly = sort === 'relevance' ? textOnlySearch(db, criteria) : null;
  if (textOnly) {
    const page = sql<{ id: number; k: number }>`(${textOnly.page(criteria.text!.words, after, limit, !criteria.includeClosed)})`;
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
  if (after)
    ids = ids.where((eb) => eb.or([eb(expr, past, after.key), eb.and([eb(expr, '=', after.key), eb('places.id', past, after.id)])]));
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

/** The columns and facts facet counts group by (see `indexedPlaceFacts`). */
export const placeFacetColumns = {
  category: sql<string | null>`places.category`,
  city: sql<number | null>`places.city_id`,
  country: sql<string | null>`places.country_code`,
  has_phone: indexedPlaceFacts.has_phone,
  has_website: indexedPlaceFacts.has_website,
  has_email: indexedPlaceFacts.has_email,
  has_social: indexedPlaceFacts.has_social,
};
export type PlaceFacetColumn = keyof typeof placeFacetColumns;

/** Matches per value of a column or fact (nulls left out), exact. Substring text, geography and exclusions apply as in a count. */
export async function countPlacesBy(
  db: Db,
  criteria: PlaceCriteria,
  by: PlaceFacetColumn,
): Promise<Array<{ value: string | number; n: number }>> {
  const column: RawBuilder<unknown> = placeFacetColumns[by];
  const rows = await filtered(db, criteria)
    .select(column.as('value'))
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .groupBy(column)
    .execute();
  return rows.filter((r) => r.value !== null).map((r) => ({ value: r.value as string | number, n: Number(r.n) }));
}

/**
 * Which of `cityIds` have places matching the criteria (their own `cityId` aside): the cities a search may
 * turn to when the city it chose has none. In fuzzy mode, cities with candidates (the caller verifies them).
 */
export async function findCityIdsWithMatches(db: Db, criteria: PlaceCriteria, cityIds: number[]): Promise<number[]> {
  if (cityIds.length === 0) return [];
  const rows = await filtered(db, { ...criteria, cityId: null })
    .where('places.city_id', 'in', cityIds)
    .select('places.city_id')
    .distinct()
    .execute();
  return rows.map((r) => Number(r.city_id));
}

/**
 * Candidates the caller checks (fuzzy text, a drawn area) with what it needs to check and order them: the
 * names, the coordinates, the sort key and its direction. At
 * most `limit + 1` (more than `limit`: too many to check; `limit` null: all of them); null when the text
 * index alone lists more than `limit`. When the text index leads and nothing else
 * narrows, the cap is on the index's listing itself (it is then a candidate set of its own: more than
 * `limit` places hold a piece); otherwise on the rows the other indexes give.
 */
export async function findFuzzyCandidates(
  db: Db,
  criteria: PlaceCriteria,
  sort: PlaceSort,
  limit: number | null,
): Promise<{
  descending: boolean;
  rows: Array<{ id: number; name: string; names: string | null; lat: number | null; lon: number | null; sort_key: number | string }>;
} | null> {
  // Typo-tolerant relevance is computed by the caller (the edits): the name is only its tie-breaker.
  const { expr, descending } = sortKeyExpr(db, criteria, sort === 'relevance' && criteria.text?.mode === 'fuzzy' ? 'name' : sort);
  const cap = limit !== null && criteria.text?.mode === 'fuzzy' && textLeads(criteria) && !placeNarrowed(criteria) ? limit + 1 : undefined;
  if (cap !== undefined && criteria.text) {
    // The capped listing is then filtered by the other criteria (a box, places without coordinates): whether
    // it was cut is known from the listing itself.
    const listed = textGeo(db).countAnyPiece(criteria.text.words.map(fuzzyPieces), cap);
    if (listed && Number((await listed.execute(db.kysely)).rows[0]?.n ?? 0) >= cap) return null;
  }
  const query = db.kysely
    .selectFrom('places')
    .where((eb) => whereCriteria(db, criteria, eb, cap))
    .select(['places.id', 'places.name', 'places.lat', 'places.lon'])
    // The names only for the edit distance: a drawn area's candidates can be many.
    .select(criteria.text?.mode === 'fuzzy' ? sql<string | null>`places.names`.as('names') : sql<null>`NULL`.as('names'))
    .select(expr.as('sort_key'));
  return { descending, rows: await (limit === null ? query : query.limit(limit + 1)).execute() };
}

export async function findPlacesByIds(
  db: Db,
  ids: number[],
  near: PlaceCriteria['near'],
): Promise<Array<PublicPlaceRow & { distance_m: number | null }>> {
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

/** A place with what its details page shows: where its record comes from and, for a place of several sources, which gave each field. */
export type PlaceDetailsRow = PublicPlaceRow & {
  id: number;
  first_seen_at: string;
  merged_into: number | null;
  field_sources: string | null;
  import_path: string | null;
  import_finished_at: string | null;
};

/**
 * One row by public id or by row id. A record that is part of a place of several sources is found by its
 * own public id too (`merged_into` says which place it is part of).
 */
export async function findPlaceRow(db: Db, by: { publicId: string } | { id: number }): Promise<PlaceDetailsRow | undefined> {
  const row = await db.kysely
    .selectFrom('places')
    .leftJoin('import_runs', 'import_runs.id', 'places.import_run_id')
    .select(pageColumns)
    .select([
      'places.first_seen_at',
      'places.merged_into',
      'places.field_sources',
      'import_runs.path as import_path',
      'import_runs.finished_at as import_finished_at',
    ])
    .where((eb) => ('publicId' in by ? eb('places.public_id', '=', by.publicId) : eb('places.id', '=', by.id)))
    .executeTakeFirst();
  return row;
}

/** The record of a place of several sources that leads it (of the place's `source`, still held by it first), for its origin. */
export async function leadRecordOf(db: Db, placeId: number, source: string): Promise<PlaceDetailsRow | undefined> {
  const lead = await db.kysely
    .selectFrom('places')
    .select('id')
    .where('merged_into', '=', placeId)
    .where('source', '=', source)
    .orderBy(sql`CASE WHEN closed_reason = 'retired' THEN 1 ELSE 0 END`)
    .orderBy('id')
    .executeTakeFirst();
  return lead ? findPlaceRow(db, { id: lead.id }) : undefined;
}
