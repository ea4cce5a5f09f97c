import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { mergedNdjson } from '../../../test/helpers/osm.ts';
import { type App, buildApp } from '../../app.ts';
import { loadConfig } from '../../config.ts';
import { budgetChecks, rowBudgetStride } from '../../infra/db/time-budget.ts';

/**
 * Bounded work per search (src/modules/search/README.md, "Bounds"), on the real OpenStreetMap POIs of
 * ../shared/data: hostile queries answer 200 or 400 having examined a small part of the catalog (counted
 * by the time budget's row check, which runs on the rows every index gives: rows ≈ checks × stride), the
 * typo candidates are capped and the cap is reported, and a search past its time budget answers 503.
 */

let t: TestApp;
let user: TestAccount;
let places: number;
/** The places a search without include_closed finds: the extract has places marked disused or vacant. */
let openPlaces: number;
const world = 'bbox=-180,-90,180,90';

interface Answer {
  status: number;
  body: Record<string, unknown> & {
    total?: number;
    resolved?: { typos?: { tolerated: boolean; reason?: string; candidate_limit: number } };
    errors?: Array<{ field: string }>;
  };
  type: string;
  /** Rows the search's SQL examined, to within one stride. */
  rows: number;
}

async function ask(app: App, url: string, body?: unknown): Promise<Answer> {
  const before = budgetChecks();
  const res = await app.inject({
    method: body === undefined ? 'GET' : 'POST',
    url,
    headers: { authorization: user.authorization },
    ...(body === undefined ? {} : { payload: body as object }),
  });
  return {
    status: res.statusCode,
    body: res.json(),
    type: String(res.headers['content-type']),
    rows: (budgetChecks() - before) * rowBudgetStride,
  };
}

const search = (query: string) => `/api/v2/map/search?${query}`;

