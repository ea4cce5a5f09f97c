/**
 * The in-memory search engine (src/modules/search/engine/) against the SQL path, in the same run, on a
 * resampled catalog (bench/lib/catalog.ts, SQLite):
 * - distinct type+city searches (every pair of the catalog's most common categories and cities, each asked
 *   once, so no cache helps): the time inside the index (bitmaps only), the engine's whole answer (index +
 *   reading the page's 20 rows), and SQL's (count + page, the read pool run inline, its cache off);
 * - distinct full-text queries, through the index and through SQL (FTS5);
 * - the index's size per place (its text part included) and its build time;
 * - a change of 100,000 places (their review counts, so each moves in the order) reaching the index through
 *   the change log, without a rebuild.
 *
 *   npm run bench:search-engine -- --size 100000 [--searches 2000]
 */
import { resolve } from 'node:path';
import { sql } from 'kysely';
import { openDatabase } from '../src/infra/db/database.ts';
import { migrateToLatest } from '../src/infra/db/migrate.ts';
import { createReadPool } from '../src/infra/db/read-pool.ts';
import { indexQueryOf, MemorySearchEngine, SqlSearchEngine } from '../src/modules/search/engine/search-engine.ts';
import { noCriteria, type PlaceCriteria } from '../src/modules/search/query/criteria.ts';
import { createReadTasks, readTasksModule } from '../src/modules/search/read-tasks.ts';
import { argValue } from './lib/args.ts';
import { buildCatalog } from './lib/catalog.ts';

const size = Number(argValue('--size', '100000'));
const wanted = Number(argValue('--searches', '2000'));
const root = resolve(import.meta.dirname, '..');
const log = (m: string) => console.error(m);

const catalog = await buildCatalog({ size, dir: resolve(root, 'var/bench'), dataDir: resolve(root, '../shared/data'), log });
const db = openDatabase(catalog.url);
await migrateToLatest(db);
// The trust pass's summary (issue 33) spread over the places by id, as `test/parity/trust-filters.test.ts` does,
// and the pass marked caught up: the trust filters' cost, not the pass's, is measured here.
await sql`UPDATE places SET
    email_status = CASE WHEN email IS NULL THEN NULL WHEN id % 4 = 0 THEN 'no_mx' WHEN id % 9 = 0 THEN 'unknown' ELSE 'valid_domain' END,
    email_confidence = CASE WHEN email IS NULL THEN NULL ELSE ((id * 7) % 101) * 0.01 END,
    phone_type = CASE WHEN phone IS NULL THEN NULL WHEN id % 3 = 0 THEN 'mobile' ELSE 'fixed_line' END,
    phone_confidence = CASE WHEN phone IS NULL THEN NULL ELSE ((id * 11) % 101) * 0.01 END,
    website_status = CASE WHEN website IS NULL THEN NULL WHEN id % 5 = 0 THEN 'dead' ELSE 'live' END,
    website_confidence = CASE WHEN website IS NULL THEN NULL ELSE ((id * 13) % 101) * 0.01 END,
    lead_score = ((id * 17) % 101) * 0.01`.execute(db.kysely);
await sql`DELETE FROM trust_state`.execute(db.kysely);
await sql`INSERT INTO trust_state (id, places_version, model_version, computed_at)
  SELECT 1, version, 'bench', '2026-01-01T00:00:00.000Z' FROM places_version WHERE id = 1`.execute(db.kysely);
const reads = createReadPool({ db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule });
const memory = new MemorySearchEngine({ db, reads }, 60_000);
const sqlEngine = new SqlSearchEngine({ db, reads });

const heapBefore = process.memoryUsage();
const buildStart = performance.now();
await memory.start();
const buildMs = performance.now() - buildStart;
const heapAfter = process.memoryUsage();
const state = memory.state();
const places = state.engine === 'memory' ? state.places : 0;
const indexBytes = memory.indexBytes();

const top = async (column: 'category' | 'city_id', n: number) =>
  (
    await sql<{ v: string | number }>`SELECT ${sql.ref(column)} AS v FROM places WHERE ${sql.ref(column)} IS NOT NULL AND closed_at IS NULL
      GROUP BY ${sql.ref(column)} ORDER BY count(*) DESC LIMIT ${n}`.execute(db.kysely)
  ).rows.map((r) => r.v);
