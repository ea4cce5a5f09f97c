import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningServer, startServer } from '../helpers/crash-drill.ts';
import { type OwnPostgres, ownPostgresUnavailable, serveOnOwnPostgres, startOwnPostgres } from '../helpers/own-postgres.ts';

/**
 * PostgreSQL restarted under load (issue 37), for real: a server of the test's own (test/helpers/own-postgres.ts),
 * `leadatlas serve` on it in a child process, four clients searching, then PostgreSQL restarted as `pg_ctl stop
 * -m fast` (the backends are told to stop: 57P01) or `-m immediate` (the postmaster and its backends are killed,
 * crash recovery at start), then `pg_ctl start` once `/readyz` has said so. Every answer is a 200 with the right total or a 503 problem document
 * (`database_unavailable`, `Retry-After`) that comes fast; `/readyz` says the database is down during the
 * restart; `serve` answers 200 again by itself, without a restart of its own.
 */
const skip = ownPostgresUnavailable() ?? false;
const dir = mkdtempSync(join(tmpdir(), 'leadatlas-pg-restart-'));
chmodSync(dir, 0o755);
let postgres: OwnPostgres | undefined;
let server: RunningServer | undefined;
let authorization = '';

before(async () => {
  if (skip) return;
  postgres = await startOwnPostgres({ dataDir: join(dir, 'pg'), from: 'munich' });
  let env: Record<string, string>;
  ({ env, authorization } = serveOnOwnPostgres(postgres, dir, 'restart@example.com', 'places:read,search'));
  server = await startServer(env);
});

after(async () => {
  server?.child.kill('SIGKILL');
  if (server && server.child.exitCode === null) await new Promise((r) => server!.child.once('exit', r));
  postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  ms: number;
  contentType: string;
  retryAfter: string | null;
  reason?: string;
  /** `/readyz`: what it says of the database. */
  database?: string;
  total?: number;
  body: string;
}

/** The slowest a refusal may be: the pool's connection timeout (2 s) and a loaded machine's slack. */
const slowestMs = 6000;
/** How soon after `pg_ctl start` returns `serve` must answer 200 again. */
const recoveryMs = 15_000;

const search = (per: number) => `/api/v2/map/search?type=restaurant&city=M%C3%BCnchen&per_page=${per}`;

async function ask(path: string): Promise<Answer> {
  const started = performance.now();
  const res = await fetch(`${server!.base}${path}`, { headers: { authorization }, signal: AbortSignal.timeout(30_000) });
  const body = await res.text();
  const answer: Answer = {
    status: res.status,
    ms: performance.now() - started,
    contentType: res.headers.get('content-type') ?? '',
    retryAfter: res.headers.get('retry-after'),
    body: body.slice(0, 300),
  };
  try {
    const json = JSON.parse(body) as { reason?: string; total?: number; checks?: { database?: string } };
    answer.reason = json.reason;
    answer.database = json.checks?.database;
    answer.total = json.total;
  } catch {
    // not JSON: the assertions below say so
  }
  return answer;
}

for (const mode of ['fast', 'immediate'] as const) {
  test(`pg_ctl stop -m ${mode} and start under load: 200 or a fast 503 database_unavailable, /readyz says down, and serve answers again by itself`, {
    skip,
    timeout: 120_000,
  }, async () => {
    const baseline = await ask(search(5));
    assert.equal(baseline.status, 200, baseline.body);
    assert.ok((baseline.total ?? 0) > 5);

    let running = true;
    const answers: Answer[] = [];
    const clients = Array.from({ length: 4 }, async (_, i) => {
      for (let n = 0; running; n++) answers.push(await ask(search(1 + ((n + i) % 20))));
    });
    const readiness: Answer[] = [];
    let restarting = true;
    const probe = (async () => {
      while (restarting) {
        readiness.push(await ask('/readyz'));
        await sleep(50);
      }
    })();

    await sleep(500);
    // The restart as its two halves, so that the probe sees the time PostgreSQL is away whatever its length: a
    // fast restart can be over before a /readyz that waits on a connection has its answer.
    await postgres!.ctl('-w', '-m', mode, 'stop');
    const downBy = performance.now() + 10_000;
    while (!readiness.some((r) => r.status === 503 && r.database === 'down') && performance.now() < downBy) await sleep(50);
    await postgres!.ctl('-w', 'start');
    restarting = false;
    await probe;
    const restartedAt = performance.now();
    let again = await ask(search(3));
    while (again.status !== 200 && performance.now() - restartedAt < recoveryMs) {
      await sleep(100);
      again = await ask(search(3));
    }
    const recoveredMs = performance.now() - restartedAt;
    running = false;
    await Promise.all(clients);

    assert.equal(
      again.status,
      200,
      `serve answers 200 again within ${recoveryMs} ms of the restart: ${again.body}\n${server!.output().slice(-3000)}`,
    );
    const refused = answers.filter((a) => a.status !== 200);
    assert.ok(refused.length > 0, `some of the ${answers.length} searches met the restart`);
    for (const a of refused) {
      assert.equal(a.status, 503, `an answer during the restart is 200 or 503: ${a.status} ${a.body}`);
      assert.match(a.contentType, /^application\/problem\+json/);
      assert.equal(a.reason, 'database_unavailable', a.body);
      assert.ok(Number(a.retryAfter) >= 1, `Retry-After: ${a.retryAfter}`);
    }
    for (const a of answers.filter((x) => x.status === 200)) assert.equal(a.total, baseline.total, 'a 200 carries the whole total');
    const slowest = Math.max(...answers.map((a) => a.ms));
    assert.ok(slowest < slowestMs, `no answer hangs: slowest ${Math.round(slowest)} ms`);
    assert.ok(
      readiness.some((r) => r.status === 503 && r.database === 'down'),
      `/readyz said the database was down: ${readiness.map((r) => `${r.status}/${r.database}`).join(' ')}`,
    );
    const ready = await ask('/readyz');
    assert.equal(ready.status, 200, ready.body);
    assert.equal(ready.database, 'ok');
    console.log(
      `restart -m ${mode}: ${answers.length} searches, ${refused.length} answered 503, slowest ${Math.round(slowest)} ms, 200 again ${Math.round(recoveredMs)} ms after pg_ctl returned`,
    );
  });
}
