import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { importFiles } from '../../src/bootstrap.ts';
import type { Db } from '../../src/infra/db/database.ts';
import { createReadPool, type ReadPool } from '../../src/infra/db/read-pool.ts';
import { foldText, searchFold } from '../../src/infra/text.ts';
import { facetDimensions } from '../../src/modules/search/engine/bitmap-index.ts';
import { indexQueryOf, MemorySearchEngine, SqlSearchEngine } from '../../src/modules/search/engine/search-engine.ts';
import { noCriteria, type PlaceCriteria, type PlaceKey, type PlaceSort } from '../../src/modules/search/query/criteria.ts';
import { type ApiReadTasks, createReadTasks, readTasksModule } from '../../src/modules/search/read-tasks.ts';
import type { PlacePage } from '../../src/modules/search/search.reads.ts';
import { dialects, type TestDatabase } from '../helpers/databases.ts';
import { indexOnly } from '../helpers/index-only.ts';
import { testPlaceRecord, writePlaces } from '../helpers/places.ts';

/**
 * Full text through the engine's index against the SQL path (SQLite FTS5, PostgreSQL trigram LIKE) on real data:
 * the OpenStreetMap extracts of Monaco (Latin names in several languages) and central Tokyo (Japanese names, their
 * romanisations). Queries are made from the names the catalog holds: first words, two words, a word's start (the
 * prefix of the last word as a user types it), short words of one and two letters, one and two CJK letters, whole
 * names, accented and upper-case spellings, words no name holds; each alone and with a type, a city, a contact
 * filter, a rating threshold or closed places, and with a kind of business. Same totals, the same places in the
 * same order page after page (relevance, review_count, rating), the same cursors and facets; then after new and
 * renamed places arrive through the change log. The index must not hand any of them to SQL.
 */

/** SEARCH_PARITY_FULL=1: after the changes, every search of the sweep again, not half of them. */
const full = process.env.SEARCH_PARITY_FULL === '1';
const data = new URL('../../../shared/data/', import.meta.url);
const files = ['osm/monaco-2026.osm.pbf', 'osm/tokyo-center.osm.pbf'].map((f) => new URL(f, data).pathname);

/** The text queries of the sweep, from the names the catalog holds (every 7th name: a spread of both extracts). */
async function textQueries(db: Db): Promise<string[][]> {
  const { rows } = await sql<{ name: string }>`SELECT name FROM places WHERE id % 7 = 0 ORDER BY id LIMIT 100`.execute(db.kysely);
  const out = new Set<string>();
  const add = (words: string[]) => {
    if (words.length > 0 && words.every((w) => w !== '')) out.add(JSON.stringify(words));
  };
  for (const [i, { name }] of rows.entries()) {
    const words = name.split(/\s+/).filter((w) => w !== '');
    const letters = [...name];
    if (i % 4 === 0) add(words); // the whole name, as typed
    add(words.slice(0, 1));
    if (words.length > 1) add(words.slice(0, 2));
    if (words.length > 1) add([words[0]!, words[1]!.slice(0, 2)]); // the last word's start
    add([[...(words[0] ?? '')].slice(0, 3).join('')]);
    if (i % 3 === 0) add([[...(words[0] ?? '')].slice(0, 2).join('')]);
    if (i % 5 === 0) add([[...(words[0] ?? '')].slice(0, 1).join('')]);
    if (i % 2 === 0 && letters.length > 2) add([letters.slice(1, 3).join('')]); // two letters inside (CJK)
    if (i % 6 === 0 && letters.length > 1) add([letters[1]!]);
    if (i % 4 === 1) add([foldText(words.at(-1) ?? '').toUpperCase()]);
  }
  for (const words of [
    ['café'],
    ['CAFE'],
    ['Straße'],
    ['Ø'],
    ['zzzqx'],
    ['de', 'la'],
    ['!!'],
    ['ラーメン'],
    ['新宿'],
    ['駅'],
    ['bar', 'x'],
  ])
    add(words);
  return [...out].map((w) => JSON.parse(w) as string[]);
}

