import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { isDiskFull } from '../storage.ts';
import { openDatabase } from './database.ts';

test('a transaction SQLite rolled back by itself on a full database fails with SQLITE_FULL, not with the ROLLBACK that follows', async () => {
  const db = openDatabase('sqlite::memory:');
  try {
    await sql`CREATE TABLE t (x TEXT)`.execute(db.kysely);
    // A database allowed three pages is full after a few rows: SQLite answers SQLITE_FULL and ends the transaction.
    db.sqlite!.pragma('max_page_count = 3');
    const failed = await db.kysely
      .transaction()
      .execute(async (trx) => {
        for (let i = 0; i < 100; i++) await sql`INSERT INTO t VALUES (${'x'.repeat(3000)})`.execute(trx);
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    assert.equal((failed as { code?: string }).code, 'SQLITE_FULL', String(failed));
    assert.ok(isDiskFull(failed));
    assert.equal(db.sqlite!.inTransaction, false);
    // An ordinary failure inside a transaction is still rolled back by Kysely.
    db.sqlite!.pragma('max_page_count = 1000');
    await assert.rejects(
      db.kysely.transaction().execute(async (trx) => {
        await sql`INSERT INTO t VALUES ('kept only if committed')`.execute(trx);
        throw new Error('the caller gave up');
      }),
      /the caller gave up/,
    );
    assert.equal(db.sqlite!.inTransaction, false);
    const rows = await sql<{ n: number }>`SELECT count(*) AS n FROM t`.execute(db.kysely);
    assert.equal(rows.rows[0]!.n, 0);
  } finally {
    await db.close();
  }
});
