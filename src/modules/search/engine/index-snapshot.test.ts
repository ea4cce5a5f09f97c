import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { dialects, type TestDatabase } from '../../../../test/helpers/databases.ts';
import { testPlaceRecord, writePlaces } from '../../../../test/helpers/places.ts';
import { createReadPool, type ReadPool } from '../../../infra/db/read-pool.ts';
import { prunePlaceChanges } from '../../places/place-changes.repository.ts';
import { noCriteria, type PlaceCriteria } from '../query/criteria.ts';
import { type ApiReadTasks, createReadTasks, readTasksModule } from '../read-tasks.ts';
import { factsShape, placeFactsAfter } from './engine.repository.ts';
import { EngineSnapshot } from './engine-snapshot.ts';
import { FactsRow } from './fact-columns.ts';
import { decodeSnapshot, encodeSnapshot } from './index-snapshot.ts';
import { MemorySearchEngine } from './search-engine.ts';

/** A catalog with every kind of fact the index holds: categories, cities, ratings, contacts, closed places. */
const catalog = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) =>
    testPlaceRecord('snap', `${prefix}${i}`, {
      category: ['restaurant', 'cafe', 'bakery', 'pharmacy'][i % 4]!,
      categories: [['restaurant', 'cafe', 'bakery', 'pharmacy'][i % 4]!],
      city_id: i % 3 === 0 ? 2867714 : 2950159,
      city: i % 3 === 0 ? 'München' : 'Berlin',
      rating: i % 5 === 0 ? null : 1 + (i % 9) * 0.5,
      review_count: i % 7 === 0 ? null : i % 40,
      phone_e164: i % 2 === 0 ? `+4930${String(1_000_000 + i)}` : null,
      phone: i % 2 === 0 ? `+4930${String(1_000_000 + i)}` : null,
      website: i % 3 === 1 ? `https://s${i}.example` : null,
      website_domain: i % 3 === 1 ? `s${i}.example` : null,
      email: i % 4 === 1 ? `owner${i}@s${i}.example` : null,
      street: i % 5 === 2 ? 'Hauptstraße' : null,
      housenumber: i % 5 === 2 ? String(i) : null,
    }),
  );

/** What a log line said, by message: the engine and the snapshot report where the index came from. */
function recordingLog() {
  const lines: Array<{ msg: string; obj: Record<string, unknown> }> = [];
  const push = (obj: unknown, msg: string) => lines.push({ msg, obj: obj as Record<string, unknown> });
  return { lines, log: { info: push, warn: push }, said: (msg: string) => lines.filter((l) => l.msg === msg).map((l) => l.obj) };
}

const searches: PlaceCriteria[] = [
  noCriteria,
  { ...noCriteria, categories: ['cafe'] },
  { ...noCriteria, cityId: 2867714, hasPhone: true },
  { ...noCriteria, minRating: 3, hasWebsite: false },
  { ...noCriteria, hasEmail: true, includeClosed: true },
];