async function topValues(db: Db, column: 'category' | 'city_id', n: number): Promise<Array<string | number>> {
  const { rows } = await sql<{ v: string | number }>`SELECT ${sql.ref(column)} AS v FROM places WHERE ${sql.ref(column)} IS NOT NULL
    GROUP BY ${sql.ref(column)} ORDER BY count(*) DESC, ${sql.ref(column)} LIMIT ${n}`.execute(db.kysely);
  return rows.map((r) => (column === 'city_id' ? Number(r.v) : r.v));
}

/** Each text query alone, and in turn with one of the other criteria the index holds. */
async function searches(db: Db): Promise<PlaceCriteria[]> {
  const categories = (await topValues(db, 'category', 3)) as string[];
  const cities = (await topValues(db, 'city_id', 2)) as number[];
  const filters: Array<Partial<PlaceCriteria>> = [
    {},
    { categories: [categories[0]!, categories[1]!] },
    { cityId: cities[0]! },
    { hasPhone: true },
    { minRating: 3 },
    { includeClosed: true },
    { countryCode: 'JP', hasWebsite: false },
  ];
  const out: PlaceCriteria[] = [];
  for (const [i, words] of (await textQueries(db)).entries()) {
    const text = { words, mode: 'substring' as const };
    out.push({ ...noCriteria, text });
    if (i % 2 === 0) out.push({ ...noCriteria, ...filters[1 + ((i / 2) % (filters.length - 1))], text });
  }
  // A kind of business in the text: its places match too (tier 3), in a city when the text named one.
  const [kind, other] = [categories[0]!, categories[2]!];
  for (const [words, kindWords, cityId] of [
    [[kind], [], null],
    [['pizza', kind], ['pizza'], null],
    [[kind, 'de'], ['de'], cities[1]!],
    [['new'], [], cities[0]!],
  ] as Array<[string[], string[], number | null]>) {
    out.push({
      ...noCriteria,
      text: { words, mode: 'substring' },
      textKind: { categories: [kind, other], words: kindWords, cityId },
    });
    out.push({
      ...noCriteria,
      hasPhone: true,
      text: { words, mode: 'substring' },
      textKind: { categories: [kind], words: kindWords, cityId },
    });
  }
  return out;
}

/**
 * Where PostgreSQL's SQL answers otherwise than SQLite's, the index answers as SQLite (both read the search
 * document): its text condition is `la_fold(name) LIKE '%word%'`, and `la_fold` (lower and unaccent) keeps
 * punctuation where `searchFold` makes it a space, so a word with punctuation inside (`AMRR-AG2R`, `l'Opéra`) is
 * not found there; and a word under three letters is found at a word's start by a regular expression on the names,
 * whose idea of a word's start differs from the document's at its edges (`Ba`: one place of the sample). Such
 * words are left out of the comparison on PostgreSQL.
 */
const postgresAgrees = (criteria: PlaceCriteria): boolean =>
  [...(criteria.text?.words ?? []), ...(criteria.textKind?.words ?? [])].every((w) => {
    const folded = searchFold(w);
    return !folded.includes(' ') && [...folded].length >= 3;
  });

const withoutKey = (row: PlacePage['rows'][number]) => {
  const { sort_key: _key, ...rest } = row as typeof row & { sort_key?: unknown };
  return rest;
};

