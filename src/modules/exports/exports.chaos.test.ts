import assert from 'node:assert/strict';
import { readdirSync, readlinkSync, statSync } from 'node:fs';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { mergedPbf } from '../../../test/helpers/osm.ts';
import { walSizeLimitBytes } from '../../infra/db/database.ts';
import { exportBatchSize } from './exports.service.ts';

/**
 * Export clients that misbehave, against a real server on a real socket: clients that stop reading
 * (their downloads stall with the socket buffers full) and clients that go away mid-download. The
 * server must cut stalled clients off after the idle timeout, never hold a read snapshot while a client
 * stalls (the write-ahead log must stay checkpointable and return to its normal size), record as leads
 * only what it delivered, and leave no file handle behind.
 */

const idleTimeoutS = 2;

/** The body of a chunked HTTP/1.1 response, as far as it came (a cut-off response has no last chunk). */
function dechunk(raw: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = Number.parseInt(raw.subarray(at, lineEnd).toString('latin1'), 16);
    if (!(size > 0)) break;
    parts.push(raw.subarray(lineEnd + 2, Math.min(raw.length, lineEnd + 2 + size)));
    at = lineEnd + 2 + size + 2;
    if (at > raw.length) break;
  }
  return Buffer.concat(parts).toString('utf8');
}

/** Places of a JSON export body that arrived whole (one a line, a comma before each but the first). */
function completeRows(body: string): number {
  return body.split('\n').filter((line) => {
    if (!line.startsWith('{')) return false;
    try {
      JSON.parse(line.replace(/,$/, ''));
      return true;
    } catch {
      return false; // the line the connection was cut in
    }
  }).length;
}

/**
 * The process's open files: sockets and pipes, and descriptors of the database file. SQLite keeps the
 * descriptor of a closed connection while another connection of the process holds a lock on the file,
 * and reuses it for the next connection it opens: those are bounded by the connections open at once.
 */
function openFiles(dbPath: string): { other: number; database: number } {
  let other = 0;
  let database = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    let target = '';
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // the descriptor readdir itself used
    }
    if (target.startsWith(dbPath)) database++;
    else other++;
  }
  return { other, database };
}

