import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { runCli, spawnCli } from '../../../test/helpers/cli.ts';
import { dialects } from '../../../test/helpers/databases.ts';

/**
 * `leadatlas monitors` as operators run it, a real child process on the test database, beside a server with
 * MONITOR_EVALUATOR=off: the server evaluates nothing; the command (`--once`, then continuously until
 * SIGTERM) records each change of a monitored search once.
 */

const monaco = new URL('../../../../shared/data/osm/monaco-2026.osm.pbf', import.meta.url).pathname;

for (const { name: dialect } of dialects) {
  describe(`leadatlas monitors (${dialect})`, { timeout: 120_000 }, () => {
    let t: TestApp;
    let account: TestAccount;
    before(async () => {
      t = await buildTestApp({ dialect, files: [monaco], env: { MONITOR_EVALUATOR: 'off', MONITOR_POLL_MS: '20' } });
      account = await createAccountWithToken(t.db);
      await t.app.ready();
    });
    after(() => t?.close());

    const call = async (method: 'GET' | 'POST', url: string, payload?: object) => {
      const r = await t.app.inject({ method, url, headers: { authorization: account.authorization }, ...(payload ? { payload } : {}) });
      assert.ok(r.statusCode < 300, r.body);
      return JSON.parse(r.body);
    };
    const events = async (monitorId: string) =>
      ((await call('GET', `/api/v2/monitors/${monitorId}/events?per_page=100`)).data as Array<{ kind: string; place: { id: string } }>).map(
        (e) => `${e.kind} ${e.place.id}`,
      );
    const rename = async (placeId: number, name: string) =>
      t.db.kysely
        .updateTable('places')
        .set({ name, content_hash: `renamed-${name}` })
        .where('id', '=', placeId)
        .execute();

    test('serve with the switch off evaluates nothing; the command evaluates each change once', async () => {
      const search = await call('GET', '/api/v2/map/search?country=MC&type=restaurant');
      const monitor = await call('POST', '/api/v2/monitors', { search_id: search.search_id });
      const members = await t.db.kysely
        .selectFrom('monitor_places')
        .innerJoin('monitors', 'monitors.id', 'monitor_places.monitor_id')
        .innerJoin('places', 'places.id', 'monitor_places.place_id')
        .select(['places.id', 'places.public_id'])
        .where('monitors.public_id', '=', monitor.id)
        .orderBy('places.id')
        .limit(2)
        .execute();
      assert.equal(members.length, 2);
      const [first, second] = members.map((m) => ({ id: Number(m.id), publicId: m.public_id }));

      await rename(first!.id, 'Chez Processus');
      await sleep(300); // fifteen of the server's poll periods
      assert.deepEqual(await events(monitor.id), [], 'the server evaluated nothing');

      const oneRound = runCli(['monitors', '--once'], { DATABASE_URL: t.url });
      assert.equal(oneRound.status, 0, oneRound.stderr);
      assert.match(oneRound.stderr, /1 evaluated over 1 changed places, 1 events stored/);
      assert.deepEqual(await events(monitor.id), [`changed ${first!.publicId}`]);

      const child = spawnCli(['monitors'], { DATABASE_URL: t.url, MONITOR_POLL_MS: '100' }, ['ignore', 'ignore', 'pipe']);
      let stderr = '';
      child.stderr!.on('data', (d) => (stderr += d));
      const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
      try {
        await rename(second!.id, 'Chez Processus Bis');
        const deadline = Date.now() + 30_000;
        while ((await events(monitor.id)).length < 2 && Date.now() < deadline) await sleep(100);
        if (process.platform === 'linux') {
          // /proc/PID/stat: the 19th field is the nice value (of the main thread, where the evaluation runs).
          const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8');
          assert.equal(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16], '10', 'runs at the default niceness 10');
        }
        await sleep(300); // more of its rounds: none may record the change again
      } finally {
        child.kill('SIGTERM');
      }
      assert.deepEqual(await exited, [0, null], stderr);
      assert.match(stderr, /monitors: stopped/);
      assert.deepEqual(await events(monitor.id), [`changed ${first!.publicId}`, `changed ${second!.publicId}`], stderr);
    });
  });
}