for (const dialect of dialects) {
  describe(`the search index snapshot (${dialect.name})`, { timeout: 40_000 }, () => {
    let t: TestDatabase & { url: string };
    let reads: ReadPool<ApiReadTasks>;
    let path: string;

    before(async () => {
      t = await dialect.open('migrated');
      await writePlaces(t.db, catalog('a', 400));
      await sql`UPDATE places SET closed_at = '2026-01-01T00:00:00.000Z' WHERE id % 11 = 0`.execute(t.db.kysely);
      reads = createReadPool({ db: t.db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule });
      path = join(mkdtempSync(join(tmpdir(), 'leadatlas-snapshot-')), 'index.snapshot');
    });
    after(async () => {
      await reads.close();
      await t.dispose();
      rmSync(dirname(path), { recursive: true, force: true });
    });

    /** An engine started with the snapshot, what it logged, and its answers to `searches` (totals and first pages). */
    async function startEngine() {
      const { log, said } = recordingLog();
      const engine = new MemorySearchEngine({ db: t.db, reads, log, snapshot: new EngineSnapshot(t.db, path, log) }, 60_000);
      await engine.start();
      const answers = [];
      for (const criteria of searches) answers.push(await engine.searchPage(criteria, 'relevance', null, 7, 10_000));
      await engine.close();
      return { said, answers: answers.map((a) => ({ total: a.total, ids: a.rows.map((r) => r.id), next: a.next })) };
    }

    test('a build from the database writes the snapshot, and the next start loads it and answers alike', async () => {
      const built = await startEngine();
      assert.equal(built.said('search index built')[0]?.from, 'database');
      assert.equal(built.said('search index snapshot written').length, 1);
      assert.ok(existsSync(path));
      assert.deepEqual(
        readdirSync(dirname(path)).filter((f) => f.endsWith('.tmp')),
        [],
        'no temporary file left',
      );
      const loaded = await startEngine();
      assert.equal(loaded.said('search index built')[0]?.from, 'snapshot');
      assert.equal(loaded.said('search index snapshot written').length, 0, 'a load does not write');
      assert.deepEqual(loaded.answers, built.answers);
      assert.ok(built.answers[0]!.total > 300);
    });

    test('a snapshot behind the catalog is brought up to date from the change log', async () => {
      await writePlaces(t.db, catalog('b', 30));
      await sql`UPDATE places SET review_count = 500 WHERE id = 5`.execute(t.db.kysely);
      const { log, said } = recordingLog();
      const fresh = new MemorySearchEngine({ db: t.db, reads, log }, 60_000);
      await fresh.start();
      const expected = await Promise.all(searches.map((c) => fresh.searchPage(c, 'relevance', null, 7, 10_000)));
      await fresh.close();
      assert.equal(said('search index built')[0]?.from, 'database');
      const loaded = await startEngine();
      assert.equal(loaded.said('search index built')[0]?.from, 'snapshot');
      assert.deepEqual(
        loaded.answers,
        expected.map((a) => ({ total: a.total, ids: a.rows.map((r) => r.id), next: a.next })),
      );
      assert.equal(loaded.answers[0]!.ids[0], 5, 'the moved place first');
    });

    test('a snapshot the change log no longer reaches is stale: the index is built from the database and the snapshot rewritten', async () => {
      await sql`UPDATE places SET review_count = coalesce(review_count, 0) + 1 WHERE id % 7 = 3`.execute(t.db.kysely);
      const later = Date.now() + 3 * 24 * 60 * 60 * 1000;
      await prunePlaceChanges(t.db, new Date(later - 2 * 24 * 60 * 60 * 1000));
      await prunePlaceChanges(t.db, new Date(later));
      const rebuilt = await startEngine();
      assert.equal(rebuilt.said('search index snapshot not used: building from the database')[0]?.reason, 'stale');
      assert.equal(rebuilt.said('search index built')[0]?.from, 'database');
      assert.equal(rebuilt.said('search index snapshot written').length, 1);
      const loaded = await startEngine();
      assert.equal(loaded.said('search index built')[0]?.from, 'snapshot');
      assert.deepEqual(loaded.answers, rebuilt.answers);
    });

    test('a corrupt snapshot (cut short, one byte changed) is refused: the index is built from the database and the snapshot rewritten', async () => {
      const good = readFileSync(path);
      for (const broken of [good.subarray(0, good.length - 9), Buffer.concat([good.subarray(0, -1), Buffer.from([good.at(-1)! ^ 0xff])])]) {
        writeFileSync(path, broken);
        const rebuilt = await startEngine();
        assert.equal(rebuilt.said('search index snapshot not used: building from the database')[0]?.reason, 'corrupt');
        assert.equal(rebuilt.said('search index built')[0]?.from, 'database');
        assert.deepEqual(readFileSync(path).length, good.length, 'rewritten whole');
      }
    });

    test('a snapshot of another catalog at the same version is not used', async () => {
      const other = await dialect.open('migrated');
      try {
        await writePlaces(other.db, catalog('z', 50));
        const otherPath = `${path}.other`;
        const { log, said } = recordingLog();
        const first = new MemorySearchEngine({ db: other.db, reads, log, snapshot: new EngineSnapshot(other.db, otherPath, log) }, 60_000);
        await first.start();
        await first.close();
        // This catalog's snapshot, claiming the other catalog's version: the count after catching up gives it away.
        const shape = (await factsShape(t.db))!;
        const facts = await placeFactsAfter(t.db, 0, 100_000);
        const version = Number((await sql<{ v: number }>`SELECT version AS v FROM places_version`.execute(other.db.kysely)).rows[0]!.v);
        writeFileSync(otherPath, encodeSnapshot(version, shape, facts.slice(0, 60)));
        const again = new MemorySearchEngine({ db: other.db, reads, log, snapshot: new EngineSnapshot(other.db, otherPath, log) }, 60_000);
        await again.start();
        await again.close();
        assert.equal(said('search index snapshot of another catalog').length, 1);
        assert.deepEqual(
          said('search index built').map((l) => l.from),
          ['database', 'snapshot', 'database'],
        );
      } finally {
        await other.dispose();
      }
    });

    test('decoding checks every bound: magic, header length and schema, sections, lengths, the format and query that made it', async () => {
      const shape = (await factsShape(t.db))!;
      const facts = await placeFactsAfter(t.db, 0, 50);
      const bytes = encodeSnapshot(42, shape, facts);
      const read = decodeSnapshot(bytes, shape);
      assert.ok(read.ok);
      assert.equal(read.snapshot.version, 42);
      const row = new FactsRow(read.snapshot.facts);
      assert.deepEqual(
        Array.from({ length: read.snapshot.facts.size }, (_, i) => ({ ...row.at(i) })),
        facts,
        'every fact as it was read, nulls and text included',
      );
      const reason = (b: Buffer, s = shape) => {
        const r = decodeSnapshot(b, s);
        return r.ok ? 'ok' : r.reason;
      };
      assert.equal(reason(Buffer.from('not a snapshot at all')), 'corrupt');
      const hugeHeader = Buffer.from(bytes);
      hugeHeader.writeUInt32LE(0xffffffff, 8);
      assert.equal(reason(hugeHeader), 'corrupt');
      assert.equal(reason(bytes.subarray(0, 20)), 'corrupt');
      assert.equal(reason(Buffer.concat([bytes, Buffer.alloc(8)])), 'corrupt', 'longer than its header says');
      assert.equal(reason(bytes, { ...shape, digest: 'another query' }), 'stale');
      assert.equal(reason(bytes, { ...shape, columns: [...shape.columns, 'new_fact'] }), 'stale');
      // A header whose sections point outside the body, and a format of the future.
      const headerLength = bytes.readUInt32LE(8);
      const header = JSON.parse(bytes.toString('utf8', 12, 12 + headerLength));
      const rewrite = (h: unknown) => {
        const json = Buffer.from(JSON.stringify(h));
        const length = Buffer.alloc(4);
        length.writeUInt32LE(json.length);
        const start = (12 + json.length + 7) & ~7;
        return Buffer.concat([
          bytes.subarray(0, 8),
          length,
          json,
          Buffer.alloc(start - 12 - json.length),
          bytes.subarray((12 + headerLength + 7) & ~7),
        ]);
      };
      assert.equal(reason(rewrite(header)), 'ok', 'the rewrite itself keeps a good file good');
      assert.equal(reason(rewrite({ ...header, format: 99 })), 'stale');
      const outside = structuredClone(header);
      outside.columns[0].values.offset = header.bodyBytes + 8;
      assert.equal(reason(rewrite(outside)), 'corrupt');
      const moreRows = { ...header, places: header.places + 1 };
      assert.equal(reason(rewrite(moreRows)), 'corrupt');
    });
  });
}
