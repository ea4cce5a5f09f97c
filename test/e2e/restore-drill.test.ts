import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { importFiles } from '../../src/bootstrap.ts';
import { runCli } from '../helpers/cli.ts';
import { prepareInstallation, type RunningServer, startServer } from '../helpers/crash-drill.ts';
import { openTestPostgres, postgresAdminUrl } from '../helpers/databases.ts';
import { munichExtract } from '../helpers/exports.ts';

/**
 * The restore drill (issue 37): a backup taken while the server writes (suppressions, saved searches)
 * restores into a new installation that answers the same searches with the same totals and still knows
 * the saved searches made before the backup. SQLite through `leadatlas db backup`; PostgreSQL through
 * `pg_dump --format=custom` and `pg_restore` into a new database, as docs/operations.md says.
 */
const searches = ['type=restaurant&city=M%C3%BCnchen', 'type=cafe&city=M%C3%BCnchen', 'type=bar', 'bbox=11.55,48.12,11.6,48.15'];
const servers: RunningServer[] = [];
const dir = mkdtempSync(join(tmpdir(), 'leadatlas-restore-drill-'));
after(() => {
  for (const s of servers) s.child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function serve(env: Record<string, string>): Promise<RunningServer> {
  const server = await startServer(env);
  servers.push(server);
  return server;
}

interface Answer {
  search_id: string;
  total: number;
  links: { next: string };
}

/** The searches on `server`: their answers, and suppressions added all along by a writer until `stop()`. */
async function searchAll(server: RunningServer, authorization: string): Promise<Answer[]> {
  const headers = { authorization };
  return Promise.all(
    searches.map(async (q) => (await (await fetch(`${server.base}/api/v2/map/search?${q}&per_page=2`, { headers })).json()) as Answer),
  );
}

function writeMeanwhile(server: RunningServer, authorization: string): { stop(): Promise<number> } {
  let running = true;
  let written = 0;
  const loop = (async () => {
    for (let i = 0; running; i++) {
      const res = await fetch(`${server.base}/api/v1/user-api/suppressions`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ entries: Array.from({ length: 200 }, (_, k) => `restore-${i}-${k}@example.com`) }),
      });
      await res.text();
      if (res.ok) written++;
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return written;
    },
  };
}

/** Checks the restored server against the answers of the original. */
async function sameAnswers(restored: RunningServer, authorization: string, before: Answer[]): Promise<void> {
  const after = await searchAll(restored, authorization);
  assert.deepEqual(
    after.map((a) => a.total),
    before.map((b) => b.total),
    'the same searches, the same totals',
  );
  for (const b of before) {
    const next = new URL(b.links.next, 'http://x');
    const page = await fetch(`${restored.base}${next.pathname}${next.search}`, { headers: { authorization } });
    assert.equal(page.status, 200, `the saved search ${b.search_id} pages on the restored installation`);
  }
}

describe('a backup taken under load restores into a new installation that answers alike', { timeout: 300_000 }, () => {
  test('SQLite: leadatlas db backup', async () => {
    mkdirSync(join(dir, 'sqlite'));
    const installation = await prepareInstallation(join(dir, 'sqlite'));
    try {
      const server = await serve(installation.env);
      const before = await searchAll(server, installation.authorization);
      const writer = writeMeanwhile(server, installation.authorization);
      const backup = runCli(['db', 'backup', join(dir, 'backup.db')], installation.env);
      const written = await writer.stop();
      assert.equal(backup.status, 0, backup.stderr);
      assert.ok(written > 0, 'the server wrote while the backup ran');

      mkdirSync(join(dir, 'restored'));
      execFileSync('cp', [join(dir, 'backup.db'), join(dir, 'restored', 'leadatlas.db')]);
      const restored = await serve({
        ...installation.env,
        DATABASE_URL: `sqlite:${join(dir, 'restored', 'leadatlas.db')}`,
        EXPORT_DATA_DIR: join(dir, 'restored', 'exports'),
      });
      await sameAnswers(restored, installation.authorization, before);
      assert.deepEqual(
        readdirSync(dir).filter((n) => n.includes('.partial-')),
        [],
      );
    } finally {
      await installation.close();
    }
  });

  test('PostgreSQL: pg_dump --format=custom, pg_restore into a new database', async () => {
    const source = await openTestPostgres('prepared');
    const restoredName = `la_t_restore_${Date.now().toString(36)}`;
    const admin = new pg.Client({ connectionString: postgresAdminUrl });
    await admin.connect();
    try {
      await importFiles(source.db, [munichExtract]);
      const env = {
        DATABASE_URL: source.url,
        HOST: '127.0.0.1',
        IMPORT_DEMO_DATA: 'false',
        EXPORT_DATA_DIR: join(dir, 'pg-exports'),
        RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000',
        QUOTA_REQUESTS_PER_DAY: '1000000000',
        SEARCH_TIME_BUDGET_MS: '60000',
      };
      const cli = (args: string[]) => {
        const out = runCli(args, env);
        assert.equal(out.status, 0, out.stderr);
        return out.stdout.trim();
      };
      cli(['user', 'create', '--email', 'restore@example.com']);
      const authorization = `Bearer ${cli(['token', 'create', '--user', 'restore@example.com', '--name', 'r', '--scopes', 'search,suppressions:write'])}`;
      const server = await serve(env);
      const before = await searchAll(server, authorization);
      const writer = writeMeanwhile(server, authorization);
      const dump = join(dir, 'leadatlas.dump');
      // pg_dump takes a libpq URL: the test's search_path option is the server's business, not the dump's.
      const plain = (url: string) => url.replace(/[?&]options=[^&]*/, '');
      execFileSync('pg_dump', ['--format=custom', `--file=${dump}`, plain(source.url)]);
      const written = await writer.stop();
      assert.ok(written > 0, 'the server wrote while pg_dump ran');

      await admin.query(`CREATE DATABASE ${restoredName}`);
      const restoredUrl = new URL(source.url);
      restoredUrl.pathname = `/${restoredName}`;
      execFileSync('pg_restore', ['--no-owner', `--dbname=${plain(restoredUrl.toString())}`, dump]);
      const restored = await serve({ ...env, DATABASE_URL: restoredUrl.toString(), EXPORT_DATA_DIR: join(dir, 'pg-restored-exports') });
      await sameAnswers(restored, authorization, before);
    } finally {
      for (const s of servers.splice(0)) s.child.kill('SIGKILL');
      await admin.query(`DROP DATABASE IF EXISTS ${restoredName} WITH (FORCE)`).catch(() => {});
      await admin.end();
      await source.dispose();
    }
  });
});
