import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { importFiles } from '../../src/bootstrap.ts';
import type { Db } from '../../src/infra/db/database.ts';
import { createReadPool, type ReadPool } from '../../src/infra/db/read-pool.ts';
import { AppError } from '../../src/infra/errors.ts';
import { emailStatuses, phoneTypes, websiteStatuses } from '../../src/modules/contacts/trust.types.ts';
import { placesVersion } from '../../src/modules/places/place-changes.repository.ts';
import { indexQueryOf, MemorySearchEngine, SqlSearchEngine } from '../../src/modules/search/engine/search-engine.ts';
import { noCriteria, type PlaceCriteria, type PlaceKey, type PlaceSort } from '../../src/modules/search/query/criteria.ts';
import { type ApiReadTasks, createReadTasks, readTasksModule } from '../../src/modules/search/read-tasks.ts';
import type { PlacePage } from '../../src/modules/search/search.reads.ts';
import { dialects, type TestDatabase } from '../helpers/databases.ts';
import { indexOnly } from '../helpers/index-only.ts';
import { testPlaceRecord, writePlaces } from '../helpers/places.ts';

/**
 * The trust filters of issue 33 (`email_status`, `phone_type`, `website_status`, `min_confidence` on the contact
 * filters, `min_lead_score`, `updated_since`, `verified_since`, `sort=lead_score`): the in-memory engine against
 * SQL on each dialect, and the two dialects against each other, on real places (Monaco's OpenStreetMap extract)
 * whose trust summary is written here as the trust pass would (the pass itself is tested in `trust/`): every
 * status, confidences with ties and nulls, instants over a year. Then the rule that no total is answered before
 * the trust pass has caught up: a new place makes the filters wait for the pass, or fail with 503 not_ready.
 */

const data = new URL('../../../shared/data/', import.meta.url);
const monaco = new URL('osm/monaco-2026.osm.pbf', data).pathname;

/**
 * The summary the trust pass keeps, spread over the places by their id: every status and null, confidences with
 * ties (steps of 0.05) and without, instants over a year.
 */
async function writeTrust(db: Db): Promise<void> {
  const { rows } = await sql<{ id: number }>`SELECT id FROM places ORDER BY id`.execute(db.kysely);
  const pick = <T extends string>(values: readonly T[], n: number): T | null => values[n % (values.length + 1)] ?? null;
  const day = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 86_400_000 + (n % 24) * 3_600_000).toISOString();
  await db.kysely.transaction().execute(async (trx) => {
    for (const { id: raw } of rows) {
      const id = Number(raw);
      await trx
        .updateTable('places')
        .set({
          email_status: pick(emailStatuses, id * 7),
          phone_type: pick(phoneTypes, id * 11),
          website_status: pick(websiteStatuses, id * 13),
          email_confidence: id % 5 === 0 ? null : ((id * 3) % 21) * 0.05,
          phone_confidence: id % 7 === 0 ? null : ((id * 5) % 101) * 0.01,
          website_confidence: id % 3 === 0 ? null : ((id * 17) % 97) / 97,
          lead_score: id % 11 === 0 ? null : ((id * 13) % 89) / 89,
          updated_at: day((id * 7) % 365),
          verified_at: id % 4 === 0 ? null : day((id * 3) % 200),
        })
        .where('id', '=', id)
        .execute();
    }
  });
}

async function caughtUp(db: Db): Promise<void> {
  const version = await placesVersion(db);
  await sql`DELETE FROM trust_state`.execute(db.kysely);
  await sql`INSERT INTO trust_state (id, places_version, model_version, computed_at) VALUES (1, ${version}, 'test', '2026-11-28T00:00:00.000Z')`.execute(
    db.kysely,
  );
}

const none = noCriteria;

