import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { after, test } from 'node:test';
import { openTestSqlite } from '../../../test/helpers/databases.ts';
import { startCheckpointer } from './checkpointer.ts';

const t = openTestSqlite();
after(() => t.dispose());

/** Writes about `pages` pages of rows in separate commits, as the server's saved searches do. */
function write(pages: number): void {
  const insert = t.db.sqlite!.prepare('INSERT INTO notes (body) VALUES (?)');
  for (let i = 0; i < pages; i++) insert.run('x'.repeat(3500));
}
const sizes = () => ({ db: statSync(t.path).size, wal: statSync(`${t.path}-wal`).size });
const autocheckpoint = () => t.db.sqlite!.pragma('wal_autocheckpoint', { simple: true });

test('moves WAL checkpoints to its own thread, and hands them back to SQLite when stopped', async () => {
  t.db.sqlite!.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)');
  const checkpointer = startCheckpointer(t.db, 50)!;
  assert.equal(autocheckpoint(), 0, 'no checkpoint inside a commit on the event loop');
  const before = sizes();
  write(1500);
  // Past SQLite's 1000-page threshold: the commits did not checkpoint (the thread may have begun to).
  assert.ok(sizes().wal > 1000 * 4096, JSON.stringify(sizes()));
  // The thread copies the log into the file.
  const deadline = Date.now() + 10_000;
  while (sizes().db < before.db + 1000 * 4096 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.ok(sizes().db >= before.db + 1000 * 4096, JSON.stringify(sizes()));
  await checkpointer.stop();
  assert.equal(autocheckpoint(), 1000);
  assert.equal(t.db.sqlite!.prepare('SELECT count(*) FROM notes').pluck().get(), 1500);
});

test('is not started for a database in memory', () => {
  const memory = { ...t.db, sqlitePath: undefined };
  assert.equal(startCheckpointer(memory), null);
});
