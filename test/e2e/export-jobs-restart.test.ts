import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../../src/infra/db/database.ts';
import { createAccountWithToken } from '../helpers/accounts.ts';
import { freePort, runCli, spawnCli } from '../helpers/cli.ts';
import { openTestPostgres, type TestDatabase } from '../helpers/databases.ts';
import { munichExtract } from '../helpers/exports.ts';
import { copySqliteTemplate } from '../helpers/templates.ts';

/** `leadatlas ARGS…` that must succeed: its standard output. */
function cli(args: string[], env: Record<string, string>): string {
  const out = runCli(args, env, 300_000);
  assert.equal(out.status, 0, `${args.join(' ')}: ${out.stderr}`);
  return out.stdout;
}

async function eventually<T>(what: string, check: () => Promise<T | undefined>, limitMs = 120_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * `leadatlas serve` as a real child process, killed with SIGKILL while it writes an export job and while
 * a webhook delivery waits for its next attempt; a second server on the same database finishes both.
 */
for (const dialect of ['sqlite', 'postgres'] as const)
  describe(`export jobs survive a kill -9 of their server (${dialect})`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'leadatlas-jobs-e2e-'));
    const dataDir = join(dir, 'exports');
    let pgSchema: TestDatabase | undefined;
    const env: Record<string, string> = {
      DATABASE_URL: `sqlite:${join(dir, 'leadatlas.db')}`,
      HOST: '127.0.0.1',
      IMPORT_DEMO_DATA: 'false',
      EXPORT_DATA_DIR: dataDir,
      EXPORT_JOB_LEASE: '2',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_BASE_MS: '1500',
      // One read thread (SQLite; PostgreSQL reads inline): reads still leave the event loop as in production; a
      // second thread adds start-up work to each server, not a case.
      DB_READ_WORKERS: '1',
      // The whole-extract search can run past the default budget on a host loaded by other files; the budget is
      // time-budget.test.ts's subject, not this one's.
      SEARCH_TIME_BUDGET_MS: '60000',
    };
    const servers: ChildProcess[] = [];
    let receiverStatus = 500;
    const received: string[] = [];
    const hook = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received.push(String(req.headers['leadatlas-delivery']));
        res.statusCode = receiverStatus;
        res.end();
      });
    });
    let authorization = '';

    async function serve(extra: Record<string, string>): Promise<{ base: string; child: ChildProcess }> {
      const port = await freePort();
      const child = spawnCli(['serve'], { ...env, PORT: String(port), ...extra }, ['ignore', 'ignore', 'pipe']);
      servers.push(child);
      let stderr = '';
      child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
      const base = `http://127.0.0.1:${port}`;
      await eventually(
        'the server to answer',
        async () => {
          if (child.exitCode !== null) assert.fail(`serve exited with ${child.exitCode}: ${stderr}`);
          return (
            (await fetch(`${base}/healthz`).then(
              (r) => r.ok,
              () => false,
            )) || undefined
          );
        },
        240_000,
      );
      return { base, child };
    }

    before(async () => {
      // Migrated and with the reference data (copies of the templates), as the first import would leave it.
      if (dialect === 'postgres') {
        const pg = await openTestPostgres('prepared');
        pgSchema = pg;
        env.DATABASE_URL = pg.url;
      } else await copySqliteTemplate('prepared', join(dir, 'leadatlas.db'));
      await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
      cli(['import', munichExtract], env);
      // The account and token are written here, not by `leadatlas user create` and `token create`: two processes
      // fewer (auth.cli.test.ts runs those commands on SQLite, restore-drill.test.ts on PostgreSQL).
      const db = openDatabase(env.DATABASE_URL!);
      try {
        ({ authorization } = await createAccountWithToken(db, { email: 'jobs@example.com', scopes: ['search', 'export'] }));
      } finally {
        await db.close();
      }
    });

    after(async () => {
      for (const s of servers) if (s.exitCode === null && s.signalCode === null) s.kill('SIGKILL');
      await new Promise<void>((r) => hook.close(() => r()));
      await pgSchema?.dispose();
      rmSync(dir, { recursive: true, force: true });
    });

    test('a job running at kill -9 is run again from scratch on the next start: one file, equal to the synchronous export, leads and quota counted once', async () => {
      // Paced, so the job is still writing when the server is killed.
      const first = await serve({ EXPORT_JOB_ROWS_PER_SECOND: '400' });
      const call = async (base: string, path: string, init: RequestInit = {}) =>
        fetch(`${base}${path}`, { ...init, headers: { authorization, 'content-type': 'application/json', ...init.headers } });
      const all = (await (await call(first.base, '/api/v2/map/search?bbox=-180,-90,180,90&per_page=1')).json()) as {
        search_id: string;
        total: number;
      };
      const cafes = (await (await call(first.base, '/api/v2/map/search?type=cafe&city=M%C3%BCnchen&per_page=1')).json()) as {
        search_id: string;
        total: number;
      };
      assert.ok(all.total > 2000, `the whole extract: ${JSON.stringify(all)}`);
      const hookUrl = `http://127.0.0.1:${(hook.address() as { port: number }).port}/hook`;

      // A small job whose webhook the receiver refuses (500) until after the restart.
      const small = (await (
        await call(first.base, '/api/v2/exports', {
          method: 'POST',
          body: JSON.stringify({ search_id: cafes.search_id, webhook_url: hookUrl }),
        })
      ).json()) as { id: string };
      const big = (await (
        await call(first.base, '/api/v2/exports', { method: 'POST', body: JSON.stringify({ search_id: all.search_id, format: 'csv' }) })
      ).json()) as { id: string };
      await eventually('a failed webhook attempt and the big job half-way', async () => {
        const job = (await (await call(first.base, `/api/v2/exports/${big.id}`)).json()) as { status: string; rows: number };
        return received.length >= 1 && job.status === 'running' && job.rows >= 1000 && job.rows < all.total ? true : undefined;
      });
      first.child.kill('SIGKILL');
      await new Promise((r) => first.child.once('exit', r));
      assert.ok(
        readdirSync(dataDir).some((n) => n.startsWith(`${big.id}.`) && n.endsWith('.tmp')),
        'the killed attempt left its partial file',
      );

      receiverStatus = 200;
      const second = await serve({});
      const done = await eventually('the big job to end', async () => {
        const job = (await (await call(second.base, `/api/v2/exports/${big.id}`)).json()) as {
          status: string;
          rows: number;
          attempts: number;
          download: { url: string } | null;
        };
        return job.status === 'succeeded' || job.status === 'failed' ? job : undefined;
      });
      assert.equal(done.status, 'succeeded');
      assert.equal(done.rows, all.total);
      assert.equal(done.attempts, 2, 'started once, then once again after the kill');
      assert.deepEqual(
        readdirSync(dataDir).filter((n) => n.startsWith(`${big.id}.`)),
        [`${big.id}.csv`],
        'the partial file is gone',
      );

      const db = openDatabase(env.DATABASE_URL!);
      try {
        const leads = await db.kysely
          .selectFrom('leads')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        const smallRows = ((await (await call(second.base, `/api/v2/exports/${small.id}`)).json()) as { rows: number }).rows;
        // Every cafe of the extract is also in the whole-extract search.
        assert.equal(Number(leads.n), all.total, 'each place once, however many attempts wrote it');
        const usage = await db.kysely.selectFrom('export_row_usage').select('row_count').executeTakeFirstOrThrow();
        assert.equal(Number(usage.row_count), all.total + smallRows, "the dead attempt's rows were given back to the quota");
        const exportsOfBig = await db.kysely
          .selectFrom('exports')
          .select(['status', 'row_count'])
          .where('search_id', '=', all.search_id)
          .orderBy('id')
          .execute();
        assert.deepEqual(
          exportsOfBig.map((e) => e.status),
          ['aborted', 'done'],
        );

        // The small job's webhook: refused before the kill, delivered by the second server.
        const delivery = await eventually('the webhook to be delivered', async () => {
          const d = await db.kysely.selectFrom('webhook_deliveries').selectAll().executeTakeFirst();
          return d?.status === 'succeeded' ? d : undefined;
        });
        const attempts = await db.kysely
          .selectFrom('webhook_attempts')
          .select(['response_status'])
          .where('delivery_id', '=', delivery.id)
          .orderBy('attempt')
          .execute();
        assert.equal(attempts[0]!.response_status, 500);
        assert.equal(attempts.at(-1)!.response_status, 200);
        assert.ok(received.every((id) => id === delivery.public_id));
      } finally {
        await db.close();
      }

      const file = Buffer.from(await (await fetch(done.download!.url)).arrayBuffer());
      const sync = Buffer.from(await (await call(second.base, `/api/v2/map/export?search_id=${all.search_id}&format=csv`)).arrayBuffer());
      assert.ok(file.equals(sync), "the resumed job's file equals the synchronous export");
      assert.ok(existsSync(join(dataDir, `${big.id}.csv`)));
      second.child.kill('SIGTERM');
      await new Promise((r) => second.child.once('exit', r));
      assert.equal(second.child.exitCode, 0);
    });
  });