before(async () => {
  // Reads inline (no threads), so that the row checks are counted in this thread; no read cache, so each search runs.
  // SQL answers every search (the in-memory index answers a box without reading a row): these are the SQL path's
  // bounds, which still answers until the index is built and whatever the index does not hold.
  t = await buildTestApp({ files: [mergedNdjson], env: { DB_READ_WORKERS: '0', READ_CACHE_ENTRIES: '0', SEARCH_ENGINE: 'sql' } });
  user = await createAccountWithToken(t.db);
  places = Number(
    (
      await t.db.kysely
        .selectFrom('places')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
  openPlaces = Number(
    (
      await t.db.kysely
        .selectFrom('places')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('closed_at', 'is', null)
        .executeTakeFirstOrThrow()
    ).n,
  );
});
after(async () => t.close());

describe('hostile searches do bounded work', () => {
  test('the catalog is big enough for a scan to show', () => {
    assert.ok(places > 10_000, `${places} places`);
  });

  test('counting rows would show a scan: a world bbox alone reads every place', async () => {
    const a = await ask(t.app, search(`${world}&per_page=1`));
    assert.equal(a.status, 200);
    assert.equal(a.body.total, openPlaces);
    assert.ok(a.rows >= places * 0.9, `${a.rows} rows examined of ${places}`);
  });

  test('a nonsense word over a world-sized bbox: the text index leads, the box is checked on its few rows', async () => {
    const a = await ask(t.app, search(`query=Qxzvkwplmtr&${world}`));
    assert.equal(a.status, 200);
    assert.equal(a.body.total, 0);
    // Typos were tried: the word's pieces are in the text index.
    assert.equal(a.body.resolved?.typos?.tolerated, true);
    assert.ok(a.rows < places / 20, `${a.rows} rows examined of ${places}`);
  });

  test('a short nonsense word over a world-sized bbox: typos are not tolerated (they would mean checking every place), and it says why', async () => {
    const a = await ask(t.app, search(`query=Qxzvk&${world}`));
    assert.equal(a.status, 200);
    assert.equal(a.body.total, 0);
    assert.deepEqual(a.body.resolved?.typos, { tolerated: false, reason: 'not_narrowed', candidate_limit: 10_000 });
    assert.ok(a.rows < places / 20, `${a.rows} rows examined of ${places}`);
  });

  test('a typo with no city finds the place from the text index alone', async () => {
    const a = await ask(t.app, '/v1/search', { query: 'Ratskeler' });
    assert.equal(a.status, 200);
    assert.ok((a.body.total ?? 0) >= 1);
    assert.ok((a.body.data as Array<{ name: string }>).some((p) => /ratskeller/i.test(p.name)));
    assert.equal(a.body.resolved?.typos?.tolerated, true);
    assert.ok(a.rows < places / 4, `${a.rows} rows examined of ${places}`);
  });

  for (const query of ['.-.-.-', '%%%_', `'"`, '   ', '!?!?!?', '___']) {
    test(`a query without a letter or digit (${JSON.stringify(query)}) is a 400 naming query, with nothing read`, async () => {
      const a = await ask(t.app, search(`query=${encodeURIComponent(query)}`));
      assert.equal(a.status, 400);
      assert.match(a.type, /^application\/problem\+json/);
      assert.deepEqual(
        a.body.errors?.map((e) => e.field),
        ['querystring.query'],
      );
      assert.equal(a.rows, 0);
    });
  }

  for (const query of [
    'a b c d e',
    'a a a a a a a a',
    'a'.repeat(200),
    'x'.repeat(200),
    'ab'.repeat(100),
    '1 2 3 4 5 6 7 8 9',
    'a.b.c.d.e.f',
  ]) {
    test(`a query of one-letter pieces or one letter repeated (${JSON.stringify(query.slice(0, 24))}) answers 200 having examined few rows`, async () => {
      for (const url of [search(`query=${encodeURIComponent(query)}`), search(`query=${encodeURIComponent(query)}&${world}`)]) {
        const a = await ask(t.app, url);
        assert.equal(a.status, 200, JSON.stringify(a.body));
        assert.ok(a.rows < places / 4, `${url}: ${a.rows} rows examined of ${places}`);
      }
    });
  }
});

describe('the typo candidates are capped, and the cap is reported', () => {
  let capped: App;
  before(async () => {
    capped = await buildApp({
      config: loadConfig({
        DATABASE_URL: t.url,
        LOG_LEVEL: 'silent',
        IMPORT_DEMO_DATA: 'false',
        DB_READ_WORKERS: '0',
        READ_CACHE_ENTRIES: '0',
        SEARCH_TYPO_CANDIDATES: '20',
      }),
      db: t.db,
    });
  });
  after(async () => capped.close());

  test('more candidates than SEARCH_TYPO_CANDIDATES: no typo tolerated, resolved.typos says so, and fewer rows listed', async () => {
    // A 5-letter word: its candidates are the places of the city (its pieces are too short for the text index).
    // Two words of the same shape, so that neither search finds the other's exact count cached.
    const url = (word: string) => search(`query=${word}&city=${encodeURIComponent('München')}`);
    const a = await ask(capped, url('Qxzvk'));
    assert.equal(a.status, 200);
    assert.equal(a.body.total, 0);
    assert.deepEqual(a.body.resolved?.typos, { tolerated: false, reason: 'too_many_candidates', candidate_limit: 20 });
    // Under the default cap the same search lists and checks every place of the city.
    const uncapped = await ask(t.app, url('Qxzvj'));
    assert.equal(uncapped.body.resolved?.typos?.tolerated, true);
    assert.ok(a.rows + 1000 < uncapped.rows, `${a.rows} rows examined capped, ${uncapped.rows} not`);
  });

  test('a common typo with no city is cut at the cap in the text index itself', async () => {
    const a = await ask(capped, '/v1/search', { query: 'Restaurqnt' });
    assert.equal(a.status, 200);
    assert.deepEqual(a.body.resolved?.typos, { tolerated: false, reason: 'too_many_candidates', candidate_limit: 20 });
    assert.ok(a.rows <= 4 * rowBudgetStride, `${a.rows} rows examined`);
  });
});

describe('a search past its time budget', () => {
  let hurried: App;
  before(async () => {
    // One read thread, a budget no search over this catalog fits in.
    hurried = await buildApp({
      config: loadConfig({
        DATABASE_URL: t.url,
        LOG_LEVEL: 'silent',
        IMPORT_DEMO_DATA: 'false',
        DB_READ_WORKERS: '1',
        READ_CACHE_ENTRIES: '0',
        SEARCH_TIME_BUDGET_MS: '1',
      }),
      db: t.db,
    });
  });
  after(async () => hurried.close());

  test('answers 503 problem+json time_budget_exceeded with Retry-After, again and again, and the server goes on serving', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await hurried.inject({
        method: 'GET',
        url: search(`${world}&sort=name`),
        headers: { authorization: user.authorization },
      });
      assert.equal(res.statusCode, 503, res.body);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      assert.equal(res.headers['retry-after'], '1');
      const problem = res.json() as { code: string; detail: string; status: number };
      assert.equal(problem.code, 'time_budget_exceeded');
      assert.equal(problem.status, 503);
      assert.match(problem.detail, /time budget/);
    }
    assert.equal((await hurried.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
    const usage = await hurried.inject({ method: 'GET', url: '/api/v1/user-api/usage', headers: { authorization: user.authorization } });
    assert.equal(usage.statusCode, 200);
    // The same search on a server with the default budget answers in full.
    const full = await ask(t.app, search(`${world}&sort=name&per_page=1`));
    assert.equal(full.status, 200);
    assert.equal(full.body.total, openPlaces);
  });
});
