import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { openTestPostgres, type TestDatabase } from '../../../test/helpers/databases.ts';
import { munichExtract } from '../../../test/helpers/exports.ts';
import { importFiles } from '../../bootstrap.ts';
import { filtered } from '../search/query/criteria.sql.ts';
import { noCriteria, type PlaceCriteria } from '../search/query/criteria.ts';

/**
 * PostgreSQL: a full-text search must be answerable from indexes. It matches a word in the name OR in the
 * other names; a trigram index on each (migrations 0011 and 0024) lets the planner OR two bitmap index
 * scans, where an index on the name alone left it a scan of every place (0.8 s a word on 1M places). The
 * extract here is small, so the planner would scan it anyway: sequential scans are priced out for the
 * EXPLAIN, and the plan must then use both indexes and read no place sequentially.
 */
let database: TestDatabase;
before(async () => {
  database = await openTestPostgres('prepared');
  await importFiles(database.db, [munichExtract]);
  await sql`ANALYZE places`.execute(database.db.kysely);
});
after(async () => database?.dispose());

const criteria = (words: string[]): PlaceCriteria => ({ ...noCriteria, text: { words, mode: 'substring' } });

test('the count of a full-text search on PostgreSQL reads both trigram indexes, and no place sequentially', async () => {
  const query = filtered(database.db, criteria(['bier']))
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .compile();
  const plan = await database.db.kysely.transaction().execute(async (trx) => {
    await sql`SET LOCAL enable_seqscan = off`.execute(trx);
    const { rows } = await trx.executeQuery<{ 'QUERY PLAN': string }>({ ...query, sql: `EXPLAIN ${query.sql}` });
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  });
  assert.match(plan, /places_name_fold_trgm_idx/, plan);
  assert.match(plan, /places_names_fold_trgm_idx/, plan);
  assert.doesNotMatch(plan, /Seq Scan on places/, plan);
  const { n } = await filtered(database.db, criteria(['bier']))
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  assert.ok(Number(n) > 0, 'the word is in the extract');
});
