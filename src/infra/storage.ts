import { statfsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { AppError } from './errors.ts';

/**
 * The one place that knows what a full disk looks like, whoever hit it: the file system (`ENOSPC`, `EDQUOT`),
 * SQLite (`SQLITE_FULL`: "database or disk is full") or PostgreSQL (SQLSTATE 53100 `disk_full`). Each
 * becomes one problem, `insufficient_storage` (HTTP 507), naming the path that is full, the bytes free
 * there and the bytes needed; the CLI prints the same sentence.
 */
export function isDiskFull(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL' || code === '53100') return true;
  if (error instanceof AppError) return error.code === 'insufficient_storage';
  // Errors that crossed a worker thread keep their message only.
  if (/database or disk is full|no space left on device/i.test(error.message)) return true;
  const cause = (error as { cause?: unknown }).cause;
  return cause !== undefined && cause !== error && isDiskFull(cause);
}

/** A place this installation writes to: the database's folder, the export jobs' files, a backup's folder. */
export interface StoragePlace {
  /** What is written there, for the messages: `database`, `exports`, `backup`. */
  label: string;
  path: string;
}

/** Where an installation writes, and how much room each place must keep free to be called ready. */
export interface Storage {
  /** The local places: the SQLite database's folder (not PostgreSQL's: its disk is the server's), the export files. */
  places: StoragePlace[];
  /** What a database write that finds the disk full names: the SQLite file, or PostgreSQL's server. */
  databasePath: string;
  minFreeBytes: number;
}

/** The storage of an installation: its database (`sqlitePath`, none for PostgreSQL) and its export files' folder. */
export function installationStorage(sqlitePath: string | undefined, exportDataDir: string, minFreeMb: number): Storage {
  const places: StoragePlace[] = [{ label: 'exports', path: resolve(exportDataDir) }];
  if (sqlitePath) places.unshift({ label: 'database', path: dirname(sqlitePath) });
  return { places, databasePath: sqlitePath ?? postgresPath, minFreeBytes: minFreeMb * 1048576 };
}

/** How a full disk of the PostgreSQL server is named: its files are not on this machine to measure. */
export const postgresPath = 'the PostgreSQL server (DATABASE_URL)';

/** Bytes a non-privileged process may still write on the file system holding `path` (its nearest existing folder). */
export function freeBytes(path: string): number | null {
  let at = resolve(path);
  for (;;) {
    try {
      const s = statfsSync(at);
      return s.bavail * s.bsize;
    } catch {
      const up = dirname(at);
      if (up === at) return null;
      at = up;
    }
  }
}

export interface DiskState {
  place: StoragePlace;
  freeBytes: number | null;
  full: boolean;
}

/** Each place with its free bytes; full when fewer than `minFreeBytes` are left (readiness, `/readyz`). */
export function diskStates(storage: Storage): DiskState[] {
  return storage.places.map((place) => {
    const free = freeBytes(place.path);
    return { place, freeBytes: free, full: free !== null && free < storage.minFreeBytes };
  });
}

const mb = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MB`;

/**
 * The problem for a write that found the disk full at `path` (for SQLite and the file system; PostgreSQL's
 * disk is the server's, named as such). `neededBytes`: what the operation needs at least, when known.
 */
export function insufficientStorage(path: string, neededBytes: number, what: string): AppError {
  const free = path === postgresPath ? null : freeBytes(path);
  const freeText = free === null ? '' : `; ${mb(free)} free there`;
  return new AppError(
    'insufficient_storage',
    `${what}: the disk holding ${path} is full${freeText}; free at least ${mb(neededBytes)} there and retry`,
    { reason: 'disk_full', path, free_bytes: free, needed_bytes: neededBytes },
    { 'retry-after': '60' },
  );
}

/**
 * `error` as the insufficient-storage problem when it is a full disk (its own path when the file system
 * names one, else `fallbackPath`), otherwise `error` itself.
 */
export function asDiskFull(error: unknown, fallbackPath: string, neededBytes: number, what: string): unknown {
  if (!isDiskFull(error) || error instanceof AppError) return error;
  const path = (error as { path?: unknown }).path;
  return insufficientStorage(typeof path === 'string' ? path : fallbackPath, neededBytes, what);
}

/** Throws the insufficient-storage problem before an operation that needs `neededBytes` free at `path` starts. */
export function assertRoomFor(path: string, neededBytes: number, what: string): void {
  const free = freeBytes(path);
  if (free !== null && free < neededBytes) throw insufficientStorage(path, neededBytes, what);
}
