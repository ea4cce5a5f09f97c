import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { namedPlaces, type RunResult, reasons, runSelfRetrieval, type Share, tally } from '../../bench/lib/self-retrieval.ts';
import { type App, buildApp } from '../../src/app.ts';
import { importFiles } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';
import { loadGazetteer } from '../../src/modules/geo/gazetteer.ts';
import { createAccountWithToken } from '../helpers/accounts.ts';
import { copyTestSqlite, type openTestSqlite } from '../helpers/databases.ts';

/**
 * The CI-sized sample of `npm run bench:self-retrieval` (bench/self-retrieval.ts runs every record): four
 * real files of different kinds (an OSM extract in German, one in Japanese, the Michelin guide's villages and
 * namesake cities, Yelp's US townships), a deterministic sample of their named places, each searched by its
 * own name and city and with one typo on both search routes. Floors below the full run's figures
 * (bench/RESULTS.md), so that a change that loses places fails the build.
 */
const files = [
  'osm/munich-center-2020.osm.pbf',
  'osm/tokyo-center.osm.pbf',
  'places/michelin-guide-2022-6510.csv.gz',
  'ratings/yelp-open-dataset-business-sample5000.ndjson.gz',
].map((f) => fileURLToPath(new URL(`../../../shared/data/${f}`, import.meta.url)));
const SAMPLE = 400;
const floors = { exact: 0.99, typo: 0.97 };

/** The sample sends thousands of searches with one token: the rate limit and the daily quota are not what is measured. */
const unmetered = { RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000', QUOTA_REQUESTS_PER_DAY: '1000000000' };

let t: ReturnType<typeof openTestSqlite>;
let app: App;
let result: RunResult;

before(async () => {
  t = await copyTestSqlite('prepared');
  await importFiles(t.db, files);
  app = await buildApp({
    config: loadConfig({ DATABASE_URL: t.url, LOG_LEVEL: 'silent', DB_READ_WORKERS: '1', IMPORT_DEMO_DATA: 'false', ...unmetered }),
    db: t.db,
  });
  const { authorization } = await createAccountWithToken(t.db, { scopes: ['search'] });
  const all = await namedPlaces(t.db);
  const step = Math.floor(all.length / SAMPLE);
  const gazetteer = loadGazetteer();
  result = await runSelfRetrieval(
    all.filter((_, i) => i % step === 0),
    {
      app,
      authorization,
      seed: 'ci',
      catalog: all,
      sameNamedCities: (city) => {
        const r = gazetteer.resolveCity(city);
        return [...(r.chosen ? [r.chosen] : []), ...r.alternatives].map((c) => c.id);
      },
    },
  );
});

after(async () => {
  await app.close();
  await t.dispose();
});

const rate = (s: Share) => s.found / s.of;
const misses = (variant: 'exact' | 'typo') =>
  result.misses
    .filter((m) => m.variant === variant)
    .map((m) => `${m.place.source} ${m.endpoint}: ${m.query} | ${m.place.city} → ${m.reason}`);

describe('self-retrieval on a sample of the real data', () => {
  test('asks a sample of every file, with a city for each place', () => {
    const sources = new Set(result.outcomes.map((o) => o.place.source));
    assert.deepEqual([...sources].sort(), ['michelin', 'osm', 'yelp-open']);
    assert.ok(result.outcomes.length >= SAMPLE * 0.95, `${result.outcomes.length} places asked`);
    assert.ok(result.outcomes.filter((o) => o.typo).length > SAMPLE * 0.7, 'most names have a word of five letters for a typo');
    assert.equal(result.withoutCity.length, 0);
  });

  test(`finds at least ${floors.exact * 100} % of the places by their exact name and city, on both routes`, () => {
    const all = tally(result.outcomes, (o) => o.place.source).get('all')!;
    for (const e of ['v1', 'map'] as const)
      assert.ok(rate(all.exact[e]) >= floors.exact, `${e}: ${all.exact[e].found} of ${all.exact[e].of}\n${misses('exact').join('\n')}`);
  });

  test(`finds at least ${floors.typo * 100} % of them with one typo in a word of five letters or more`, () => {
    const all = tally(result.outcomes, (o) => o.place.source).get('all')!;
    for (const e of ['v1', 'map'] as const)
      assert.ok(rate(all.typo[e]) >= floors.typo, `${e}: ${all.typo[e].found} of ${all.typo[e].of}\n${misses('typo').join('\n')}`);
  });

  test('loses no place to a city it cannot resolve or to letters, short words and scripts it cannot match', () => {
    const textOrCity = reasons(result.misses).filter((r) => /city not resolved|folding|short word|tokenisation/.test(r.reason));
    assert.deepEqual(textOrCity, []);
  });
});
