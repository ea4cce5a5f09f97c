import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { importFiles } from '../../src/bootstrap.ts';
import { loadGazetteer } from '../../src/modules/geo/gazetteer.ts';
import { recentSearches } from '../../src/modules/search/saved-searches.ts';
import { loadCategoryIndex } from '../../src/modules/taxonomy/taxonomy.ts';
import { createAccountWithToken, type TestAccount } from '../helpers/accounts.ts';
import { freePort, spawnCli } from '../helpers/cli.ts';
import { dialects, openTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { munichExtract } from '../helpers/exports.ts';
import { libraryOpenAt, type OpenSearchScope, tomorrowAt18 } from '../helpers/opening-hours.ts';

const monacoExtract = new URL('../../../shared/data/osm/monaco-2026.osm.pbf', import.meta.url).pathname;

/**
 * Issue 37's case as it was found: `leadatlas serve` on a database imported while no server ran, asked at once for
 * the restaurants of Munich open tomorrow at 18:00. Before the fix it answered 200 with total 0 (and saved that
 * search) until the opening-hours pass was done. Now every answer is the library's own count or 503 `not_ready`
 * with Retry-After, and nothing is saved with a false total; the same right after an import into the running
 * server. No pass runs in the background (the test helper's OPENING_HOURS_CHECK_MS=0): what the requests need
 * they start themselves.
 */
// SQLite only: the serve path is the same on both; open-filter.test.ts runs the same rules in process on both dialects.
for (const { name: dialect } of dialects.filter((d) => d.name === 'sqlite'))
  describe(`an open search right after serve starts or an import lands is never 200 with a false total (${dialect})`, () => {
    let database: TestDatabase & { url: string };
    let account: TestAccount;
    let server: ChildProcess | undefined;
    let base = '';
    const at = tomorrowAt18();
    const restaurants = () => loadCategoryIndex().subtree('restaurant');
    const want = (scope: OpenSearchScope) => libraryOpenAt(database.db, scope, { localMs: Date.parse(`${at}:00Z`) });

    before(async () => {
      // A copy of the migrated database with the reference data, as prepareDatabase leaves it (templates.ts).
      database = await openTestDatabase(dialect, 'prepared');
      await importFiles(database.db, [munichExtract]);
      account = await createAccountWithToken(database.db, { scopes: ['search'] });
      const port = await freePort();
      server = spawnCli(
        ['serve'],
        {
          DATABASE_URL: database.url,
          HOST: '127.0.0.1',
          PORT: String(port),
          IMPORT_DEMO_DATA: 'false',
          DB_READ_WORKERS: '1',
          OPENING_HOURS_WINDOW_DAYS: '2',
        },
        ['ignore', 'ignore', 'pipe'],
      );
      let stderr = '';
      server.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
      base = `http://127.0.0.1:${port}`;
      for (const deadline = Date.now() + 120_000; ; await sleep(50)) {
        if (server.exitCode !== null) assert.fail(`serve exited with ${server.exitCode}: ${stderr}`);
        if (
          await fetch(`${base}/healthz`).then(
            (r) => r.ok,
            () => false,
          )
        )
          break;
        assert.ok(Date.now() < deadline, 'serve answers /healthz');
      }
    });

    after(async () => {
      server?.kill('SIGKILL');
      await database?.dispose();
    });

    /** Asks until the answer is 200; each 503 must be `not_ready` with Retry-After. Answers the totals of the 200. */
    async function untilAnswered(path: string, init: RequestInit = {}): Promise<{ total: number; refusals: number }> {
      for (let refusals = 0; ; refusals++) {
        const res = await fetch(`${base}${path}`, {
          ...init,
          headers: { authorization: account.authorization, 'content-type': 'application/json' },
        });
        const body = (await res.json()) as { total: number; code?: string; preparing?: string };
        if (res.status === 200) return { total: body.total, refusals };
        assert.equal(res.status, 503, JSON.stringify(body));
        assert.deepEqual([body.code, body.preparing], ['not_ready', 'opening_hours']);
        const retryAfter = Number(res.headers.get('retry-after'));
        assert.ok(retryAfter >= 1, 'Retry-After in seconds');
        assert.ok(refusals < 30, 'answered once the pass is done');
        await sleep(Math.min(retryAfter, 2) * 1000);
      }
    }

    test('the first open searches and facets after start answer the library’s count or 503 not_ready, and are saved only with it', async () => {
      const open = `type=restaurant&city=M%C3%BCnchen&open_at=${at}`;
      const [map, quick, facets] = await Promise.all([
        untilAnswered(`/api/v2/map/search?${open}`),
        untilAnswered('/v1/search', { method: 'POST', body: JSON.stringify({ type: 'restaurant', city: 'München', open_at: at }) }),
        untilAnswered(`/api/v2/map/facets?${open}&by=category`),
      ]);
      const expected = await want({ cityId: loadGazetteer().resolveCity('München', 'DE').chosen!.id, categories: restaurants() });
      assert.ok(expected.open.size > 100, `restaurants open tomorrow at 18:00: ${expected.open.size}`);
      assert.deepEqual([map.total, quick.total, facets.total], [expected.open.size, expected.open.size, expected.open.size]);
      const saved = await recentSearches(database.db, account.accountId, 10);
      assert.deepEqual(
        saved.map((s) => s.total),
        [expected.open.size],
        'only the answered search is saved, with its true total',
      );
    });

    test('an import into the running server is searched at once with its places open, or 503 until its pass is done', async () => {
      await importFiles(database.db, [monacoExtract]);
      const answered = await untilAnswered(`/api/v2/map/search?type=restaurant&country=MC&open_at=${at}`);
      const expected = await want({ countryCode: 'MC', categories: restaurants() });
      assert.ok(expected.open.size > 0, `Monaco's restaurants open tomorrow at 18:00: ${expected.open.size}`);
      assert.equal(answered.total, expected.open.size);
      assert.ok(
        (await recentSearches(database.db, account.accountId, 10)).every((s) => s.total > 0),
        'no search saved with a false zero',
      );
    });
  });