for (const dialect of dialects) {
  describe(`full text through the engine's index against SQL on real data (${dialect.name})`, { timeout: 240_000 }, () => {
    let t: TestDatabase;
    let reads: ReadPool<ApiReadTasks>;
    let memory: MemorySearchEngine;
    let sqlEngine: SqlSearchEngine;

    before(async () => {
      t = await dialect.open('prepared');
      await importFiles(t.db, files);
      await sql`UPDATE places SET rating = (id % 9) * 0.5 + 1, review_count = id % 37 WHERE id % 3 <> 0`.execute(t.db.kysely);
      reads = createReadPool({ db: t.db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule });
      memory = new MemorySearchEngine({ db: t.db, reads: indexOnly(reads), tailLimit: () => 1_000_000 }, 60_000);
      sqlEngine = new SqlSearchEngine({ db: t.db, reads });
      await memory.start();
      assert.equal((memory.state() as { status?: string }).status, 'ready');
    });
    after(async () => {
      await memory?.close();
      await reads?.close();
      await t?.dispose();
    });

    /** Every search, a few pages in each order, then counts and (for some) facets. Answers how many found places. */
    async function compareAll(label: string, half = false): Promise<number> {
      let found = 0;
      for (const [i, criteria] of (await searches(t.db)).entries()) {
        if (half && !full && i % 2 === 1) continue;
        if (dialect.name === 'postgres' && !postgresAgrees(criteria)) continue;
        assert.ok(indexQueryOf(criteria, 'relevance'), `the index holds ${JSON.stringify(criteria)}`);
        for (const sort of (i % 3 === 0 ? ['relevance', 'review_count', 'rating'] : ['relevance']) as PlaceSort[]) {
          let after: PlaceKey | null = null;
          for (let page = 0; page < 2; page++) {
            const [m, s]: [PlacePage, PlacePage] = [
              await memory.searchPage(criteria, sort, after, 10, 10_000),
              await sqlEngine.searchPage(criteria, sort, after, 10, 10_000),
            ];
            const what = `${label}: ${JSON.stringify(criteria)} ${sort} page ${page}`;
            assert.equal(m.total, s.total, what);
            assert.deepEqual(
              m.rows.map((r) => `${r.id} ${r.name}`),
              s.rows.map((r) => `${r.id} ${r.name}`),
              what,
            );
            assert.deepEqual(m.rows.map(withoutKey), s.rows.map(withoutKey), what);
            assert.deepEqual(m.next, s.next === null ? null : { key: Number(s.next.key), id: s.next.id }, what);
            if (page === 0 && sort === 'relevance' && s.total > 0) found++;
            if (!s.next) break;
            after = { key: Number(s.next.key), id: s.next.id };
          }
        }
        assert.equal(await memory.countMatches(criteria), await sqlEngine.countMatches(criteria));
        if (i % 15 === 0)
          for (const by of facetDimensions)
            assert.deepEqual(
              await memory.facets(criteria, by),
              await sqlEngine.facets(criteria, by),
              `facets by ${by} of ${JSON.stringify(criteria)}`,
            );
      }
      return found;
    }

    test('answers text searches as SQL does: totals, pages in relevance and the other orders, cursors, facets', async () => {
      const found = await compareAll('built');
      assert.ok(found > (dialect.name === 'postgres' ? 50 : 100), `${found} text searches found places`);
    });

    test('follows renamed and new places through the change log', async () => {
      const { rows } = await sql<{
        id: number;
        name: string;
        category: string | null;
        city_id: number | null;
        country_code: string | null;
      }>`
        SELECT id, name, category, city_id, country_code FROM places WHERE id % 11 = 0 ORDER BY id LIMIT 200`.execute(t.db.kysely);
      const built = (memory.state() as { builtMs?: number | null }).builtMs;
      // New places named after existing ones (whole names, so the first tier moves).
      await writePlaces(
        t.db,
        rows.map((r, i) =>
          testPlaceRecord('parity-text', `copy-${r.id}`, {
            name: i % 2 === 0 ? r.name : `${r.name} Annex`,
            category: r.category,
            categories: r.category ? [r.category] : [],
            city_id: r.city_id,
            country_code: r.country_code,
          }),
        ),
      );
      await memory.catchUp();
      // Then a third of them renamed by the same source, and a tenth of the rest closed.
      await writePlaces(
        t.db,
        rows
          .filter((_, i) => i % 3 === 0)
          .map((r) =>
            testPlaceRecord('parity-text', `copy-${r.id}`, {
              name: `Nouveau ${r.name.split(' ').at(-1)}`,
              category: r.category,
              categories: r.category ? [r.category] : [],
              city_id: r.city_id,
              country_code: r.country_code,
            }),
          ),
      );
      await sql`UPDATE places SET closed_reason = 'retired', closed_at = '2026-01-01T00:00:00.000Z' WHERE id % 10 = 3 AND closed_at IS NULL`.execute(
        t.db.kysely,
      );
      await memory.catchUp();
      assert.equal((memory.state() as { builtMs?: number | null }).builtMs, built, 'followed the change log without a rebuild');
      // Every search was compared on the built index; after the changes, what is new is the places (new,
      // renamed, closed), which half the searches reach as well: the alone and filtered ones of each kind of
      // query, and each order and the facets on the same indices as before. SEARCH_PARITY_FULL=1 compares all.
      await compareAll('after changes', true);
    });

    test('answers the names of the matching rules as SQL does: letters outside decomposition, short words, CJK, kana voicing', async () => {
      // The names of `search.matching.test.ts`, through the change log into the index.
      const hard = [
        'NØR Restaurant',
        'Straße Café',
        'Łódź Bar',
        'Dıyarbakır Kebap',
        'GR',
        'GR 11 Trail',
        'Grand Hotel',
        'Öl & Wein',
        'Ó Maria',
      ];
      hard.push(
        'Brot R Us',
        'ローソン新宿店',
        '牛角',
        '新宿牛角',
        'バー新宿',
        'ハーブ新宿',
        'The Boulder Bar',
        'Boulder Beer',
        'Boulder',
        'Ratskeller',
      );
      await writePlaces(
        t.db,
        hard.map((name, i) => testPlaceRecord('parity-hard', `h${i}`, { name })),
      );
      await memory.catchUp();
      const queries = [
        ['nor'],
        ['NØR'],
        ['strasse'],
        ['straße'],
        ['lodz'],
        ['diyarbakir'],
        ['gr'],
        ['GR', '11'],
        ['ol'],
        ['o'],
        ['r'],
        ['brot', 'r'],
      ];
      queries.push(
        ['新宿'],
        ['牛'],
        ['牛角'],
        ['バー'],
        ['ハー'],
        ['ローソン'],
        ['boulder'],
        ['Boulder', 'Bar'],
        ['bou'],
        ['ratskeller'],
        ['cafe'],
      );
      for (const words of queries) {
        const criteria: PlaceCriteria = { ...noCriteria, text: { words, mode: 'substring' } };
        if (dialect.name === 'postgres' && !postgresAgrees(criteria)) continue;
        const [m, s] = [
          await memory.searchPage(criteria, 'relevance', null, 50, 10_000),
          await sqlEngine.searchPage(criteria, 'relevance', null, 50, 10_000),
        ];
        assert.equal(m.total, s.total, JSON.stringify(words));
        assert.deepEqual(
          m.rows.map((r) => `${r.id} ${r.name}`),
          s.rows.map((r) => `${r.id} ${r.name}`),
          JSON.stringify(words),
        );
      }
    });

    test('leaves typo-tolerant text and a contact in the text to SQL', () => {
      assert.equal(indexQueryOf({ ...noCriteria, text: { words: ['resturant'], mode: 'fuzzy' } }, 'relevance'), null);
      assert.equal(
        indexQueryOf({ ...noCriteria, text: { words: ['bar'], mode: 'substring' }, contact: { ids: [1], related: [] } }, 'relevance'),
        null,
      );
      assert.ok(indexQueryOf({ ...noCriteria, text: { words: ['bar'], mode: 'substring' } }, 'relevance'));
    });
  });
}
