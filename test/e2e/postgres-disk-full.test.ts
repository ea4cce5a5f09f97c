import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { postgresPath } from '../../src/infra/storage.ts';
import { type RunningServer, startServer } from '../helpers/crash-drill.ts';
import { fillDisk } from '../helpers/fill-disk.ts';
import { type OwnPostgres, ownPostgresUnavailable, serveOnOwnPostgres, startOwnPostgres } from '../helpers/own-postgres.ts';

/**
 * PostgreSQL's own disk full (issue 37): a server of the test's own whose whole cluster (tables and
 * write-ahead log) sits on a tmpfs the test mounts (as root), `leadatlas serve` on it, and the tmpfs filled
 * to the last byte while clients write. PostgreSQL refuses to extend a table with SQLSTATE 53100, which
 * `serve` answers as 507 `disk_full`; should the write-ahead log need a segment it has not got, PostgreSQL
 * stops with a PANIC and starts again by itself (crash recovery), which `serve` answers as 503
 * `database_unavailable` meanwhile. Reads go on; every write acknowledged with a 2xx is there; `pg_amcheck`
 * finds no corruption; and once the filler is removed, writes succeed again without a restart of anything.
 */
const dir = mkdtempSync(join(tmpdir(), 'leadatlas-pg-disk-full-'));
chmodSync(dir, 0o755);
const disk = join(dir, 'disk');
const walDisk = join(dir, 'wal-disk');
mkdirSync(disk);
mkdirSync(walDisk);
function mountDisk(): string | false {
  const unavailable = ownPostgresUnavailable();
  if (unavailable) return unavailable;
  // The cluster copied onto it takes ~145 MB; the rest is the room the test fills.
  for (const [at, size] of [
    [disk, '200m'],
    [walDisk, '96m'],
  ] as const) {
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0755`, 'tmpfs', at], { encoding: 'utf8' });
    if (mounted.status !== 0)
      return `a tmpfs cannot be mounted here (${(mounted.stderr || mounted.error?.message || '').trim()}): run as root`;
  }
  return false;
}
const skip = mountDisk();
let postgres: OwnPostgres | undefined;
let server: RunningServer | undefined;

after(async () => {
  server?.child.kill('SIGKILL');
  if (server && server.child.exitCode === null) await new Promise((r) => server!.child.once('exit', r));
  postgres?.stop();
  for (const at of [disk, walDisk]) spawnSync('umount', [at]);
  rmSync(dir, { recursive: true, force: true });
});

interface Problem {
  status: number;
  reason?: string;
  path?: string;
  needed_bytes?: number;
  detail: string;
}

test('PostgreSQL on a full disk: a table that cannot grow answers 507 disk_full, a write-ahead log that cannot grow 503 while PostgreSQL recovers from its PANIC; reads are served, nothing acknowledged is lost or corrupt, writes resume once there is room', {
  skip,
  timeout: 180_000,
}, async () => {
  const started = performance.now();
  const phases: string[] = [];
  const mark = (name: string) => phases.push(`${name} ${((performance.now() - started) / 1000).toFixed(1)} s`);
  // No checkpoint during the test (it would recycle the log's segments): each new segment takes new room.
  postgres = await startOwnPostgres({
    dataDir: join(disk, 'pg'),
    walDir: join(walDisk, 'wal'),
    from: 'munich',
    settings: { max_wal_size: "'2GB'", checkpoint_timeout: "'1h'" },
  });
  const { env, authorization } = serveOnOwnPostgres(postgres, dir, 'pg-full@example.com', 'places:read,search,suppressions:write');
  mark('PostgreSQL and account ready');
  server = await startServer(env);
  mark('serve ready');
  const headers = { authorization, 'content-type': 'application/json' };
  const get = (path: string) => fetch(`${server!.base}${path}`, { headers, signal: AbortSignal.timeout(30_000) });
  const post = (path: string, body: unknown) =>
    fetch(`${server!.base}${path}`, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });

  const first = (await (await get('/api/v2/map/search?type=restaurant&city=M%C3%BCnchen&per_page=5')).json()) as {
    search_id: string;
    total: number;
    links: { next: string };
  };
  assert.ok(first.total > 5, JSON.stringify(first));

  const acknowledged = { suppressions: 0, searches: [] as string[] };
  const answers = { ok: 0, unavailable: 0, full: 0, slowestMs: 0 };
  let round = 0;
  /**
   * Writes (suppressions, 5,000 addresses a call, and saved searches) until `until` says stop or `limit`
   * writes were made; every answer must be a 2xx, a 507 disk_full or a 503 database_unavailable.
   */
  const write = async (until: (status: number) => boolean, limit: number): Promise<Problem | undefined> => {
    for (let i = 0; i < limit; i++) {
      const n = round++;
      const started = performance.now();
      const res =
        n % 2 === 0
          ? await post('/api/v1/user-api/suppressions', { entries: Array.from({ length: 5000 }, (_, k) => `pgfull-${n}-${k}@example.com`) })
          : await get(`/api/v2/map/search?bbox=11.5,48.1,11.6,${(48.15 + n / 10_000).toFixed(4)}&per_page=5`);
      const text = await res.text();
      answers.slowestMs = Math.max(answers.slowestMs, performance.now() - started);
      if (res.status < 300) {
        answers.ok++;
        if (n % 2 === 0) acknowledged.suppressions += 5000;
        else acknowledged.searches.push((JSON.parse(text) as { search_id: string }).search_id);
      } else {
        assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, text);
        const problem = JSON.parse(text) as Problem;
        if (res.status === 503) {
          assert.equal(problem.reason, 'database_unavailable', text);
          assert.ok(Number(res.headers.get('retry-after')) >= 1);
          answers.unavailable++;
        } else {
          assert.equal(res.status, 507, `a write on PostgreSQL's full disk answers 2xx, 507 or 503: ${res.status} ${text}`);
          assert.equal(problem.reason, 'disk_full');
          answers.full++;
        }
        if (until(res.status)) return problem;
        await sleep(100);
        continue;
      }
      if (until(res.status)) return undefined;
    }
    return undefined;
  };
  const next = new URL(first.links.next, 'http://x');
  const readsGoOn = async () => {
    assert.equal((await get(`${next.pathname}${next.search}`)).status, 200, 'the next page of a saved search');
    assert.equal((await get('/api/v2/countries')).status, 200);
  };
  const resumes = async (what: string) => {
    const at = Date.now();
    await write((status) => status < 300 || Date.now() - at > 20_000, 1000);
    const again = await post('/api/v1/user-api/suppressions', { entries: [`after-${what.replaceAll(' ', '-')}@example.com`] });
    assert.ok(again.status < 300, `writes succeed again once ${what} has room: ${again.status} ${await again.text()}`);
  };

  // 1. The tables' disk full: PostgreSQL cannot extend a table (SQLSTATE 53100), serve answers 507.
  const tables = join(disk, 'filler');
  fillDisk(tables);
  const refused = await write((status) => status === 507, 60);
  assert.ok(refused, `a write found the disk full\n${postgres.log().slice(-3000)}`);
  assert.equal(refused.path, postgresPath, refused.detail);
  assert.ok((refused.needed_bytes ?? 0) > 0);
  assert.match(refused.detail, /is full.*free at least/);
  assert.match(postgres.log(), /could not extend file .*No space left on device/, 'PostgreSQL said why');
  await readsGoOn();
  assert.equal((await get('/readyz')).status, 200, "serve cannot measure PostgreSQL's disk: it stays ready, for reads");
  rmSync(tables);
  await resumes('the tables');
  mark('tables full and freed');

  // 2. The write-ahead log's disk full: its spare segments used up (a switch to the next segment, 48 times),
  // the rest of its disk filled. PostgreSQL cannot write the log: the backend PANICs, the postmaster ends every
  // connection and starts a crash recovery, which must create a segment too; while the disk stays full the
  // recovery fails and the postmaster stops for good (it logs "aborting startup due to startup process failure").
  await postgres.query(
    Array.from({ length: 48 }, (_, i) => `INSERT INTO wal_burn VALUES (${i}); SELECT pg_switch_wal();`).join(' '),
    'leadatlas',
    'CREATE TABLE wal_burn (n integer)',
  );
  const wal = join(walDisk, 'filler');
  fillDisk(wal);
  const beforeWal = { ...answers };
  await write((status) => status === 503, 200);
  // After the PANIC PostgreSQL is down (recovering, or stopped while the disk stays full) and /readyz says so.
  // A recovery that found room (the failed segment's temporary file removed) can be over before /readyz asks:
  // then PostgreSQL's log says it accepts connections again, and `ok` is the truth.
  const ready = (await (await get('/readyz')).json()) as { checks?: { database?: string } };
  const sincePanic = postgres.log().slice(Math.max(0, postgres.log().lastIndexOf('PANIC')));
  assert.ok(
    ready.checks?.database === 'down' || /ready to accept connections/.test(sincePanic),
    `/readyz says the database is down, not ${ready.checks?.database}, while PostgreSQL is not back\n${sincePanic.slice(-2000)}`,
  );
  const fullSince = Date.now();
  await write(() => Date.now() - fullSince > 3000, 1000);
  assert.ok(answers.unavailable > beforeWal.unavailable, 'the PANIC answered 503 database_unavailable');
  assert.match(postgres.log(), /PANIC: {2}could not write to file "pg_wal\/xlogtemp\.\d+": No space left on device/);
  rmSync(wal);
  // What an operator (or a supervisor such as systemd) does once there is room: start PostgreSQL again if it stopped.
  let startedAgain = false;
  for (let i = 0; i < 50 && !startedAgain && !postgres.running(); i++) await sleep(100);
  if (!postgres.running()) {
    await postgres.ctl('-w', 'start');
    startedAgain = true;
  }
  await resumes('the write-ahead log');
  await readsGoOn();
  mark('write-ahead log full and freed');
  console.log(
    `write-ahead log full: ${answers.ok - beforeWal.ok} writes acknowledged, ${answers.full - beforeWal.full} × 507, ${answers.unavailable - beforeWal.unavailable} × 503; PostgreSQL stopped and was started again: ${startedAgain}\n${postgres
      .log()
      .split('\n')
      .filter((l) => /PANIC|startup process|aborting|shut down|ready to accept|redo/.test(l))
      .slice(-12)
      .join('\n')}`,
  );

  // Nothing acknowledged is lost, nothing refused was half-written, nothing is corrupt.
  const counted = await postgres.query<{ n: string }>("SELECT count(*) AS n FROM suppressions WHERE value LIKE 'pgfull-%'", 'leadatlas');
  assert.equal(Number(counted.rows[0]!.n), acknowledged.suppressions, 'every acknowledged suppression, and no part of a refused upload');
  const quoted = acknowledged.searches.map((s) => `'${s.replaceAll("'", "''")}'`).join(',');
  const searches = await postgres.query<{ n: string }>(
    `SELECT count(*) AS n FROM searches WHERE public_id IN (${quoted || "''"})`,
    'leadatlas',
  );
  assert.equal(Number(searches.rows[0]!.n), acknowledged.searches.length, 'every acknowledged saved search');
  const check = await postgres.amcheck('leadatlas');
  assert.equal(check.status, 0, `pg_amcheck: ${check.output}`);
  mark('checked');
  console.log(`answers: ${JSON.stringify(answers)}; ${phases.join(', ')}`);
});