/** The searches of the sweep: each new filter alone and with the others, within the largest categories. */
function searches(categories: string[]): Array<[PlaceCriteria, PlaceSort]> {
  const filters: Array<Partial<PlaceCriteria>> = [
    ...emailStatuses.map((emailStatus) => ({ emailStatus })),
    ...phoneTypes.map((phoneType) => ({ phoneType })),
    ...websiteStatuses.map((websiteStatus) => ({ websiteStatus })),
    { hasEmail: true, minConfidence: { value: 0.8, kinds: ['email'] } },
    { hasEmail: true, minConfidence: { value: 0.35, kinds: ['email'] } },
    { emailStatus: 'valid_domain', phoneType: 'mobile', minConfidence: { value: 0.5, kinds: ['email', 'phone'] } },
    { hasWebsite: true, websiteStatus: 'live', minConfidence: { value: 0.61, kinds: ['website'] } },
    { minLeadScore: 0.5 },
    { minLeadScore: 0.9, hasPhone: true },
    { updatedSince: '2026-06-15T00:00:00.000Z' },
    { verifiedSince: '2026-03-01T12:00:00.000Z', emailStatus: 'no_mx' },
    { minLeadScore: 0, includeClosed: true },
  ];
  const out: Array<[PlaceCriteria, PlaceSort]> = [];
  for (const f of filters) {
    out.push([{ ...none, ...f, countryCode: 'MC' }, 'relevance']);
    out.push([{ ...none, ...f, countryCode: 'MC' }, 'lead_score']);
    for (const c of categories) out.push([{ ...none, ...f, categories: [c] }, f.minLeadScore ? 'lead_score' : 'rating']);
  }
  return out;
}

/** Every dialect's answers, by search: totals and the ids of the first pages, compared across dialects at the end. */
const answers = new Map<string, Map<string, unknown>>();