const side = Math.ceil(Math.sqrt(wanted));
const categories = (await top('category', side)) as string[];
const cities = (await top('city_id', side)).map(Number);
const searches: PlaceCriteria[] = [];
for (const c of categories) for (const city of cities) searches.push({ ...noCriteria, categories: [c], cityId: city });
searches.length = Math.min(searches.length, wanted);

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const summary = (xs: number[]) => ({ p50: percentile(xs, 50), p99: percentile(xs, 99), mean: xs.reduce((a, b) => a + b, 0) / xs.length });

// Inside the index: evaluate + count + first page, no rows read.
const inIndex: number[] = [];
const index = (memory as unknown as { index: import('../src/modules/search/engine/bitmap-index.ts').BitmapIndex }).index;
for (const criteria of searches) {
  const q = indexQueryOf(criteria, 'relevance')!;
  const t0 = performance.now();
  const r = index.evaluate(q);
  void r.size;
  index.page(r, null, 21);
  r.dispose();
  inIndex.push(performance.now() - t0);
}
const engineWhole: number[] = [];
for (const criteria of searches) {
  const t0 = performance.now();
  await memory.searchPage(criteria, 'relevance', null, 20, 10_000);
  engineWhole.push(performance.now() - t0);
}
const sqlWhole: number[] = [];
for (const criteria of searches) {
  const t0 = performance.now();
  await sqlEngine.searchPage(criteria, 'relevance', null, 20, 10_000);
  sqlWhole.push(performance.now() - t0);
}
// A facet over a whole country: every city of the largest country for its most common category.
const [country] = (
  await sql<{
    v: string;
  }>`SELECT country_code AS v FROM places WHERE country_code IS NOT NULL GROUP BY country_code ORDER BY count(*) DESC LIMIT 1`.execute(
    db.kysely,
  )
).rows.map((r) => r.v);
const facetCriteria: PlaceCriteria = { ...searches[0]!, cityId: null, countryCode: country ?? null };
const facetMemory: number[] = [];
const facetSql: number[] = [];
for (let i = 0; i < 50; i++) {
  let t0 = performance.now();
  await memory.facets(facetCriteria, 'city');
  facetMemory.push(performance.now() - t0);
  t0 = performance.now();
  await sqlEngine.facets(facetCriteria, 'city');
  facetSql.push(performance.now() - t0);
}

// Full text (issue 35): distinct queries (words of five letters or more from real names, and two-word name starts),
// through the index and through SQL (SQLite FTS5), each asked once.
const nameRows = (await sql<{ name: string }>`SELECT name FROM places WHERE id % 53 = 0 ORDER BY id LIMIT 4000`.execute(db.kysely)).rows;
const textQueries = [
  ...new Set([
    ...nameRows.flatMap((r) => r.name.split(/[^\p{L}\p{N}]+/u)).filter((w) => w.length >= 5 && /^\p{L}+$/u.test(w)),
    ...nameRows.map((r) => r.name.split(/\s+/).slice(0, 2).join(' ')).filter((n) => /^[\p{L}'-]{3,} [\p{L}'-]{3,}$/u.test(n)),
  ]),
].slice(0, wanted);
const textMemory: number[] = [];
const textSql: number[] = [];
for (const query of textQueries) {
  const criteria: PlaceCriteria = { ...noCriteria, text: { words: query.split(' '), mode: 'substring' } };
  let t1 = performance.now();
  await memory.searchPage(criteria, 'relevance', null, 20, 10_000);
  textMemory.push(performance.now() - t1);
  t1 = performance.now();
  await sqlEngine.searchPage(criteria, 'relevance', null, 20, 10_000);
  textSql.push(performance.now() - t1);
}

// The trust filters against has_email on the same searches (issue 33's target: no more than 1.2× has_email).
const trustVariants: Array<[string, Partial<PlaceCriteria>]> = [
  ['has_email=true', { hasEmail: true }],
  ['has_email=true&min_confidence=0.8', { hasEmail: true, minConfidence: { value: 0.8, kinds: ['email'] } }],
  ['email_status=valid_domain', { emailStatus: 'valid_domain' }],
  ['phone_type=mobile&min_confidence=0.8', { phoneType: 'mobile', minConfidence: { value: 0.8, kinds: ['phone'] } }],
  ['website_status=live', { websiteStatus: 'live' }],
  ['min_lead_score=0.5', { minLeadScore: 0.5 }],
];
const trustTimes = new Map<string, { inIndex: number[]; engine: number[] }>(
  trustVariants.map(([name]) => [name, { inIndex: [], engine: [] }]),
);
// Interleaved search by search, so that a drifting host weighs on every variant alike.
for (const base of searches)
  for (const [name, extra] of trustVariants) {
    const criteria: PlaceCriteria = { ...base, ...extra };
    const times = trustTimes.get(name)!;
    const q = indexQueryOf(criteria, 'relevance')!;
    let t1 = performance.now();
    const r = index.evaluate(q);
    void r.size;
    index.page(r, null, 21);
    r.dispose();
    times.inIndex.push(performance.now() - t1);
    t1 = performance.now();
    await memory.searchPage(criteria, 'relevance', null, 20, 10_000);
    times.engine.push(performance.now() - t1);
  }

