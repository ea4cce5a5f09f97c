import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { importFiles } from '../../src/bootstrap.ts';
import { createReadPool, type ReadPool } from '../../src/infra/db/read-pool.ts';
import { placeContactKeys } from '../../src/modules/search/contact-keys.ts';
import { MemorySearchEngine, SqlSearchEngine } from '../../src/modules/search/engine/search-engine.ts';
import { type ApiReadTasks, createReadTasks, readTasksModule } from '../../src/modules/search/read-tasks.ts';
import { dialects, type TestDatabase } from '../helpers/databases.ts';

/**
 * The contact postings of the in-memory engine against SQL, on real data (an OpenStreetMap extract with phones,
 * websites, emails and street addresses; Overture's freeform addresses), on both dialects: every key any place
 * carries answers the same places from the index as from SQL, and the same places (by public id) on SQLite and
 * PostgreSQL; again after a change arrives through the change log.
 */
const data = new URL('../../../shared/data/', import.meta.url);
const files = ['osm/monaco-2026.osm.pbf', 'places/overture-places-boulder-3545.ndjson.gz'].map((f) => new URL(f, data).pathname);
/** SEARCH_PARITY_FULL=1: after the change, every key again, not a third of them. */
const full = process.env.SEARCH_PARITY_FULL === '1';

/** Per dialect: key → public ids of the places carrying it, as the index answers. */
const answers = new Map<string, Map<string, string[]>>();

for (const dialect of dialects)
  describe(`contact lookups, the index against SQL (${dialect.name})`, { timeout: 120_000 }, () => {
    let t: TestDatabase;
    let reads: ReadPool<ApiReadTasks>;
    let memory: MemorySearchEngine;
    let sqlEngine: SqlSearchEngine;

    before(async () => {
      t = await dialect.open('prepared');
      await importFiles(t.db, files);
      reads = createReadPool({ db: t.db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule });
      memory = new MemorySearchEngine({ db: t.db, reads }, 60_000);
      sqlEngine = new SqlSearchEngine({ db: t.db, reads });
      await memory.start();
    });

    after(async () => {
      await memory?.close();
      await sqlEngine?.close();
      await reads?.close();
      await t?.dispose();
    });

    /** Every key of every place (closed ones too: neither side may answer them), and a few nobody carries. */
    async function everyKey(): Promise<string[]> {
      const rows = await t.db.kysely
        .selectFrom('places')
        .select(['phone_e164', 'website_domain', 'email', 'street', 'housenumber'])
        .execute();
      const keys = new Set(rows.flatMap((r) => placeContactKeys({ ...r, found_phone: null, found_email: null })));
      return [...keys, 'p:+10000000000', 'd:nowhere.example', 'e:nobody@nowhere.example', 'a:nowhere|1'].sort();
    }

    /** Every key, or (given the keys a change touched) those keys and every third of the others. */
    async function compare(changed?: string[]): Promise<Map<string, string[]>> {
      const every = await everyKey();
      assert.ok(every.filter((k) => k.startsWith('a:')).length > 100, 'addresses to compare');
      assert.ok(every.filter((k) => k.startsWith('p:')).length > 50, 'phones to compare');
      const keys = changed === undefined || full ? every : [...new Set([...every.filter((_, i) => i % 3 === 0), ...changed])].sort();
      const out = new Map<string, string[]>();
      const publicIdOf = new Map(
        (await t.db.kysely.selectFrom('places').select(['id', 'public_id']).execute()).map((r) => [r.id, r.public_id]),
      );
      // In batches: SQL has no index on these columns, so each call is one scan of `places`.
      for (let i = 0; i < keys.length; i += 100) {
        const batch = keys.slice(i, i + 100);
        const [fromIndex, fromSql] = await Promise.all([memory.contactHits(batch), sqlEngine.contactHits(batch)]);
        const pairs = (hits: typeof fromIndex) => hits.map((h) => `${h.key} ${h.id}`).sort();
        assert.deepEqual(pairs(fromIndex), pairs(fromSql), `keys ${batch[0]} … ${batch.at(-1)}`);
        for (const key of batch)
          out.set(
            key,
            fromIndex
              .filter((h) => h.key === key)
              .map((h) => publicIdOf.get(h.id)!)
              .sort(),
          );
      }
      return out;
    }

    test('answers every key of the catalog as SQL does', async () => {
      answers.set(dialect.name, await compare());
    });

    test('follows a change: a new phone is found, the old one no longer, and a closed place is left out', async () => {
      const [place] = await t.db.kysely
        .selectFrom('places')
        .select(['id', 'phone_e164'])
        .where('phone_e164', 'is not', null)
        .limit(1)
        .execute();
      await sql`UPDATE places SET phone_e164 = '+37799999999' WHERE id = ${place!.id}`.execute(t.db.kysely);
      const [closing] = await t.db.kysely
        .selectFrom('places')
        .select(['id', 'website_domain'])
        .where('website_domain', 'is not', null)
        .limit(1)
        .execute();
      await sql`UPDATE places SET closed_at = '2026-01-01T00:00:00Z', closed_reason = 'closed' WHERE id = ${closing!.id}`.execute(
        t.db.kysely,
      );
      await memory.catchUp();
      assert.deepEqual(
        (await memory.contactHits(['p:+37799999999'])).map((h) => h.id),
        [place!.id],
      );
      assert.ok(!(await memory.contactHits([`p:${place!.phone_e164}`])).some((h) => h.id === place!.id));
      assert.ok(!(await memory.contactHits([`d:${closing!.website_domain}`])).some((h) => h.id === closing!.id));
      // Every key was compared before the change; after it, the keys it touched and a third of the others
      // (every kind of key, spread over the sorted list). SEARCH_PARITY_FULL=1 compares all.
      await compare(['p:+37799999999', `p:${place!.phone_e164}`, `d:${closing!.website_domain}`]);
    });
  });

describe('contact lookups on both dialects', () => {
  test('answer the same places for every key', (context) => {
    if (answers.size < 2) return context.skip('one dialect ran');
    const [a, b] = [...answers.values()];
    assert.deepEqual([...a!.keys()], [...b!.keys()]);
    for (const [key, ids] of a!) assert.deepEqual(b!.get(key), ids, key);
  });
});
