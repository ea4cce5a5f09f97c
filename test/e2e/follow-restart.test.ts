import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCli, spawnCli } from '../helpers/cli.ts';
import { copyTestSqlite } from '../helpers/databases.ts';
import { buildReplication, type FeedServer, type ReplicationFixture, sequenceFile, serveFeed } from '../helpers/replication.ts';

/**
 * `leadatlas follow` in processes of its own against a replication directory on loopback (three change files of
 * the Monaco extract): killed with SIGKILL while it applies the second file, stopped with exit status 3 by a gap,
 * then run to the end; the catalog holds each file's edits exactly once.
 */

/** `leadatlas ARGS…` to its end without blocking this process (which serves the feed). */
async function follow(args: string[], env: Record<string, string>): Promise<{ status: number | null; stderr: string }> {
  const child = spawnCli(['follow', ...args], env, ['ignore', 'ignore', 'pipe']);
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const [status] = (await once(child, 'exit')) as [number | null];
  return { status, stderr };
}

let fixture: ReplicationFixture;
let server: FeedServer;
before(async () => {
  fixture = buildReplication(mkdtempSync(join(tmpdir(), 'follow-e2e-')), 3);
  server = await serveFeed(fixture.feed);
});
after(async () => {
  await server?.close();
  rmSync(fixture.dir, { recursive: true, force: true });
});

test('follow survives kill -9, stops on a gap with status 3, and resumes without losing or repeating a file', {
  timeout: 240_000,
}, async () => {
  const database = await copyTestSqlite('prepared');
  const env = { DATABASE_URL: database.url, FOLLOW_RETRY_BASE_MS: '10', IMPORT_DEMO_DATA: 'false' };
  try {
    const imported = runCli(['import', fixture.snapshot(0), '--dataset', 'monaco'], env);
    assert.equal(imported.status, 0, imported.stderr);

    // Killed as soon as the second change file has been served: it is being read or applied.
    const second = sequenceFile(2, '.osc.gz');
    const follower = spawnCli(['follow', server.url, '--once', '--from', '1', '--allow-private-networks'], env, 'ignore');
    const exited = once(follower, 'exit');
    while (!server.requests.includes(second)) {
      if (follower.exitCode !== null) assert.fail('the follower ended before the second file');
      await sleep(5);
    }
    follower.kill('SIGKILL');
    assert.deepEqual(await exited, [null, 'SIGKILL']);

    // The third file is missing: a gap stops the follower with status 3 once the second is (re)applied.
    server.override.set(sequenceFile(3, '.osc.gz'), { status: 404 });
    const gap = await follow([server.url, '--once', '--allow-private-networks'], env);
    assert.equal(gap.status, 3, gap.stderr);
    assert.match(gap.stderr, /stopped, the catalog is as the last whole change file left it: gap in the feed: change file 3 is missing/);
    server.override.delete(sequenceFile(3, '.osc.gz'));

    const done = await follow([server.url, '--once', '--allow-private-networks'], env);
    assert.equal(done.status, 0, done.stderr);
    assert.match(done.stderr, /monaco: 1 change files applied, at 3/);

    const { db } = database;
    const position = await db.kysely.selectFrom('replication_state').selectAll().executeTakeFirstOrThrow();
    assert.equal(Number(position.sequence), 3);
    const places = await db.kysely
      .selectFrom('places')
      .select(['source_id', 'name', 'closed_reason'])
      .where('source', '=', 'osm')
      .execute();
    const byId = new Map(places.map((p) => [p.source_id, p]));
    fixture.edits.forEach(({ renamed, deleted, created }, i) => {
      assert.match(byId.get(renamed)!.name, new RegExp(`Edit ${i + 1}$`), `file ${i + 1}'s rename`);
      assert.equal(byId.get(deleted)?.closed_reason, 'retired', `file ${i + 1}'s deletion`);
      assert.equal(places.filter((p) => p.source_id === created).length, 1, `file ${i + 1}'s new place, once`);
    });
    const runs = await db.kysely.selectFrom('import_runs').select(['path', 'status']).where('status', '=', 'done').execute();
    const perFile = (n: number) => runs.filter((r) => r.path.endsWith(sequenceFile(n, '.osc.gz'))).length;
    assert.deepEqual([perFile(1), perFile(2), perFile(3)], [1, 1, 1], 'each change file completed once');
  } finally {
    await database.dispose();
  }
});
