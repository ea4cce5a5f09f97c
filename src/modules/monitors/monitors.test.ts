import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { DashboardClient } from '../../../test/helpers/dashboard-client.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import { buildReplication, type FeedServer, type ReplicationFixture, serveFeed } from '../../../test/helpers/replication.ts';
import { followFeed } from '../importers/follow.service.ts';
import { getSearchForAccount } from '../search/saved-searches.ts';
import { evaluateMonitors } from './monitors.evaluator.ts';
import { matchingPlaces } from './monitors.repository.ts';
import { monitorWebhooks } from './monitors.service.ts';

/**
 * Monitors over a catalog that follows a replication feed (three change files of the Monaco extract): the
 * events of a monitor must be exactly the difference between its search's places before and after the
 * files, none missing, none twice, and evaluating again must find nothing.
 */

let fixture: ReplicationFixture;
let server: FeedServer;
before(async () => {
  fixture = buildReplication(mkdtempSync(join(tmpdir(), 'monitors-')), 3);
  server = await serveFeed(fixture.feed);
});
after(async () => {
  await server?.close();
  rmSync(fixture.dir, { recursive: true, force: true });
});

const json = (r: { body: string }) => JSON.parse(r.body);

for (const { name: dialect } of dialects) {
  describe(`monitors (${dialect})`, { timeout: 180_000 }, () => {
    let t: TestApp;
    let account: TestAccount;
    before(async () => {
      t = await buildTestApp({
        dialect,
        files: [fixture.snapshot(0)],
        env: { MONITOR_POLL_MS: '3600000', MONITORS_PER_ACCOUNT: '3', MONITOR_MAX_PLACES: '5000' },
      });
      account = await createAccountWithToken(t.db);
    });
    after(() => t?.close());

    const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, who = account) =>
      t.app.inject({ method, url, headers: { authorization: who.authorization }, ...(payload ? { payload } : {}) });

    const newSearch = async (query: string, who = account): Promise<string> => {
      const r = await call('GET', `/api/v2/map/search?${query}`, undefined, who);
      assert.equal(r.statusCode, 200, r.body);
      return json(r).search_id;
    };

    const allEvents = async (monitorId: string) => {
      const events: Array<{ id: number; kind: string; place: { id: string }; changed_fields: string[] }> = [];
      let cursor: string | undefined;
      for (;;) {
        const r = await call('GET', `/api/v2/monitors/${monitorId}/events?per_page=7${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(r.statusCode, 200, r.body);
        const page = json(r);
        events.push(...page.data);
        if (page.data.length === 0) return { events, cursor: page.next_cursor as string };
        cursor = page.next_cursor;
      }
    };

    test('records exactly what entered, left and changed in the search across the followed change files, once', async () => {
      const searchId = await newSearch('country=MC');
      const { criteria } = await getSearchForAccount(t.db, account.accountId, searchId);
      const first = new Map((await matchingPlaces(t.db, criteria, {})).map((p) => [p.id, p.hash]));

      const created = await call('POST', '/api/v2/monitors', { search_id: searchId, webhook_url: 'https://example.com/hook' });
      assert.equal(created.statusCode, 201, created.body);
      const monitor = json(created);
      assert.equal(monitor.places, first.size);
      assert.deepEqual(monitor.events, ['added', 'closed', 'changed']);

      const followed = await followFeed(t.db, server.url, {
        allowPrivate: true,
        timeoutMs: 5000,
        maxFileBytes: 8 << 20,
        pollSeconds: 1,
        retryBaseMs: 10,
        once: true,
        from: 1,
      });
      assert.equal(followed.applied, 3);
      const round = await evaluateMonitors(t.db, monitorWebhooks);
      assert.ok(round.events > 0);
      const last = new Map((await matchingPlaces(t.db, criteria, {})).map((p) => [p.id, p.hash]));

      const publicIds = new Map(
        (await t.db.kysely.selectFrom('places').select(['id', 'public_id']).execute()).map((p) => [p.public_id, Number(p.id)]),
      );
      const { events, cursor } = await allEvents(monitor.id);
      const of = (kind: string) => events.filter((e) => e.kind === kind).map((e) => publicIds.get(e.place.id)!);
      const sorted = (ids: Iterable<number>) => [...ids].sort((a, b) => a - b);
      assert.deepEqual(sorted(of('added')), sorted([...last.keys()].filter((id) => !first.has(id))));
      assert.deepEqual(sorted(of('closed')), sorted([...first.keys()].filter((id) => !last.has(id))));
      assert.deepEqual(
        sorted(of('changed')),
        sorted([...last].filter(([id, hash]) => first.has(id) && first.get(id) !== hash).map(([id]) => id)),
      );
      assert.equal(new Set(events.map((e) => e.id)).size, events.length, 'no event twice');
      assert.ok(
        events.filter((e) => e.kind === 'changed').every((e) => e.changed_fields.includes('name')),
        'the renames name what changed',
      );
      const ids = events.map((e) => e.id);
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => a - b),
        'in order',
      );

      // Nothing new: evaluating again stores nothing, and the cursor of the last page gives nothing.
      assert.equal((await evaluateMonitors(t.db, monitorWebhooks)).events, 0);
      const again = await call('GET', `/api/v2/monitors/${monitor.id}/events?cursor=${cursor}`);
      assert.deepEqual(json(again).data, []);

      const deliveries = await t.db.kysely
        .selectFrom('webhook_deliveries')
        .select(['job_kind', 'event', 'body'])
        .where('job_kind', '=', 'monitor')
        .execute();
      assert.equal(deliveries.length, 1, 'one delivery for the evaluation that found events');
      assert.equal(deliveries[0]!.event, 'monitor.events');
      assert.deepEqual(JSON.parse(deliveries[0]!.body).data, { monitor: monitor.id, events: ids });
    });

    test('an evaluation cut off in the middle stores nothing, and the next one records each change once', async () => {
      const searchId = await newSearch('country=MC&type=restaurant');
      const monitor = json(await call('POST', '/api/v2/monitors', { search_id: searchId }));
      const member = await t.db.kysely
        .selectFrom('monitor_places')
        .innerJoin('monitors', 'monitors.id', 'monitor_places.monitor_id')
        .select('monitor_places.place_id')
        .where('monitors.public_id', '=', monitor.id)
        .executeTakeFirstOrThrow();
      await t.db.kysely
        .updateTable('places')
        .set({ name: 'Chez Monitor', content_hash: 'changed-by-test' })
        .where('id', '=', Number(member.place_id))
        .execute();
      const crash = { onEvents: async () => Promise.reject(new Error('killed mid-evaluation')) };
      await assert.rejects(evaluateMonitors(t.db, crash), /killed mid-evaluation/);
      assert.deepEqual((await allEvents(monitor.id)).events, [], 'the cut-off round left no event');
      await evaluateMonitors(t.db, monitorWebhooks);
      const { events } = await allEvents(monitor.id);
      assert.deepEqual(
        events.map((e) => [e.kind, e.changed_fields]),
        [['changed', ['name']]],
      );
      assert.equal((await evaluateMonitors(t.db, monitorWebhooks)).events, 0);
      await call('DELETE', `/api/v2/monitors/${monitor.id}`);
    });

    test('lists, pauses, resumes and deletes; refuses bad input, another account, and past the quota', async () => {
      const searchId = await newSearch('country=MC&type=restaurant');
      const created = json(await call('POST', '/api/v2/monitors', { search_id: searchId, events: ['added'] }));
      const paused = await call('PATCH', `/api/v2/monitors/${created.id}`, { paused: true });
      assert.equal(json(paused).status, 'paused');
      assert.equal(json(await call('PATCH', `/api/v2/monitors/${created.id}`, { paused: false })).status, 'active');
      const list = json(await call('GET', '/api/v2/monitors?per_page=1'));
      assert.equal(list.data[0].id, created.id);
      assert.ok(list.next_cursor);

      const bad = await call('POST', '/api/v2/monitors', { search_id: searchId, events: ['opened'] });
      assert.equal(bad.statusCode, 400);
      assert.match(bad.headers['content-type'] as string, /problem\+json/);
      assert.match(bad.body, /events/);
      const other = await createAccountWithToken(t.db);
      assert.equal((await call('GET', `/api/v2/monitors/${created.id}`, undefined, other)).statusCode, 404);
      assert.equal((await call('POST', '/api/v2/monitors', { search_id: searchId }, other)).statusCode, 404);
      assert.equal((await call('POST', '/api/v2/monitors', { search_id: searchId })).statusCode, 201);
      const over = await call('POST', '/api/v2/monitors', { search_id: searchId });
      assert.equal(over.statusCode, 409, over.body);
      assert.match(over.body, /MONITORS_PER_ACCOUNT/);
      const broad = await call('POST', '/api/v2/monitors', { search_id: await newSearch('country=MC', other) }, other);
      assert.equal(broad.statusCode, 201, 'within MONITOR_MAX_PLACES');

      assert.equal((await call('DELETE', `/api/v2/monitors/${created.id}`)).statusCode, 204);
      assert.equal((await call('GET', `/api/v2/monitors/${created.id}`)).statusCode, 404);
    });

    test('the dashboard watches a saved search, shows its monitors and pauses one, with the form token', async () => {
      const owner = await createAccountWithToken(t.db);
      const searchId = await newSearch('country=MC&type=cafe', owner);
      const c = new DashboardClient(t.app);
      await c.get('/signin');
      assert.equal((await c.post('/signin', { email: owner.email, password: owner.password })).statusCode, 303);
      const empty = await c.get('/monitors');
      assert.equal(empty.statusCode, 200);
      assert.match(empty.body, new RegExp(`<option value="${searchId}"`));
      assert.equal((await c.post('/monitors', { search_id: searchId }, { csrf: 'forged' })).statusCode, 403);
      assert.equal((await c.post('/monitors', { search_id: searchId })).statusCode, 303);
      const listed = await c.get('/monitors');
      const id = /data-monitor="(mon_[^"]+)"/.exec(listed.body)?.[1];
      assert.ok(id, 'the new monitor is listed');
      assert.equal((await c.post(`/monitors/${id}/pause`, {})).statusCode, 303);
      assert.match((await c.get('/monitors')).body, /Paused/);
      const refused = await c.post('/monitors', { search_id: 'srch_aaaaaaaaaaaaaaaa' });
      assert.equal(refused.statusCode, 404);
      assert.match(refused.body, /does not exist/);
    });

    describeAuthSuite({ method: 'GET', url: '/api/v2/monitors', scope: 'monitors' }, () => t);
  });
}
