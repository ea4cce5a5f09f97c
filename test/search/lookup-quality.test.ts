import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildLookupSet, type KindScore, scoreLookupSet } from '../../bench/lib/lookup-set.ts';
import { type App, buildApp } from '../../src/app.ts';
import { importFiles } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';
import { createAccountWithToken } from '../helpers/accounts.ts';
import { copyTestSqlite, type TestSqlite } from '../helpers/databases.ts';

/**
 * The CI-sized sample of `npm run bench:lookup-quality` (bench/lookup-quality.ts asks the whole held-out set): two
 * real files of different kinds (an OSM extract in German, Overture's freeform US addresses), their
 * places whose phone, domain, email or address no other place carries, asked through `/v1/search?query=` as people
 * type them. Fails below the target, MRR@10 0.95 for each kind.
 */
const files = ['osm/munich-center-2020.osm.pbf', 'places/overture-places-boulder-3545.ndjson.gz'].map((f) =>
  fileURLToPath(new URL(`../../../shared/data/${f}`, import.meta.url)),
);
const PER_KIND = 30;
const TARGET = 0.95;

let t: TestSqlite;
let app: App;
let scores: KindScore[];

before(async () => {
  t = await copyTestSqlite('prepared');
  await importFiles(t.db, files);
  app = await buildApp({
    config: loadConfig({
      DATABASE_URL: t.url,
      LOG_LEVEL: 'silent',
      DB_READ_WORKERS: '1',
      IMPORT_DEMO_DATA: 'false',
      RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000',
      QUOTA_REQUESTS_PER_DAY: '1000000000',
    }),
    db: t.db,
  });
  await app.ready();
  const { authorization } = await createAccountWithToken(t.db, { scopes: ['search'] });
  scores = await scoreLookupSet(app, authorization, await buildLookupSet(t.db, PER_KIND));
});

after(async () => {
  await app?.close();
  await t?.dispose();
});

describe('finding a place by what is known of it, on a sample of the real data', () => {
  test('asks every kind of contact', () => {
    for (const s of scores) assert.ok(s.cases >= 15, `${s.kind}: ${s.cases} cases`);
  });

  for (const kind of ['phone', 'domain', 'email', 'address'] as const)
    test(`${kind}: MRR@10 at least ${TARGET}`, () => {
      const s = scores.find((x) => x.kind === kind)!;
      const misses = s.misses.map((m) => `${m.variant} ${m.source}: ${m.query} → ${m.rank ?? 'not in the top 10'}`);
      assert.ok(s.mrr >= TARGET, `${kind} MRR@10 ${s.mrr.toFixed(3)} over ${s.cases} cases; misses:\n${misses.join('\n')}`);
    });
});
