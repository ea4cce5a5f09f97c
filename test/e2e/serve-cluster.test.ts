import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/infra/db/database.ts';
import { createAccountWithToken } from '../helpers/accounts.ts';
import { freePort, spawnCli } from '../helpers/cli.ts';
import { copyTestSqlite } from '../helpers/databases.ts';
import { testPlaceRecord, writePlaces } from '../helpers/places.ts';

interface LogLine {
  pid: number;
  msg: string;
  reqId?: string;
  from?: string;
  rank?: number;
  [key: string]: unknown;
}

/**
 * `leadatlas serve` with WEB_CONCURRENCY=2 as an operator runs it: the CLI in a process of its own, two server
 * processes behind one port, each with its own index (the first built from the database, which writes the
 * snapshot, the second loaded from it). What each process did is read from their JSON log lines (each carries
 * its pid): who answered which request, who built what, who ran the background work.
 */
describe('leadatlas serve with WEB_CONCURRENCY=2', { timeout: 180_000 }, () => {
  let dir = '';
  let url = '';
  let base = '';
  let authorization = '';
  let server: ChildProcess;
  const lines: LogLine[] = [];
  let output = '';

  const said = (msg: string) => lines.filter((l) => l.msg === msg);
  const listening = () => lines.filter((l) => l.msg.startsWith('Server listening at'));
  const until = async (what: string, ok: () => boolean | Promise<boolean>, ms = 90_000) => {
    const deadline = Date.now() + ms;
    while (!(await ok())) {
      if (server.exitCode !== null) throw new Error(`serve exited with ${server.exitCode}: ${output.slice(-3000)}`);
      if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms\n${output.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  /** `n` requests, each on a connection of its own (the cluster hands connections to the processes in turn): the pids that answered. */
  const pidsAnswering = async (n: number, path: string): Promise<Set<number>> => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const id = `probe-${Date.now()}-${i}`;
      const res = await fetch(`${base}${path}`, { headers: { authorization, 'x-request-id': id, connection: 'close' } });
      assert.equal(res.status, 200, await res.text());
      ids.push(id);
    }
    await until('the requests logged', () => ids.every((id) => said('request completed').some((l) => l.reqId === id)));
    return new Set(
      said('request completed')
        .filter((l) => ids.includes(l.reqId!))
        .map((l) => l.pid),
    );
  };

  before(async () => {
    const t = await copyTestSqlite('prepared');
    url = t.url;
    dir = dirname(t.path);
    await writePlaces(
      t.db,
      Array.from({ length: 300 }, (_, i) =>
        testPlaceRecord('cluster', `p${i}`, { review_count: i % 50, phone_e164: i % 2 ? `+49891${1000 + i}` : null }),
      ),
    );
    authorization = (await createAccountWithToken(t.db, { scopes: ['search'] })).authorization;
    await t.db.close();
    // A corrupt snapshot where the server looks for one: the first process must build from the database and replace it.
    writeFileSync(`${t.path}.search-index`, 'not a snapshot');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    server = spawnCli(['serve'], {
      DATABASE_URL: url,
      PORT: String(port),
      WEB_CONCURRENCY: '2',
      IMPORT_DEMO_DATA: 'false',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      OPENING_HOURS_CHECK_MS: '200',
      SHUTDOWN_TIMEOUT: '2',
    });
    let pending = '';
    const take = (d: Buffer) => {
      output += d.toString();
      pending += d.toString();
      const parts = pending.split('\n');
      pending = parts.pop()!;
      for (const part of parts) {
        try {
          lines.push(JSON.parse(part) as LogLine);
        } catch {
          // The CLI's own lines (migrations): not JSON.
        }
      }
    };
    server.stdout!.on('data', take);
    server.stderr!.on('data', take);
    // Polled from the start: no process may answer before its index is built (checked below from the log's order).
    await until('both processes listening', async () => {
      await fetch(`${base}/readyz`).catch(() => undefined);
      return said('search index built').length >= 2 && listening().length >= 2;
    });
  });

  after(async () => {
    if (server.exitCode === null) server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('the first process builds from the database and writes the snapshot; the second starts from it', () => {
    const built = said('search index built');
    assert.deepEqual(
      built.map((l) => l.from),
      ['database', 'snapshot'],
    );
    assert.equal(said('search index snapshot not used: building from the database')[0]?.reason, 'corrupt');
    assert.equal(said('search index snapshot written').length, 1);
    assert.notEqual(built[0]!.pid, built[1]!.pid);
    assert.ok(existsSync(`${url.slice('sqlite:'.length)}.search-index`));
  });

  test('both processes answer searches from their index, and /readyz says ready with the index in each', async () => {
    const servers = new Set(said('search index built').map((l) => l.pid));
    const answering = await pidsAnswering(6, '/api/v2/map/search?type=restaurant&city=M%C3%BCnchen&per_page=5');
    assert.deepEqual([...answering].sort(), [...servers].sort());
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${base}/readyz`, { headers: { connection: 'close' } });
      const body = (await res.json()) as { status: string; search_index: { engine: string; status: string; places: number } };
      assert.equal(res.status, 200);
      assert.deepEqual(
        [body.status, body.search_index.engine, body.search_index.status, body.search_index.places],
        ['ready', 'memory', 'ready', 300],
      );
    }
  });

  test('no process answered before its index was built', () => {
    for (const built of said('search index built')) {
      const first = lines.findIndex((l) => l.pid === built.pid && l.msg === 'incoming request');
      assert.ok(first === -1 || first > lines.indexOf(built), `process ${built.pid} answered before its index`);
    }
  });

  test('the background work runs in one process only: the opening-hours pass runs in the first, never in the second', async () => {
    await until('the opening-hours pass', () => said('opening hours computed').length > 0);
    const background = said('search index built')[0]!.pid;
    assert.deepEqual([...new Set(said('opening hours computed').map((l) => l.pid))], [background]);
  });

  test('writes from every process land in the one SQLite file (WAL), none refused as busy', async () => {
    const before = await countSearches();
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        fetch(`${base}/api/v2/map/search?type=restaurant&city=M%C3%BCnchen&per_page=${1 + (i % 5)}`, {
          headers: { authorization, connection: 'close' },
        }).then((r) => r.status),
      ),
    );
    assert.deepEqual(new Set(results), new Set([200]));
    assert.equal((await countSearches()) - before, 24, 'every search saved once');
  });

  test('a process that dies is started again, from the snapshot, and answers', async () => {
    const victim = said('search index built')[1]!.pid;
    process.kill(victim, 'SIGKILL');
    await until('the process replaced', () => said('search index built').length >= 3);
    const died = said('server process died: starting it again');
    assert.equal(died[0]?.worker, victim);
    assert.equal(died[0]?.rank, 1);
    const replacement = said('search index built')[2]!;
    assert.equal(replacement.from, 'snapshot');
    await until('the new process listening', () => listening().some((l) => l.pid === replacement.pid));
    const answering = await pidsAnswering(6, '/api/v2/map/search?type=restaurant&city=M%C3%BCnchen&per_page=3');
    assert.ok(answering.has(replacement.pid) && !answering.has(victim), `answered by ${[...answering].join(',')}`);
  });

  test('SIGTERM stops every process and the primary exits cleanly', async () => {
    const exited = once(server, 'exit');
    server.kill('SIGTERM');
    const [code] = await exited;
    assert.equal(code, 0);
    for (const pid of new Set(said('search index built').map((l) => l.pid))) assert.throws(() => process.kill(pid, 0), 'process gone');
  });

  async function countSearches(): Promise<number> {
    const db = openDatabase(url);
    try {
      return Number((await sql<{ n: number }>`SELECT count(*) AS n FROM searches`.execute(db.kysely)).rows[0]!.n);
    } finally {
      await db.close();
    }
  }
});
