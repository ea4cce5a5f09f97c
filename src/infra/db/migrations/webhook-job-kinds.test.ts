import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Kysely, Migrator, sql } from 'kysely';
import { dialects, type TestDatabase } from '../../../../test/helpers/databases.ts';
import { migrations } from './index.ts';

/** Migration 0029 on a database that already has export jobs, webhook deliveries and their attempts. */
for (const dialect of dialects)
  describe(`migration 0029 on existing webhook deliveries (${dialect.name})`, () => {
    let t: TestDatabase;
    let k: Kysely<any>;

    before(async () => {
      t = await dialect.open();
      k = t.db.kysely as unknown as Kysely<any>;
      const schema =
        dialect.name === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(k)).rows[0]!.s : undefined;
      const migrator = new Migrator({
        db: k,
        provider: { getMigrations: async () => migrations },
        ...(schema ? { migrationTableSchema: schema } : {}),
      });
      assert.equal((await migrator.migrateTo('0027_stored_search_text')).error, undefined);
      const at = '2026-11-01T00:00:00.000Z';
      await k
        .insertInto('accounts')
        .values({ id: 1, email: 'a@b.c', email_norm: 'a@b.c', password_hash: 'x', created_at: at, password_changed_at: at })
        .execute();
      await k
        .insertInto('export_jobs')
        .values({ id: 7, public_id: 'job_a', account_id: 1, search_id: 's', format: 'csv', status: 'succeeded', created_at: at })
        .execute();
      await k
        .insertInto('webhook_deliveries')
        .values({
          id: 3,
          public_id: 'whd_a',
          account_id: 1,
          job_id: 7,
          url: 'https://example.com/h',
          event: 'export_job.succeeded',
          body: '{}',
          status: 'pending',
          attempts: 1,
          next_attempt_at: at,
          created_at: at,
        })
        .execute();
      await k
        .insertInto('webhook_attempts')
        .values({ delivery_id: 3, attempt: 1, at, response_status: 500, outcome: 'http_error', duration_ms: 12 })
        .execute();
      assert.equal((await migrator.migrateToLatest()).error, undefined);
    });
    after(async () => t?.dispose());

    test('keeps every delivery and attempt, the old ones as export jobs’ deliveries', async () => {
      const deliveries = await k.selectFrom('webhook_deliveries').select(['id', 'public_id', 'job_kind', 'job_id', 'attempts']).execute();
      assert.deepEqual(
        deliveries.map((d) => [Number(d.id), d.public_id, d.job_kind, Number(d.job_id), Number(d.attempts)]),
        [[3, 'whd_a', 'export_job', 7, 1]],
      );
      const attempts = await k.selectFrom('webhook_attempts').select(['delivery_id', 'outcome']).execute();
      assert.deepEqual(
        attempts.map((a) => [Number(a.delivery_id), a.outcome]),
        [[3, 'http_error']],
      );
    });

    test('takes deliveries of other kinds of job (no foreign key to export_jobs), and an account’s deletion still removes them with their attempts', async () => {
      const at = '2026-11-02T00:00:00.000Z';
      await k
        .insertInto('webhook_deliveries')
        .values({
          public_id: 'whd_b',
          account_id: 1,
          job_kind: 'enrichment_job',
          job_id: 999,
          url: 'https://example.com/h',
          event: 'enrichment_job.succeeded',
          body: '{}',
          status: 'pending',
          created_at: at,
        })
        .execute();
      if (dialect.name === 'sqlite') assert.equal(t.db.sqlite!.pragma('foreign_keys', { simple: true }), 1, 'foreign keys are on again');
      await k.deleteFrom('accounts').where('id', '=', 1).execute();
      assert.equal((await k.selectFrom('webhook_deliveries').selectAll().execute()).length, 0);
      assert.equal((await k.selectFrom('webhook_attempts').selectAll().execute()).length, 0, 'attempts follow their delivery');
    });
  });