// A change of 100,000 places through the change log.
const changed = Math.min(100_000, places);
const t0 = performance.now();
await sql`UPDATE places SET review_count = coalesce(review_count, 0) + 1 WHERE id IN (SELECT id FROM places ORDER BY id LIMIT ${changed})`.execute(
  db.kysely,
);
const committed = performance.now();
await memory.catchUp();
const applied = performance.now();
const after = memory.state();
// Searches while the moved places are in the tail (merged by key into each page).
const withTail: number[] = [];
for (const criteria of searches) {
  const t0 = performance.now();
  await memory.searchPage(criteria, 'relevance', null, 20, 10_000);
  withTail.push(performance.now() - t0);
}
// The next round re-sorts what moved (a rebuild) when the tail outgrew its limit; the change was searchable before it.
await memory.catchUp();
const compacted = performance.now();
const afterCompaction = memory.state();

const round = (x: number) => Math.round(x * 1000) / 1000;
const fmt = (s: ReturnType<typeof summary>) => `p50 ${round(s.p50)} ms, p99 ${round(s.p99)} ms, mean ${round(s.mean)} ms`;
console.log(`catalog: ${catalog.rows} rows (${places} in the index), ${searches.length} distinct type+city searches`);
console.log(
  `index build: ${Math.round(buildMs)} ms; ${round(indexBytes / places)} bytes/place (bitmaps + arrays); heap +${Math.round((heapAfter.heapUsed - heapBefore.heapUsed) / 1e6)} MB, external +${Math.round((heapAfter.external + heapAfter.arrayBuffers - heapBefore.external - heapBefore.arrayBuffers) / 1e6)} MB`,
);
const textIndex = (index as unknown as { text: import('../src/modules/search/engine/text-index.ts').TextIndex }).text;
console.log(
  `of which full text: ${round(textIndex.bytes() / places)} bytes/place (documents, ${textIndex.trigrams} trigram bitmaps and their postings)`,
);
console.log(`inside the index (count + first page): ${fmt(summary(inIndex))}`);
console.log(`engine answer (index + 20 rows):       ${fmt(summary(engineWhole))}`);
console.log(`SQL answer (count + page):             ${fmt(summary(sqlWhole))}`);
console.log(
  `ratio SQL / engine at p99: ${round(summary(sqlWhole).p99 / summary(engineWhole).p99)}×, mean ${round(summary(sqlWhole).mean / summary(engineWhole).mean)}×`,
);
console.log(`full text, ${textQueries.length} distinct queries: engine ${fmt(summary(textMemory))}; SQL ${fmt(summary(textSql))}`);
console.log(`facet by city over ${country}: engine ${fmt(summary(facetMemory))}; SQL ${fmt(summary(facetSql))}`);
console.log(
  `change of ${changed} places: UPDATE committed in ${Math.round(committed - t0)} ms, searchable ${Math.round(applied - committed)} ms later (tail ${after.engine === 'memory' ? after.tail : 0}, rebuilt: ${after.engine === 'memory' && state.engine === 'memory' && after.builtMs !== state.builtMs}); next round: ${afterCompaction.engine === 'memory' && after.engine === 'memory' && afterCompaction.builtMs !== after.builtMs ? `rebuilt in ${Math.round(compacted - applied)} ms, tail ${afterCompaction.tail}` : 'no rebuild'}`,
);
console.log(`engine answer while the change is in the tail: ${fmt(summary(withTail))}`);
const baseline = trustTimes.get('has_email=true')!;
for (const [name] of trustVariants) {
  const t = trustTimes.get(name)!;
  const ratio = (xs: number[], ys: number[]) => (summary(xs).mean / summary(ys).mean).toFixed(2);
  console.log(
    `${name.padEnd(38)} inside the index ${fmt(summary(t.inIndex))} (mean ${ratio(t.inIndex, baseline.inIndex)}× has_email); engine answer ${fmt(summary(t.engine))} (mean ${ratio(t.engine, baseline.engine)}×)`,
  );
}
await memory.close();
await reads.close();
await db.close();