describe('export clients that stall or go away', { timeout: 120_000 }, () => {
  let t: TestApp;
  let origin: { host: string; port: number };
  let total: number;

  before(async () => {
    t = await buildTestApp({ files: [mergedPbf], env: { EXPORT_IDLE_TIMEOUT: String(idleTimeoutS), DB_READ_WORKERS: '1' } });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address() as AddressInfo;
    origin = { host: '127.0.0.1', port: address.port };
    total = Number(
      (
        await t.db.kysely
          .selectFrom('places')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('closed_at', 'is', null)
          .executeTakeFirstOrThrow()
      ).n,
    );
  });
  after(async () => {
    await t.close();
  });

  /**
   * A GET on a connection of its own that the client closes after the answer (no keep-alive pool): the
   * test counts the process's open files, its own sockets included.
   */
  function get(path: string, account: TestAccount): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request(
        { ...origin, path, agent: false, headers: { authorization: account.authorization, connection: 'close' } },
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (chunk: Buffer) => parts.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  /** A saved search of every place (a world box) for the account. */
  async function worldSearch(account: TestAccount): Promise<string> {
    const res = await get('/api/v2/map/search?bbox=-180,-90,180,90&per_page=1', account);
    assert.equal(res.status, 200);
    return (JSON.parse(res.body) as { search_id: string }).search_id;
  }

  /**
   * Sends an export request on a raw socket and resolves once the response headers are in, with the body
   * bytes that came with them; the caller decides how to read on.
   */
  function requestExport(
    account: TestAccount,
    searchId: string,
  ): Promise<{ socket: Socket; head: string; rest: Buffer; closed: Promise<void> }> {
    return new Promise((resolve, reject) => {
      const socket = connect(origin);
      const closed = new Promise<void>((done) => socket.once('close', () => done()));
      let received = Buffer.alloc(0);
      socket.once('error', reject);
      socket.on('data', function onData(chunk: Buffer) {
        received = Buffer.concat([received, chunk]);
        const end = received.indexOf('\r\n\r\n');
        if (end < 0) return;
        socket.off('data', onData);
        resolve({ socket, head: received.subarray(0, end).toString('latin1'), rest: received.subarray(end + 4), closed });
      });
      socket.write(
        `GET /api/v2/map/export?search_id=${searchId}&format=json HTTP/1.1\r\nHost: ${origin.host}\r\nAuthorization: ${account.authorization}\r\n\r\n`,
      );
    });
  }

  async function exportLog(account: TestAccount) {
    return t.db.kysely
      .selectFrom('exports')
      .select(['status', 'row_count'])
      .where('account_id', '=', account.accountId)
      .executeTakeFirstOrThrow();
  }

  async function leadCount(account: TestAccount): Promise<number> {
    const row = await t.db.kysely
      .selectFrom('leads')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', account.accountId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Writes that grow the log: saved searches, each its own commit. */
  async function writeSome(account: TestAccount, searchId: string, n: number): Promise<void> {
    for (let i = 0; i < n; i++)
      assert.equal((await get(`/api/v2/map/search?bbox=${-10 - (i % 50)},40,10,50&per_page=100`, account)).status, 200);
    void searchId;
  }

  test('stalled downloads are cut off after the idle timeout, release their snapshot meanwhile, and count only what they were sent', async () => {
    // Warm up: one complete export, so the read threads and connections any export needs are open.
    const warm = await createAccountWithToken(t.db, { scopes: ['search', 'export', 'places:read'] });
    const full = await get(`/api/v2/map/export?search_id=${await worldSearch(warm)}&format=json`, warm);
    assert.equal((JSON.parse(full.body) as unknown[]).length, total);
    await sleep(100);
    assert.deepEqual(await exportLog(warm), { status: 'done', row_count: total });
    const filesBefore = openFiles(t.db.sqlitePath!);

    const accounts = await Promise.all(
      Array.from({ length: 10 }, () => createAccountWithToken(t.db, { scopes: ['search', 'export', 'places:read'] })),
    );
    const searches = await Promise.all(accounts.map(worldSearch));
    // Ten clients that read the headers and then nothing: their downloads stall once the socket buffers are full.
    const stalled = await Promise.all(
      accounts.map(async (a, i) => {
        const client = await requestExport(a, searches[i]!);
        client.socket.pause();
        return client;
      }),
    );
    for (const c of stalled) assert.match(c.head, /^HTTP\/1\.1 200/);

    // While they stall, other requests write: the log grows, and a checkpoint must still get to its end.
    const started = Date.now();
    await sleep(1500);
    await writeSome(warm, searches[0]!, 200);
    const probe = new SQLite(t.db.sqlitePath!, { readonly: false });
    try {
      // The server's own checkpointer runs beside this one: a checkpoint that meets it answers busy (-1), and is
      // tried again.
      let result: { busy: number; log: number; checkpointed: number } | undefined;
      for (let tries = 0; tries < 40; tries++) {
        [result] = probe.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
        if (result && result.log !== -1) break;
        await sleep(50);
      }
      assert.ok(result && result.log > 0, `the writes went to the log: ${JSON.stringify(result)}`);
      assert.equal(result!.checkpointed, result!.log, 'no stalled export holds a snapshot the checkpoint has to wait for');
    } finally {
      probe.close();
    }

    // The server cuts them off once they have taken nothing for the idle timeout.
    await until(async () => (await Promise.all(accounts.map(exportLog))).every((l) => l.status === 'aborted'), 30_000);
    const cutAfter = (Date.now() - started) / 1000;
    assert.ok(cutAfter >= idleTimeoutS, `cut off after ${cutAfter} s`);
    // What the clients were sent is still in their sockets: they read it now, up to the server's close.
    const bodies = await Promise.all(
      stalled.map(async (c) => {
        const parts: Buffer[] = [c.rest];
        c.socket.on('data', (chunk: Buffer) => parts.push(chunk));
        c.socket.resume();
        await c.closed;
        return dechunk(Buffer.concat(parts));
      }),
    );
    for (const [i, a] of accounts.entries()) {
      const log = await exportLog(a);
      const rows = completeRows(bodies[i]!);
      assert.ok(log.row_count < total, `a stalled client was not sent everything (${log.row_count} of ${total})`);
      assert.equal(await leadCount(a), log.row_count, 'leads are the places delivered');
      // Leads are the whole batches handed to the operating system; what it still held for a client it
      // cut off may not reach it. Either way the two differ by less than a batch.
      assert.ok(Math.abs(rows - log.row_count) < exportBatchSize, `${log.row_count} leads for ${rows} rows received`);
      assert.equal(log.row_count % exportBatchSize, 0, 'whole batches');
    }

    // The log returns to its normal size once it is rewritten from its start, and no handle is left open.
    await writeSome(warm, searches[0]!, 20);
    await sleep(1500);
    await writeSome(warm, searches[0]!, 5);
    const wal = statSync(`${t.db.sqlitePath!}-wal`).size;
    assert.ok(wal <= walSizeLimitBytes, `write-ahead log ${wal} bytes`);
    // Connections closed while others hold locks on the file leave their descriptor in SQLite's list for
    // reuse: each stalled export's, and the checkpoint probe's above.
    await filesBackTo(filesBefore, stalled.length + 1);
  });

  /** Every socket and pipe closed again; database descriptors no more than SQLite keeps for reuse. */
  async function filesBackTo(before: { other: number; database: number }, closedConnections: number): Promise<void> {
    // Closing is asynchronous (threads end, sockets drain): wait for it a moment on a busy host.
    await until(async () => {
      const now = openFiles(t.db.sqlitePath!);
      return now.other <= before.other && now.database <= before.database + closedConnections;
    }, 10_000).catch(() => {});
    const now = openFiles(t.db.sqlitePath!);
    assert.ok(now.other <= before.other, `every socket of the exports is closed: ${now.other} open, ${before.other} before`);
    assert.ok(now.database <= before.database + closedConnections, `database descriptors: ${now.database}, ${before.database} before`);
  }

  async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
    const end = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > end) throw new Error(`not reached in ${ms} ms`);
      await sleep(100);
    }
  }

  test('clients that go away mid-download leave aborted exports whose leads are what they were sent', async () => {
    const accounts = await Promise.all(
      Array.from({ length: 5 }, () => createAccountWithToken(t.db, { scopes: ['search', 'export', 'places:read'] })),
    );
    const searches = await Promise.all(accounts.map(worldSearch));
    const filesBefore = openFiles(t.db.sqlitePath!);
    await Promise.all(
      accounts.map(async (a, i) => {
        const client = await requestExport(a, searches[i]!);
        let received = 0;
        await new Promise<void>((done) => {
          client.socket.on('data', (chunk: Buffer) => {
            received += chunk.length;
            if (received > 200_000) {
              client.socket.destroy();
              done();
            }
          });
        });
        await client.closed;
      }),
    );
    await until(async () => (await Promise.all(accounts.map(exportLog))).every((l) => l.status !== 'running'), 10_000);
    for (const a of accounts) {
      const log = await exportLog(a);
      assert.equal(log.status, 'aborted');
      assert.ok(log.row_count > 0 && log.row_count < total, `${log.row_count} of ${total}`);
      assert.equal(await leadCount(a), log.row_count);
    }
    await filesBackTo(filesBefore, accounts.length);
  });
});
