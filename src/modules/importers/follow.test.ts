import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import {
  buildReplication,
  type FeedServer,
  type ReplicationFixture,
  sequenceFile,
  serveFeed,
  stateText,
} from '../../../test/helpers/replication.ts';
import { loadEnricher } from './enricher.ts';
import { type FollowOptions, followFeed } from './follow.service.ts';
import { runImport } from './import.service.ts';
import { feedPosition } from './replication.repository.ts';
import { ReplicationError } from './replication.ts';

/**
 * `followFeed` against a replication directory served on loopback, built from the Monaco extract and three
 * edits of it (`test/helpers/replication.ts`): the catalog that follows the feed must equal a fresh import of
 * the last edit, and a feed that breaks its promises must stop it with the catalog as it was.
 */

const feedOptions: Omit<FollowOptions, 'once'> = {
  allowPrivate: true,
  timeoutMs: 5000,
  maxFileBytes: 8 * 1024 * 1024,
  pollSeconds: 1,
  retryBaseMs: 10,
};

/** The open places of the catalog, by source id, with what an import determines of them. */
async function openPlaces(database: TestDatabase): Promise<Map<string, string>> {
  const rows = await database.db.kysely
    .selectFrom('places')
    .select(['source_id', 'public_id', 'content_hash', 'name'])
    .where('source', '=', 'osm')
    .where('closed_at', 'is', null)
    .execute();
  return new Map(rows.map((r) => [r.source_id, `${r.public_id} ${r.content_hash} ${r.name}`]));
}

let fixture: ReplicationFixture;
let server: FeedServer;
/** A fresh import of the feed's last state (public ids and hashes are the same on both dialects). */
let last: Map<string, string>;
before(async () => {
  fixture = buildReplication(mkdtempSync(join(tmpdir(), 'follow-')), 3);
  server = await serveFeed(fixture.feed);
  const snapshot = await dialects[0]!.open('prepared');
  await runImport(snapshot.db, loadEnricher(), fixture.snapshot(fixture.versions));
  last = await openPlaces(snapshot);
  await snapshot.dispose();
});
after(async () => {
  await server?.close();
  rmSync(fixture.dir, { recursive: true, force: true });
});

for (const { name: dialect, open } of dialects) {
  describe(`following a replication feed (${dialect})`, { timeout: 180_000 }, () => {
    let following: TestDatabase;
    before(async () => {
      following = await open('prepared');
      await runImport(following.db, loadEnricher(), fixture.snapshot(0));
    });
    after(() => following?.dispose());

    test('refuses a private feed address unless allowed, recording nothing', async () => {
      await assert.rejects(
        followFeed(following.db, server.url, { ...feedOptions, allowPrivate: false, once: true }),
        (error: Error) => error instanceof ReplicationError && /only public addresses/.test(error.message),
      );
      assert.equal(await feedPosition(following.db, 'monaco'), undefined);
    });

    test('stops at a gap, a corrupt file or a sequence out of order, leaving the catalog as the last whole file left it', async () => {
      const second = sequenceFile(2, '.osc.gz');
      // File 1 applies, then each broken form of file 2 stops the follower with the position at 1.
      const broken: Array<[string, { status: number; body?: Buffer | string }, RegExp]> = [
        [second, { status: 404 }, /gap in the feed: change file 2 is missing/],
        [second, { status: 200, body: gzipSync('<osmChange><node') }, /corrupt change file 2/],
        [second, { status: 200, body: Buffer.from('not gzip') }, /corrupt change file 2/],
        [
          sequenceFile(2, '.state.txt'),
          { status: 200, body: stateText(3, '2026-01-02T00:00:00Z') },
          /out of order: .* names sequence 3, not 2/,
        ],
        [
          sequenceFile(2, '.state.txt'),
          { status: 200, body: stateText(2, '2025-12-01T00:00:00Z') },
          /out of order: change file 2 is dated/,
        ],
      ];
      let afterFirst: Map<string, string> | undefined;
      for (const [path, answer, message] of broken) {
        server.override.set(path, answer);
        await assert.rejects(
          followFeed(following.db, server.url, { ...feedOptions, once: true, ...(afterFirst ? {} : { from: 1 }) }),
          (error: Error) => error instanceof ReplicationError && message.test(error.message),
        );
        server.override.delete(path);
        assert.equal((await feedPosition(following.db, 'monaco'))?.sequence, 1);
        const now = await openPlaces(following);
        if (afterFirst) assert.deepEqual(now, afterFirst, 'nothing of the broken file was written');
        afterFirst = now;
      }
      const { renamed, deleted, created } = fixture.edits[0]!;
      assert.match(afterFirst!.get(renamed)!, /Edit 1$/);
      assert.equal(afterFirst!.has(deleted), false);
      assert.match(afterFirst!.get(created)!, /Neu 1$/);
    });

    test('catches up to the feed and equals a fresh import of its last state; following again applies nothing', async () => {
      const summary = await followFeed(following.db, server.url, { ...feedOptions, once: true });
      assert.deepEqual(summary, { dataset: 'monaco', applied: 2, sequence: 3 });
      assert.deepEqual(await openPlaces(following), last);
      const again = await followFeed(following.db, server.url, { ...feedOptions, once: true });
      assert.equal(again.applied, 0);
      assert.deepEqual(await openPlaces(following), last);
    });

    test('retries a failing feed, and refuses another feed or a --from the dataset is past', async () => {
      server.override.set('state.txt', { status: 503 });
      const requests = server.requests.length;
      await assert.rejects(followFeed(following.db, server.url, { ...feedOptions, once: true, onceRetries: 2 }), /HTTP 503/);
      assert.equal(server.requests.slice(requests).filter((p) => p === 'state.txt').length, 3, 'the first request and two retries');
      server.override.delete('state.txt');
      await assert.rejects(followFeed(following.db, `${server.url}other/`, { ...feedOptions, once: true }), /follows http/);
      await assert.rejects(followFeed(following.db, server.url, { ...feedOptions, once: true, from: 1 }), /is at change file 3/);
    });
  });
}
