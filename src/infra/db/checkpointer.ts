import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Db } from './database.ts';

/**
 * WAL checkpoints off the event loop. SQLite checkpoints from inside a commit once the write-ahead log
 * passes 1000 pages (`wal_autocheckpoint`): whichever request happens to commit then copies megabytes
 * into the database file while every other request waits. The server writes on every search (saved
 * searches) and export (leads), so it turns that off on its connection and checkpoints from a thread
 * of its own: PASSIVE, which never waits for readers or the writer, every `intervalMs`.
 */
export interface Checkpointer {
  stop(): Promise<void>;
}

const workerSource = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 0');
const checkpoint = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Busy (another checkpoint): the next tick tries again.
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

/** Starts checkpointing an SQLite file database from a worker thread; null for PostgreSQL and `:memory:`. */
export function startCheckpointer(db: Db, intervalMs = 1000): Checkpointer | null {
  if (db.dialect !== 'sqlite' || !db.sqlite || !db.sqlitePath) return null;
  const handle = db.sqlite;
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(workerSource, { eval: true, workerData: { driver, path: db.sqlitePath, intervalMs } });
  worker.unref();
  handle.pragma('wal_autocheckpoint = 0');
  const restore = () => {
    if (handle.open) handle.pragma('wal_autocheckpoint = 1000');
  };
  let running = true;
  const exited = new Promise<void>((done) => worker.once('exit', () => done())).then(() => {
    running = false;
    restore();
  });
  // A thread that cannot open the file or dies leaves checkpoints to SQLite again, never to nobody.
  worker.on('error', () => {});
  return {
    stop() {
      if (running) {
        // Kept alive until the thread has made its last checkpoint and closed its connection.
        worker.ref();
        worker.postMessage('stop');
      }
      return exited;
    },
  };
}

/**
 * For a server process of a cluster that does not checkpoint (`WEB_CONCURRENCY`, app.ts): its commits do not
 * checkpoint either, as the checkpointing process's thread copies every process's commits (the log is the
 * database's, not a connection's). Nothing to do for PostgreSQL and `:memory:`; null: no thread of its own to stop.
 */
export function checkpointElsewhere(db: Db): null {
  if (db.dialect === 'sqlite' && db.sqlite && db.sqlitePath) db.sqlite.pragma('wal_autocheckpoint = 0');
  return null;
}