for (const dialect of dialects) {
  describe(`the trust filters, in memory and in SQL (${dialect.name})`, { timeout: 120_000 }, () => {
    let t: TestDatabase;
    let reads: ReadPool<ApiReadTasks>;
    let guarded: MemorySearchEngine;
    let sqlEngine: SqlSearchEngine;
    let categories: string[];

    before(async () => {
      t = await dialect.open('prepared');
      await importFiles(t.db, [monaco]);
      await sql`UPDATE places SET rating = (id % 9) * 0.5 + 1, review_count = id % 37 WHERE id % 3 <> 0`.execute(t.db.kysely);
      await writeTrust(t.db);
      await caughtUp(t.db);
      reads = createReadPool({ db: t.db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule });
      sqlEngine = new SqlSearchEngine({ db: t.db, reads });
      guarded = new MemorySearchEngine({ db: t.db, reads: indexOnly(reads) }, 60_000);
      await guarded.start();
      const { rows } = await sql<{ category: string }>`SELECT category FROM places WHERE category IS NOT NULL
        GROUP BY category ORDER BY count(*) DESC, category LIMIT 3`.execute(t.db.kysely);
      categories = rows.map((r) => r.category);
    });
    after(async () => {
      await guarded?.close();
      await reads?.close();
      await t?.dispose();
    });

    async function compare(label: string): Promise<{ narrowed: number; found: number }> {
      const mine = new Map<string, unknown>();
      answers.set(`${dialect.name} ${label}`, mine);
      let narrowed = 0;
      let found = 0;
      for (const [criteria, sort] of searches(categories)) {
        const what = `${label}: ${JSON.stringify(criteria)} ${sort}`;
        assert.ok(indexQueryOf(criteria, sort), `the index holds ${what}`);
        let after: PlaceKey | null = null;
        const pages: number[][] = [];
        for (let page = 0; page < 3; page++) {
          const [m, s]: [PlacePage, PlacePage] = await Promise.all([
            guarded.searchPage(criteria, sort, after, 20, 10_000),
            sqlEngine.searchPage(criteria, sort, after, 20, 10_000),
          ]);
          assert.equal(m.total, s.total, `${what} page ${page}`);
          assert.deepEqual(
            m.rows.map((r) => r.id),
            s.rows.map((r) => r.id),
            `${what} page ${page}`,
          );
          assert.deepEqual(m.next, s.next === null ? null : { key: Number(s.next.key), id: s.next.id }, `${what} page ${page}`);
          pages.push(s.rows.map((r) => r.id));
          if (page === 0) {
            const base = Number(
              (await sql<{ n: number }>`SELECT count(*) AS n FROM places WHERE closed_at IS NULL`.execute(t.db.kysely)).rows[0]!.n,
            );
            if (s.total < base) narrowed++;
            if (s.total > 0) found++;
            mine.set(what, s.total);
          }
          if (!s.next) break;
          after = s.next;
        }
        mine.set(`${what} pages`, pages);
      }
      return { narrowed, found };
    }

    test('answers each trust filter and sort=lead_score from the index as SQL does: totals, pages, cursors', async () => {
      const { narrowed, found } = await compare('built');
      // A filter the engine ignored would match every place: the comparison above would still pass on both.
      assert.ok(narrowed > 40 && found > 40, `narrowed ${narrowed}, found ${found}`);
    });

    test('follows changes of the trust summary through the change log, thresholds already made included', async () => {
      await sql`UPDATE places SET email_confidence = 0.95, lead_score = 0.97, email_status = 'valid_domain' WHERE id % 6 = 1`.execute(
        t.db.kysely,
      );
      await sql`UPDATE places SET phone_type = NULL, phone_confidence = NULL WHERE id % 8 = 2`.execute(t.db.kysely);
      await caughtUp(t.db);
      await guarded.catchUp();
      await compare('after changes');
    });

    test('waits for the trust pass before answering a trust filter, and says 503 not_ready when it cannot', async () => {
      const criteria: PlaceCriteria = { ...none, countryCode: 'MC', emailStatus: 'valid_domain' };
      const before = await sqlEngine.countMatches(criteria);
      // A place the pass has not seen: its summary is null, so a total now would leave it out.
      await writePlaces(t.db, [testPlaceRecord('trust-parity', 'unseen', { country_code: 'MC', email: 'info@unseen.example' })]);
      await guarded.catchUp();
      for (const engine of [guarded, sqlEngine]) {
        await assert.rejects(
          () => engine.countMatches(criteria),
          (error: unknown) => error instanceof AppError && error.code === 'not_ready' && error.headers?.['retry-after'] === '5',
        );
      }
      // Filters that read nothing of the pass answer as before.
      assert.ok((await guarded.countMatches({ ...none, countryCode: 'MC', hasEmail: true })) > 0);
      // With a pass to run, the read waits for it and answers what it wrote.
      let passes = 0;
      const pass = async () => {
        passes++;
        await sql`UPDATE places SET email_status = 'valid_domain', email_confidence = 0.9, lead_score = 0.5 WHERE source = 'trust-parity'`.execute(
          t.db.kysely,
        );
        await caughtUp(t.db);
      };
      const waiting = new SqlSearchEngine({ db: t.db, reads, trustPassNow: pass });
      assert.equal(await waiting.countMatches(criteria), before + 1);
      assert.equal(passes, 1);
      // The index answers once it has applied what the pass wrote (until then SQL does).
      await guarded.catchUp();
      assert.equal(await guarded.countMatches(criteria), before + 1);
      await compare('after a pass');
    });
  });
}

describe('the trust filters on SQLite and PostgreSQL', () => {
  test('give the same totals and pages on both dialects', { skip: dialects.length < 2 }, () => {
    const [a, b] = dialects.map((d) => d.name);
    for (const label of ['built', 'after changes', 'after a pass']) {
      const x = answers.get(`${a} ${label}`);
      const y = answers.get(`${b} ${label}`);
      assert.ok(x && y && x.size > 50, `both dialects answered ${label}`);
      assert.deepEqual(x, y);
    }
  });
});
