import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort, runCli, spawnCli } from '../helpers/cli.ts';

describe('leadatlas serve on a fresh database', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-serve-'));
  const env = { DATABASE_URL: `sqlite:${join(dir, 'var', 'leadatlas.db')}`, HOST: '127.0.0.1', PORT: '0' };
  let server: ChildProcess;
  let base = '';

  before(async () => {
    env.PORT = String(await freePort());
    base = `http://127.0.0.1:${env.PORT}`;
    server = spawnCli(['serve'], env);
    let stderr = '';
    server.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const deadline = Date.now() + 240_000;
    for (;;) {
      if (server.exitCode !== null) throw new Error(`serve exited with ${server.exitCode}: ${stderr}`);
      const ok = await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`serve did not answer in time: ${stderr}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  });

  after(() => {
    if (server.exitCode === null) server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('creates the SQLite file, imports the demo data and answers /healthz', async () => {
    const health = await fetch(`${base}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
  });

  test('stats reports the demo places per country and per category', () => {
    const out = runCli(['stats', '--json'], env);
    assert.equal(out.status, 0, out.stderr);
    const stats = JSON.parse(out.stdout) as {
      places: number;
      byCountry: Array<{ country_code: string | null; places: number }>;
      byCategory: Array<{ category: string | null; places: number }>;
    };
    // The nine bundled extracts: Andorra, Helsinki, Liechtenstein, London, Malta, Monaco, Munich, Porto, Tokyo.
    assert.ok(stats.places > 15000, `places: ${stats.places}`);
    const countries = new Set(stats.byCountry.map((c) => c.country_code));
    for (const code of ['AD', 'FI', 'LI', 'GB', 'MT', 'MC', 'DE', 'PT', 'JP'])
      assert.ok(countries.has(code), `country ${code} in ${[...countries].join(',')}`);
    assert.equal(
      stats.byCountry.reduce((n, c) => n + c.places, 0),
      stats.places,
    );
    assert.ok(stats.byCategory.some((c) => c.category === 'restaurant' && c.places > 1000));
  });

  test('SIGTERM lets an export in flight finish, refuses new connections meanwhile, then exits cleanly', async () => {
    const user = runCli(['user', 'create', '--email', 'e2e@example.com'], env);
    assert.equal(user.status, 0, user.stderr);
    const token = runCli(['token', 'create', '--user', 'e2e@example.com', '--name', 'e2e', '--scopes', 'search,export'], env);
    assert.equal(token.status, 0, token.stderr);
    const authorization = `Bearer ${token.stdout.trim()}`;
    const search = (await (
      await fetch(`${base}/api/v2/map/search?bbox=-180,-90,180,90&per_page=1`, { headers: { authorization } })
    ).json()) as { search_id: string; total: number };
    const exited = new Promise((r) => server.once('exit', r));

    // A client that reads the export slowly: it is still downloading when the server is told to stop.
    const body = await new Promise<string>((resolveBody, reject) => {
      const req = request(
        `${base}/api/v2/map/export?search_id=${search.search_id}&format=csv`,
        { headers: { authorization }, agent: false },
        (res) => {
          assert.equal(res.statusCode, 200);
          const parts: Buffer[] = [];
          res.on('data', (chunk: Buffer) => {
            parts.push(chunk);
            res.pause();
            setTimeout(() => res.resume(), 20);
          });
          res.on('end', () => resolveBody(Buffer.concat(parts).toString('utf8')));
          res.on('error', reject);
          server.kill('SIGTERM');
        },
      );
      req.on('error', reject);
      req.end();
    });
    const refused = await fetch(`${base}/healthz`).then(
      () => false,
      () => true,
    );
    assert.ok(refused, 'a stopping server accepts no new connection');
    assert.equal(body.trimEnd().split('\r\n').length - 1, search.total, 'the export in flight was sent whole');
    await exited;
    assert.equal(server.exitCode, 0, 'SIGTERM shuts the server down cleanly');
  });

  test('a second start finds the catalog in place and does not import again', async () => {
    const before = runCli(['stats', '--json'], env);
    const runs = (JSON.parse(before.stdout) as { imports: unknown[] }).imports.length;
    assert.notEqual(server.exitCode, null, 'the first server has stopped');
    const again = spawnCli(['serve'], env, 'ignore');
    try {
      for (let i = 0; i < 240; i++) {
        if (
          await fetch(`${base}/healthz`).then(
            (r) => r.ok,
            () => false,
          )
        )
          break;
        await new Promise((r) => setTimeout(r, 500));
      }
      const after = runCli(['stats', '--json'], env);
      assert.equal((JSON.parse(after.stdout) as { imports: unknown[] }).imports.length, runs);
    } finally {
      again.kill('SIGKILL');
    }
  });
});

test('a bad environment variable stops the CLI before it starts, naming the variable', () => {
  const out = runCli(['stats'], { PORT: 'eighty', DATABASE_URL: 'mysql://localhost/x' });
  assert.equal(out.status, 78);
  assert.match(out.stderr, /PORT="eighty"/);
  assert.match(out.stderr, /DATABASE_URL="mysql:\/\/localhost\/x"/);
});
