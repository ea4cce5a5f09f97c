import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { runCli, spawnCli, startCliImport } from '../helpers/cli.ts';
import { postgresAdminUrl } from '../helpers/databases.ts';
import { copySqliteTemplate } from '../helpers/templates.ts';

const michelin = resolve(import.meta.dirname, '../../../shared/data/places/michelin-guide-2022-6510.csv.gz');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Opens a backup as any SQLite client would, checks it, and returns what `read` finds in it. */
function readBackup<T>(path: string, read: (db: SQLite.Database) => T): T {
  const db = new SQLite(path, { readonly: true, fileMustExist: true });
  try {
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    return read(db);
  } finally {
    db.close();
  }
}

describe('leadatlas db backup', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-backup-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('copies a database while an import writes to it: the copy holds whole batches, each with its run counters', async () => {
    const path = join(dir, 'live.db');
    const url = `sqlite:${path}`;
    const backup = join(dir, 'live-backup.db');
    // With the reference data already (what the import would load first), so the import writes places at once.
    await copySqliteTemplate('prepared', path);
    const migrated = runCli(['migrate'], { DATABASE_URL: url });
    assert.equal(migrated.status, 0, migrated.stderr);
    // Ten places a transaction: hundreds of commits while the backup runs.
    const running = startCliImport(michelin, url, 10);
    const live = new SQLite(path, { readonly: true });
    try {
      while ((live.prepare('SELECT count(*) FROM places').pluck().get() as number) < 200) {
        assert.equal(running.child.exitCode, null, `the import ended early: ${running.stderr()}`);
        await sleep(50);
      }
    } finally {
      live.close();
    }
    const out = runCli(['db', 'backup', backup], { DATABASE_URL: url });
    assert.equal(out.status, 0, out.stderr);
    assert.match(out.stderr, /backup checked and written/);
    const [code] = await running.exited;
    assert.equal(code, 0, running.stderr());

    const copied = readBackup(backup, (db) => ({
      places: db.prepare('SELECT count(*) FROM places').pluck().get() as number,
      indexed: db.prepare('SELECT count(*) FROM places_fts').pluck().get() as number,
      counted: db.prepare('SELECT coalesce(sum(imported_count), 0) FROM import_runs').pluck().get() as number,
      journal: db.pragma('journal_mode', { simple: true }),
    }));
    const final = readBackup(path, (db) => db.prepare('SELECT count(*) FROM places').pluck().get() as number);
    assert.ok(copied.places >= 200 && copied.places < final, `the backup was taken during the import: ${copied.places} of ${final} places`);
    assert.equal(copied.indexed, copied.places, 'every place of the copy is in its full-text index');
    assert.equal(copied.counted, copied.places, "the run's counters agree with the places of the copy");
    assert.equal(copied.journal, 'delete', 'one self-contained file, no write-ahead log beside it');
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.startsWith('live-backup')),
      ['live-backup.db'],
    );
  });

  test('a backup killed on the way leaves the previous backup intact; the next one removes its partial file', async () => {
    const path = join(dir, 'big.db');
    const backup = join(dir, 'big-backup.db');
    const addBlobs = (thousands: number) => {
      const db = new SQLite(path);
      db.pragma('journal_mode = WAL');
      db.exec('CREATE TABLE IF NOT EXISTS blobs (id integer PRIMARY KEY, data blob NOT NULL)');
      const add = db.prepare('INSERT INTO blobs (data) SELECT randomblob(4000) FROM json_each(?)');
      for (let i = 0; i < thousands; i++) add.run(JSON.stringify(Array.from({ length: 1000 }, () => 0)));
      db.close();
    };
    addBlobs(1);
    const env = { DATABASE_URL: `sqlite:${path}` };
    const first = runCli(['db', 'backup', backup], env);
    assert.equal(first.status, 0, first.stderr);

    // About 200 MB: long enough a backup to be cut off in the middle.
    addBlobs(50);
    const child = spawnCli(['db', 'backup', backup], env);
    const partial = () => readdirSync(dir).filter((f) => f.startsWith('big-backup.db.partial-'));
    const deadline = Date.now() + 60_000;
    while (partial().length === 0) {
      assert.ok(Date.now() < deadline && child.exitCode === null, 'the backup started writing its partial file');
      await sleep(5);
    }
    child.kill('SIGKILL');
    await new Promise((done) => child.once('exit', done));

    assert.equal(
      readBackup(backup, (b) => b.prepare('SELECT count(*) FROM blobs').pluck().get()),
      1000,
      'the previous backup, whole',
    );
    assert.ok(partial().length > 0, 'the cut-off copy has a name of its own');
    const next = runCli(['db', 'backup', backup], env);
    assert.equal(next.status, 0, next.stderr);
    assert.deepEqual(partial(), [], 'the next backup removes the partial file of the killed one');
    assert.equal(
      readBackup(backup, (b) => b.prepare('SELECT count(*) FROM blobs').pluck().get()),
      51_000,
    );
    assert.ok(!existsSync(`${backup}-wal`));
  });

  test('refuses the database itself as the backup file, and a directory that does not exist', () => {
    const path = join(dir, 'small.db');
    new SQLite(path).close();
    for (const file of [path, join(dir, 'missing', 'b.db')]) {
      const out = runCli(['db', 'backup', file], { DATABASE_URL: `sqlite:${path}` });
      assert.equal(out.status, 2, out.stderr);
      assert.match(out.stderr, /FILE: (is the database itself|its directory does not exist)/);
    }
  });

  test('on PostgreSQL, points to pg_dump', () => {
    const out = runCli(['db', 'backup', join(dir, 'pg.db')], { DATABASE_URL: postgresAdminUrl });
    assert.equal(out.status, 2, out.stderr);
    assert.match(out.stderr, /pg_dump/);
    assert.ok(!existsSync(join(dir, 'pg.db')));
  });
});
