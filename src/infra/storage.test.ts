import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { AppError } from './errors.ts';
import { asDiskFull, assertRoomFor, diskStates, installationStorage, isDiskFull, postgresPath } from './storage.ts';

const withCode = (message: string, code: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), { code, ...extra });

test('a full disk is recognised from the file system, SQLite, PostgreSQL and a message that crossed a thread', () => {
  assert.ok(isDiskFull(withCode('write', 'ENOSPC')));
  assert.ok(isDiskFull(withCode('quota', 'EDQUOT')));
  assert.ok(isDiskFull(withCode('database or disk is full', 'SQLITE_FULL')));
  assert.ok(isDiskFull(withCode('could not extend file', '53100')));
  assert.ok(isDiskFull(new Error('database or disk is full')));
  assert.ok(isDiskFull(new Error('wrapped', { cause: withCode('x', 'ENOSPC') })));
  assert.equal(isDiskFull(withCode('busy', 'SQLITE_BUSY')), false);
  assert.equal(isDiskFull(withCode('refused', 'ECONNREFUSED')), false);
  assert.equal(isDiskFull('ENOSPC'), false);
});

test('a full disk becomes a 507 problem naming the path, the bytes free and the bytes needed; other errors pass through', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-storage-'));
  try {
    const problem = asDiskFull(withCode('write', 'ENOSPC', { path: join(dir, 'job.tmp') }), '/elsewhere', 64 * 1048576, 'export job job_x');
    assert.ok(problem instanceof AppError);
    assert.equal(problem.status, 507);
    assert.equal(problem.extras.path, join(dir, 'job.tmp'), 'the path the file system named');
    assert.equal(problem.extras.needed_bytes, 64 * 1048576);
    assert.equal(typeof problem.extras.free_bytes, 'number');
    assert.match(
      problem.message,
      /^export job job_x: the disk holding .* is full; .* MB free there; free at least 64\.0 MB there and retry$/,
    );
    const pgProblem = asDiskFull(withCode('disk full', '53100'), postgresPath, 1, 'POST /x') as AppError;
    assert.equal(pgProblem.extras.free_bytes, null, "PostgreSQL's disk is not measured from here");
    const other = withCode('busy', 'SQLITE_BUSY');
    assert.equal(asDiskFull(other, dir, 1, 'x'), other);
    assert.throws(
      () => assertRoomFor(dir, Number.MAX_SAFE_INTEGER, 'db backup b.db'),
      (e: AppError) => e.code === 'insufficient_storage',
    );
    assert.doesNotThrow(() => assertRoomFor(dir, 1, 'db backup b.db'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the places of an installation: the SQLite folder and the export folder, full below the minimum', () => {
  const sqlite = installationStorage('/srv/la/leadatlas.db', '/srv/la/exports', 64);
  assert.deepEqual(
    sqlite.places.map((p) => p.label),
    ['database', 'exports'],
  );
  const pgStorage = installationStorage(undefined, tmpdir(), 0);
  assert.equal(pgStorage.databasePath, postgresPath);
  assert.deepEqual(
    diskStates(pgStorage).map((d) => [d.place.label, d.full]),
    [['exports', false]],
  );
  assert.equal(diskStates({ ...pgStorage, minFreeBytes: Number.MAX_SAFE_INTEGER })[0]!.full, true);
});
