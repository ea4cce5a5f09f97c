import { closeSync, fsyncSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { AppError } from '../errors.ts';
import { asDiskFull, assertRoomFor } from '../storage.ts';
import { byDialect } from './dialect.ts';

export interface BackupResult {
  path: string;
  bytes: number;
  pages: number;
}

/** Where a backup is written until it is complete and checked: beside the target (a rename stays on one file system). */
const partialSuffix = '.partial-';
const partialName = (target: string) => `${target}${partialSuffix}${process.pid}`;

/**
 * Backups of `target` left by a process that is gone (cut off by `kill -9`, a crash, a power cut): removed
 * before a new one starts. Never a backup: a backup only ever has the target's own name.
 */
function removeAbandonedPartials(target: string): void {
  const prefix = basename(target) + partialSuffix;
  for (const name of readdirSync(dirname(target))) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(name.slice(prefix.length).split('-')[0]);
    if (Number.isInteger(pid) && pid !== process.pid && processAlive(pid)) continue;
    rmSync(join(dirname(target), name), { force: true });
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

/** Flushes a file (or a directory's entries) to the disk, so that a rename is never seen before the data it names. */
function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * SQLite's online backup into `target`, while other connections (a running server, an import) go on
 * reading and writing. All pages are copied in one backup step, which reads one snapshot of the database
 * (in WAL mode a read transaction, which writers do not wait for): copied page by page in several steps,
 * SQLite starts over after every write of another connection and a busy server would keep it from ever
 * finishing.
 *
 * Written to `FILE.partial-PID` beside the target, checked (`PRAGMA integrity_check`), switched to a
 * rollback journal (one self-contained file, no `-wal` beside it), synced, and only then renamed to
 * `FILE`: a backup cut off at any point leaves the previous `FILE` as it was, and a partial file under
 * another name, removed by the next backup.
 */
async function backupSqlite(source: SQLite.Database, sourcePath: string | undefined, file: string): Promise<BackupResult> {
  const target = resolve(file);
  const bad = (message: string) => new AppError('validation_failed', `${file}: ${message}`, { errors: [{ field: 'FILE', message }] });
  if (!isDirectory(dirname(target))) throw bad('its directory does not exist');
  if (sourcePath !== undefined && [sourcePath, `${sourcePath}-wal`, `${sourcePath}-shm`].includes(target))
    throw bad('is the database itself');
  if (isDirectory(target)) throw bad('is a directory');
  removeAbandonedPartials(target);
  const partial = partialName(target);
  rmSync(partial, { force: true });
  // The copy is as large as the database's pages; refused at once rather than after writing most of it.
  const needed = Number(source.pragma('page_count', { simple: true })) * Number(source.pragma('page_size', { simple: true }));
  assertRoomFor(dirname(target), needed, `db backup ${file}`);
  try {
    const { totalPages } = await source.backup(partial, { progress: () => 0x7fffffff });
    const copy = new SQLite(partial);
    try {
      const problems = copy.pragma('integrity_check', { simple: false }) as Array<{ integrity_check: string }>;
      if (problems.length !== 1 || problems[0]!.integrity_check !== 'ok') {
        throw new Error(`the copy fails its integrity check: ${problems.map((p) => p.integrity_check).join('; ')}`);
      }
      copy.pragma('journal_mode = DELETE');
    } finally {
      copy.close();
    }
    fsyncPath(partial);
    renameSync(partial, target);
    fsyncPath(dirname(target));
    return { path: target, bytes: statSync(target).size, pages: totalPages };
  } catch (error) {
    for (const leftover of [partial, `${partial}-journal`, `${partial}-wal`, `${partial}-shm`]) rmSync(leftover, { force: true });
    throw asDiskFull(error, dirname(target), needed, `db backup ${file}`);
  }
}

/** A consistent copy of the database in one file (`leadatlas db backup FILE`); PostgreSQL has pg_dump for that. */
export const backupDatabase = byDialect<(file: string) => Promise<BackupResult>>({
  sqlite: (db) => (file) => backupSqlite(db.sqlite, db.sqlitePath, file),
  postgres: () => async () => {
    throw new AppError(
      'validation_failed',
      'db backup copies an SQLite database; back up PostgreSQL with its own tools: pg_dump --format=custom --file=FILE DATABASE_URL (see docs/operations.md)',
      { errors: [{ field: 'DATABASE_URL', message: 'a PostgreSQL database: use pg_dump' }] },
    );
  },
});
