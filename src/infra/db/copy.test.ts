import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { copyTestSqlite, dialects, openTestPostgres, type TestDatabase } from '../../../test/helpers/databases.ts';
import { munichExtract } from '../../../test/helpers/exports.ts';
import { type App, buildApp } from '../../app.ts';
import { loadConfig } from '../../config.ts';
import { CopyMismatch, copiedTables, copyDatabase, notCopiedTables, tablesOf } from './copy.ts';
import type { Db } from './database.ts';

/** Tables of a migrated database, without the storage of SQLite's full-text index (part of places_fts). */
async function migratedTables(db: Db): Promise<string[]> {
  return (await tablesOf(db)()).filter((n) => !/^places_fts(_|$)/.test(n) && !n.startsWith('sqlite_')).sort();
}

for (const dialect of dialects) {
  test(`every table of a migrated ${dialect.name} database is either copied or deliberately left to the target`, async () => {
    const t = await dialect.open('prepared');
    try {
      const listed = [...copiedTables.map((c) => c.name), ...notCopiedTables].sort();
      assert.deepEqual(await migratedTables(t.db), listed);
    } finally {
      await t.dispose();
    }
  });
}

describe('leadatlas db copy from SQLite to PostgreSQL', () => {
  let source: TestApp;
  let account: TestAccount;
  let target: TestDatabase;
  let copy: App;
  let searchCursor: string;

  const get = (app: App, url: string) => app.inject({ method: 'GET', url, headers: { authorization: account.authorization } });

  before(async () => {
    // A real installation: the Munich extract, an account with a token, saved searches, an export and its leads, usage.
    source = await buildTestApp({ files: [munichExtract] });
    account = await createAccountWithToken(source.db, { scopes: ['search', 'export', 'places:read'] });
    const first = (await get(source.app, '/api/v2/map/search?type=restaurant&city=M%C3%BCnchen&per_page=5')).json() as {
      search_id: string;
      links: { next: string };
    };
    searchCursor = new URL(first.links.next, 'http://x').searchParams.get('cursor')!;
    const cafes = (await get(source.app, '/api/v2/map/search?type=cafe&city=M%C3%BCnchen&per_page=5')).json() as { search_id: string };
    assert.equal((await get(source.app, `/api/v2/map/export?search_id=${cafes.search_id}&format=csv`)).statusCode, 200);
    await source.app.usage.flush();
    target = await openTestPostgres('prepared');
  });
  after(async () => {
    await copy?.close();
    await target?.dispose();
    await source?.close();
  });

  test('a copy cut short resumes where it stopped, and the result matches the source table by table', async () => {
    let seen = 0;
    await assert.rejects(
      copyDatabase(source.db, target.db, {
        batchSize: 500,
        onProgress: (table, done) => {
          if (table === 'places' && done > 0 && ++seen === 2) throw new Error('connection lost');
        },
      }),
      /connection lost/,
    );
    const places = await target.db.kysely
      .selectFrom('places')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    assert.ok(Number(places.n) > 0 && Number(places.n) % 500 === 0, `${places.n} places copied before the cut, whole batches`);

    const report = await copyDatabase(source.db, target.db, { batchSize: 500 });
    const byTable = new Map(report.map((r) => [r.table, r]));
    assert.equal(byTable.get('places')!.resumedAt, Number(places.n));
    assert.ok(byTable.get('places')!.rows > 2000);
    assert.ok(byTable.get('leads')!.rows > 0 && byTable.get('api_tokens')!.rows === 1 && byTable.get('usage_daily')!.rows > 0);
    for (const r of report) assert.match(r.checksum, /^[0-9a-f]{64}$/);
  });

  test('the copy answers the same API requests identically, with the same token', async () => {
    copy = await buildApp({
      config: loadConfig({ DATABASE_URL: 'postgres://copy', LOG_LEVEL: 'silent', IMPORT_DEMO_DATA: 'false' }),
      db: target.db,
    });
    const same = async (url: string, pick: (body: Record<string, unknown>) => unknown = (b) => b) => {
      const [a, b] = await Promise.all([get(source.app, url), get(copy, url)]);
      assert.equal(b.statusCode, a.statusCode, url);
      assert.deepEqual(pick(b.json()), pick(a.json()), url);
    };
    await same('/api/v1/user-api/places?per_page=100');
    await same('/api/v1/user-api/categories');
    await same('/api/v2/countries');
    // A saved search made before the copy pages on in the copy.
    await same(`/api/v2/map/search?cursor=${encodeURIComponent(searchCursor)}&per_page=5`, (b) => ({ total: b.total, data: b.data }));
    await same('/api/v2/map/search?type=restaurant&city=M%C3%BCnchen&sort=rating&per_page=20', (b) => ({
      total: b.total,
      data: b.data,
      resolved: b.resolved,
    }));
    // New ids after the copied ones: the sequences moved past them.
    const account2 = await createAccountWithToken(target.db);
    assert.ok(account2.accountId > account.accountId);
  });

  test('copied back from PostgreSQL into SQLite, the places get their search text again: full-text searches answer as in the source', async () => {
    // The copy's app counted the requests above as usage; written now, not by its timer during the copy back
    // (a source that changes under a copy is refused by the copy's checksums).
    await copy.usage.flush();
    const back = await copyTestSqlite('prepared');
    const backApp = await (async () => {
      await copyDatabase(target.db, back.db);
      return buildApp({ config: loadConfig({ DATABASE_URL: back.url, LOG_LEVEL: 'silent', IMPORT_DEMO_DATA: 'false' }), db: back.db });
    })();
    try {
      for (const url of [
        '/api/v2/map/search?query=biergarten&per_page=20',
        '/api/v2/map/search?query=m%C3%BCnchner&city=M%C3%BCnchen&per_page=20',
      ]) {
        const [a, b] = await Promise.all([get(source.app, url), get(backApp, url)]);
        const page = (r: typeof a) => {
          const body = r.json() as { total: number; data: Array<{ id: string }> };
          return { status: r.statusCode, total: body.total, ids: body.data.map((p) => p.id) };
        };
        assert.ok(page(a).total > 0, url);
        assert.deepEqual(page(b), page(a), url);
      }
      const stale = back.db
        .sqlite!.prepare(
          "SELECT count(*) FROM places WHERE search_document IS NULL OR (city_source = 'address_unmatched' AND city_fold IS NULL)",
        )
        .pluck()
        .get();
      assert.equal(stale, 0);
    } finally {
      await backApp.close();
      await back.dispose();
    }
  });

  test('a target that already held other rows fails the check, naming the table', async () => {
    const other = await copyTestSqlite('prepared');
    try {
      await sql`INSERT INTO accounts (email, email_norm, password_hash, created_at, password_changed_at) VALUES ('x@example.com', 'x@example.com', 'x', '2026-01-01', '2026-01-01')`.execute(
        other.db.kysely,
      );
      await assert.rejects(copyDatabase(source.db, other.db), (e: unknown) => e instanceof CopyMismatch && /^accounts:/.test(e.message));
    } finally {
      await other.dispose();
    }
  });
});
