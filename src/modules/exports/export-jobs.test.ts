import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import XLSX from 'xlsx';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { copyTestSqlite, type TestDatabase } from '../../../test/helpers/databases.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { munichExtract, saveSearch, type TestCity, topRestaurantCity } from '../../../test/helpers/exports.ts';
import { readmeSnippet, receiver } from '../../../test/helpers/webhooks.ts';
import { type App, buildApp } from '../../app.ts';
import { importFiles } from '../../bootstrap.ts';
import { loadConfig } from '../../config.ts';
import { accountWebhookSecret } from '../webhooks/webhooks.service.ts';
import { DownloadLinks } from './download-links.ts';
import { createJob } from './export-jobs.service.ts';

for (const database of ['sqlite', 'postgres'] as const) {
  describe(`export jobs on the Munich OpenStreetMap extract (${database})`, () => {
    let t: TestApp;
    let city: TestCity;
    const dataDir = mkdtempSync(join(tmpdir(), 'leadatlas-jobs-'));
    const env = { EXPORT_DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '200', EXPORT_LINK_TTL: '3600' };

    before(async () => {
      t = await buildTestApp({ dialect: database, files: [munichExtract], env });
      city = await topRestaurantCity(t.db);
      await t.app.ready();
    });
    after(async () => {
      await t.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    const saveRestaurants = (a: TestAccount) => saveSearch(t.db, a.accountId, city, 'restaurant');
    const queuedJob = async (a: TestAccount) =>
      (
        await createJob(t.db, t.app.quotas, {
          accountId: a.accountId,
          searchId: await saveRestaurants(a),
          format: 'csv',
          fields: 'name',
          webhookUrl: undefined,
        })
      ).public_id;
    const post = (a: TestAccount, payload: object) =>
      t.app.inject({ method: 'POST', url: '/api/v2/exports', headers: { authorization: a.authorization }, payload });
    const get = (a: TestAccount, url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: a.authorization } });
    const jobOf = async (a: TestAccount, id: string) => (await get(a, `/api/v2/exports/${id}`)).json();
    const finished = (a: TestAccount, id: string) =>
      eventually(`job ${id} to end`, async () => {
        const job = await jobOf(a, id);
        return job.status === 'succeeded' || job.status === 'failed' ? job : undefined;
      });

    describeAuthSuite(
      {
        method: 'POST',
        url: '/api/v2/exports',
        scope: 'export',
        payload: { search_id: 'srch_aaaaaaaaaaaaaaaa' },
        ownResource: async (_ctx, a) => ({ url: '/api/v2/exports', payload: { search_id: await saveRestaurants(a), format: 'csv' } }),
        foreignResource: async ({ owner }) => ({ url: '/api/v2/exports', payload: { search_id: await saveRestaurants(owner) } }),
      },
      () => ({ app: t.app, db: t.db }),
    );
    describeAuthSuite({ method: 'GET', url: '/api/v2/exports', scope: 'export' }, () => ({ app: t.app, db: t.db }));
    describeAuthSuite(
      {
        method: 'GET',
        url: '/api/v2/exports/job_aaaaaaaaaaaaaa',
        scope: 'export',
        // Created by the service, not over HTTP: a request would put the token in the auth cache before the suite expires it.
        ownResource: async (_ctx, a) => `/api/v2/exports/${await queuedJob(a)}`,
        foreignResource: async ({ owner }) => ({ url: `/api/v2/exports/${await queuedJob(owner)}` }),
      },
      () => ({ app: t.app, db: t.db }),
    );

    test('a job answers 202 with its Location, ends succeeded, and its file through the signed link (no token) equals the synchronous export', async () => {
      const a = await createAccountWithToken(t.db);
      const searchId = await saveRestaurants(a);
      for (const format of ['csv', 'geojson'] as const) {
        const created = await post(a, { search_id: searchId, format, fields: 'name,phone,website,city' });
        assert.equal(created.statusCode, 202, created.body);
        const job = created.json();
        assert.match(job.id, /^job_[A-Za-z0-9_-]{14}$/);
        assert.equal(created.headers.location, `/api/v2/exports/${job.id}`);
        assert.ok(['queued', 'running', 'succeeded'].includes(job.status));
        const done = await finished(a, job.id);
        assert.equal(done.status, 'succeeded', done.failure);
        assert.ok(done.rows > 50, `a real search: ${done.rows} rows`);
        const url = new URL(done.download.url);
        const file = await t.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
        assert.equal(file.statusCode, 200, file.body);
        const sync = await get(a, `/api/v2/map/export?search_id=${searchId}&format=${format}&fields=name,phone,website,city`);
        assert.equal(sync.statusCode, 200);
        assert.ok(file.rawPayload.equals(sync.rawPayload), `the ${format} files are equal byte for byte`);
        assert.equal(file.headers['content-type'], sync.headers['content-type']);
        assert.equal(file.headers['content-disposition'], sync.headers['content-disposition']);
        assert.equal(done.download.bytes, file.rawPayload.length);
      }
      // Every row of the file is a lead of the account, once.
      const leads = await t.db.kysely
        .selectFrom('leads')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('account_id', '=', a.accountId)
        .executeTakeFirstOrThrow();
      const restaurants = (await jobOf(a, (await (await get(a, '/api/v2/exports?per_page=1')).json()).data[0].id)).rows;
      assert.equal(Number(leads.n), restaurants);
    });

    test('an xlsx job (a file of no use cut short: its leads count once it is whole) reads back with every row', async () => {
      const a = await createAccountWithToken(t.db);
      const done = await finished(a, (await post(a, { search_id: await saveRestaurants(a), format: 'xlsx', fields: 'id,name' })).json().id);
      assert.equal(done.status, 'succeeded', done.failure);
      const url = new URL(done.download.url);
      const file = await t.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
      assert.equal(file.headers['content-type'], 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
      const wb = XLSX.read(file.rawPayload, { type: 'buffer' });
      const sheet = XLSX.utils.sheet_to_json<unknown[]>(wb.Sheets[wb.SheetNames[0]!]!, { header: 1 });
      assert.deepEqual(sheet[0], ['id', 'name']);
      assert.equal(sheet.length - 1, done.rows);
      const leads = await t.db.kysely
        .selectFrom('leads')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('account_id', '=', a.accountId)
        .executeTakeFirstOrThrow();
      assert.equal(Number(leads.n), done.rows);
    });

    test('a download link stops working when tampered with (403) or past its expiry (410)', async () => {
      const a = await createAccountWithToken(t.db);
      const job = (await post(a, { search_id: await saveRestaurants(a), format: 'ndjson' })).json();
      const done = await finished(a, job.id);
      const url = new URL(done.download.url);
      const path = `${url.pathname}${url.search}`;
      assert.equal((await t.app.inject({ method: 'GET', url: path })).statusCode, 200);
      const signature = url.searchParams.get('signature')!;
      const expires = Number(url.searchParams.get('expires'));
      const flipped = signature.slice(0, -1) + (signature.endsWith('0') ? '1' : '0');
      const other = (await post(a, { search_id: await saveRestaurants(a), format: 'csv' })).json();
      for (const forged of [
        `${url.pathname}?expires=${expires}&signature=${flipped}`,
        `${url.pathname}?expires=${expires + 86_400}&signature=${signature}`,
        `/api/v2/exports/${other.id}/download?expires=${expires}&signature=${signature}`,
      ]) {
        const res = await t.app.inject({ method: 'GET', url: forged });
        assert.equal(res.statusCode, 403, `${forged}: ${res.body}`);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
        assert.equal(res.json().code, 'forbidden');
      }
      // A genuine signature (the server's key) over an expiry that has passed.
      const links = new DownloadLinks(t.db, loadConfig({ DATABASE_URL: t.url, ...env }));
      const past = Math.floor(Date.now() / 1000) - 1;
      const expired = await t.app.inject({
        method: 'GET',
        url: `${url.pathname}?expires=${past}&signature=${await links.sign(job.id, past)}`,
      });
      assert.equal(expired.statusCode, 410, expired.body);
      assert.equal(expired.json().code, 'gone');
      const missing = await t.app.inject({ method: 'GET', url: `${url.pathname}?expires=${expires}` });
      assert.equal(missing.statusCode, 400);
      assert.equal(missing.json().errors[0].field, 'querystring.signature');
    });

    test('the webhook arrives signed, verifies with the README snippet, and is retried after the receiver answers 500', async () => {
      const verify = await readmeSnippet();
      const hook = await receiver([500]);
      try {
        const a = await createAccountWithToken(t.db);
        const job = (await post(a, { search_id: await saveRestaurants(a), format: 'csv', webhook_url: hook.url })).json();
        assert.equal(job.webhook_url, hook.url);
        await finished(a, job.id);
        await eventually('two deliveries', async () => (hook.received.length >= 2 ? true : undefined));
        const secret = await accountWebhookSecret(t.db, a.accountId);
        for (const r of hook.received) {
          assert.equal(verify(r.body, String(r.headers['leadatlas-signature']), secret), true, 'the signature verifies');
          assert.equal(
            verify(r.body.replace('succeeded', 'failed'), String(r.headers['leadatlas-signature']), secret),
            false,
            'a changed body does not',
          );
          assert.equal(verify(r.body, String(r.headers['leadatlas-signature']), 'whsec_another'), false, 'another secret does not');
          const event = JSON.parse(r.body);
          assert.equal(event.type, 'export_job.succeeded');
          assert.equal(event.data.job.id, job.id);
          assert.equal(event.data.job.status, 'succeeded');
        }
        assert.equal(hook.received[0]!.body, hook.received[1]!.body, 'a retry sends the same event');
        const delivery = await eventually('the delivery to be recorded', async () => {
          const d = await t.db.kysely.selectFrom('webhook_deliveries').selectAll().where('account_id', '=', a.accountId).executeTakeFirst();
          return d?.status === 'succeeded' ? d : undefined;
        });
        const attempts = await t.db.kysely
          .selectFrom('webhook_attempts')
          .selectAll()
          .where('delivery_id', '=', delivery.id)
          .orderBy('attempt')
          .execute();
        assert.deepEqual(
          attempts.map((x) => [Number(x.attempt), x.response_status === null ? null : Number(x.response_status), x.outcome]),
          [
            [1, 500, 'http_error'],
            [2, 200, 'succeeded'],
          ],
        );
      } finally {
        await hook.close();
      }
    });

    test('quotas: no rows left is refused up front; a job reaching the quota ends there, limited', async () => {
      const a = await createAccountWithToken(t.db);
      const searchId = await saveRestaurants(a);
      await t.app.quotas.setQuotas(a.accountId, { exportRowsPerMonth: 0 });
      const refused = await post(a, { search_id: searchId });
      assert.equal(refused.statusCode, 429, refused.body);
      assert.deepEqual(refused.json()['violated-policies'], ['export-rows']);
      await t.app.quotas.setQuotas(a.accountId, { exportRowsPerMonth: 7 });
      const done = await finished(a, (await post(a, { search_id: searchId, format: 'json' })).json().id);
      assert.equal(done.status, 'succeeded');
      assert.deepEqual([done.rows, done.limited], [7, true]);
      const url = new URL(done.download.url);
      const file = await t.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
      assert.equal(file.json().length, 7);
    });

    test("a job waits in the queue while the account's concurrent exports are all taken, and runs once one frees", async () => {
      const a = await createAccountWithToken(t.db);
      await t.app.quotas.setQuotas(a.accountId, { concurrentExports: 1 });
      // The account's one slot, held as a synchronous export holds it.
      const held = await t.app.quotas.open(a.accountId);
      let released = false;
      try {
        const job = (await post(a, { search_id: await saveRestaurants(a), format: 'csv' })).json();
        // The runner took the job, found no slot and put it back: started once, still queued, no attempt counted.
        const waiting = await eventually('the runner to try the job', async () => {
          const row = await t.db.kysely.selectFrom('export_jobs').selectAll().where('public_id', '=', job.id).executeTakeFirstOrThrow();
          return row.started_at !== null && row.status === 'queued' ? row : undefined;
        });
        assert.equal(Number(waiting.attempts), 0);
        await held.close();
        released = true;
        const done = await finished(a, job.id);
        assert.deepEqual([done.status, done.attempts], ['succeeded', 1]);
      } finally {
        if (!released) await held.close();
      }
    });

    test('a job that cannot run fails with its reason, and its webhook event says so', async () => {
      const hook = await receiver([]);
      const a = await createAccountWithToken(t.db);
      await t.app.quotas.setQuotas(a.accountId, { concurrentExports: 1 });
      const held = await t.app.quotas.open(a.accountId);
      try {
        const job = (await post(a, { search_id: await saveRestaurants(a), webhook_url: hook.url })).json();
        // While the job waits for the slot, the month's rows run out.
        await t.app.quotas.setQuotas(a.accountId, { exportRowsPerMonth: 0 });
        await held.close();
        const done = await finished(a, job.id);
        assert.equal(done.status, 'failed');
        assert.match(done.failure, /^quota_exceeded: This account has exported its 0 rows of this month/);
        assert.equal(done.download, null);
        await eventually('the failure event', async () => (hook.received.length > 0 ? true : undefined));
        const event = JSON.parse(hook.received[0]!.body);
        assert.deepEqual(
          [event.type, event.data.job.id, event.data.job.status, event.data.job.failure],
          ['export_job.failed', job.id, 'failed', done.failure],
        );
      } finally {
        await held.close();
        await hook.close();
      }
    });

    test("lists the account's jobs newest first with a cursor, and none of another account", async () => {
      const a = await createAccountWithToken(t.db);
      const searchId = await saveRestaurants(a);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.unshift((await post(a, { search_id: searchId, fields: 'name' })).json().id);
      const first = (await get(a, '/api/v2/exports?per_page=2')).json();
      assert.deepEqual(
        first.data.map((j: { id: string }) => j.id),
        ids.slice(0, 2),
      );
      const second = (await get(a, `/api/v2/exports?per_page=2&cursor=${first.next_cursor}`)).json();
      assert.deepEqual(
        second.data.map((j: { id: string }) => j.id),
        ids.slice(2),
      );
      assert.equal(second.next_cursor, null);
      const stranger = await createAccountWithToken(t.db);
      assert.deepEqual((await get(stranger, '/api/v2/exports')).json().data, []);
      const bad = await get(a, '/api/v2/exports?cursor=bm90LWEtY3Vyc29y');
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().errors[0].field, 'querystring.cursor');
      for (const id of ids) await finished(a, id);
    });

    test('bad bodies are refused as problems naming the field and what is allowed', async () => {
      const a = await createAccountWithToken(t.db);
      const searchId = await saveRestaurants(a);
      const cases: Array<[object, string]> = [
        [{ search_id: searchId, format: 'pdf' }, 'format'],
        [{ search_id: 'srch_nope' }, 'search_id'],
        [{ search_id: searchId, webhook_url: 'ftp://example.com/x' }, 'webhook_url'],
        [{ search_id: searchId, fields: 'name,password_hash' }, 'fields'],
        [{ search_id: searchId, account_id: 1 }, 'account_id'],
      ];
      for (const [payload, field] of cases) {
        const res = await post(a, payload);
        assert.equal(res.statusCode, 400, `${JSON.stringify(payload)}: ${res.body}`);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
        assert.ok(
          res.json().errors.some((e: { field: string }) => e.field.endsWith(field)),
          res.body,
        );
      }
      const formats = (await post(a, { search_id: searchId, format: 'pdf' })).json().errors[0].allowed;
      assert.deepEqual(formats, ['csv', 'xlsx', 'json', 'ndjson', 'geojson']);
      assert.equal((await post(a, { search_id: 'srch_aaaaaaaaaaaaaaaa' })).statusCode, 404);
      assert.equal((await get(a, '/api/v2/exports/job_aaaaaaaaaaaaaa')).statusCode, 404);
    });
  });
}

describe('export jobs across servers stopping and starting (sqlite, the Munich extract)', () => {
  let t: TestDatabase & { url: string };
  const dataDir = mkdtempSync(join(tmpdir(), 'leadatlas-jobs-stop-'));
  const apps: App[] = [];
  const start = async (env: Record<string, string>) => {
    const app = await buildApp({
      config: loadConfig({ DATABASE_URL: t.url, LOG_LEVEL: 'silent', EXPORT_DATA_DIR: dataDir, ...env }),
      db: t.db,
    });
    apps.push(app);
    await app.ready();
    return app;
  };
  const jobRow = (id: string) => t.db.kysely.selectFrom('export_jobs').selectAll().where('public_id', '=', id).executeTakeFirstOrThrow();

  before(async () => {
    t = await copyTestSqlite('prepared');
    await importFiles(t.db, [munichExtract]);
  });
  after(async () => {
    for (const app of apps) await app.close();
    await t.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function worldJob(app: App, a: TestAccount, format = 'csv'): Promise<{ id: string; total: number }> {
    const search = (
      await app.inject({
        method: 'GET',
        url: '/api/v2/map/search?bbox=-180,-90,180,90&per_page=1',
        headers: { authorization: a.authorization },
      })
    ).json();
    const res = await app.inject({
      method: 'POST',
      url: '/api/v2/exports',
      headers: { authorization: a.authorization },
      payload: { search_id: search.search_id, format },
    });
    assert.equal(res.statusCode, 202, res.body);
    return { id: res.json().id, total: search.total };
  }

  test("a server runs at most EXPORT_JOBS_PER_SERVER jobs at once (sampled while three accounts' jobs run)", async () => {
    const app = await start({ EXPORT_JOBS_PER_SERVER: '1', EXPORT_JOB_ROWS_PER_SECOND: '4000' });
    const jobs = [];
    for (let i = 0; i < 3; i++) jobs.push(await worldJob(app, await createAccountWithToken(t.db)));
    assert.ok(jobs[0]!.total > 2000, `the Munich extract: ${jobs[0]!.total} places`);
    const ids = jobs.map((j) => j.id);
    let most = 0;
    for (;;) {
      const rows = await t.db.kysely.selectFrom('export_jobs').select('status').where('public_id', 'in', ids).execute();
      most = Math.max(most, rows.filter((r) => r.status === 'running').length);
      if (rows.every((r) => r.status === 'succeeded' || r.status === 'failed')) break;
      await sleep(10);
    }
    assert.equal(most, 1, 'never two at once, and one at a time was seen');
    for (const id of ids) assert.equal((await jobRow(id)).status, 'succeeded');
    await app.close();
  });

  test('a server stopped gracefully puts its running job back in the queue; the next one runs it from scratch', async () => {
    const first = await start({ EXPORT_JOB_ROWS_PER_SECOND: '500' });
    const a = await createAccountWithToken(t.db);
    const job = await worldJob(first, a);
    await eventually('the job to be half-way', async () => {
      const row = await t.db.kysely
        .selectFrom('export_jobs')
        .leftJoin('exports', 'exports.id', 'export_jobs.export_id')
        .select(['export_jobs.status', 'exports.row_count'])
        .where('export_jobs.public_id', '=', job.id)
        .executeTakeFirstOrThrow();
      return row.status === 'running' && Number(row.row_count) >= 1000 ? true : undefined;
    });
    await first.close();
    const stopped = await jobRow(job.id);
    assert.deepEqual([stopped.status, stopped.runner, stopped.lease_until], ['queued', null, null]);
    assert.deepEqual(
      readdirSync(dataDir).filter((n) => n.startsWith(`${job.id}.`)),
      [],
      'the partial file is deleted',
    );
    const second = await start({});
    const done = await eventually('the job to end', async () => {
      const row = await jobRow(job.id);
      return row.status === 'succeeded' ? row : undefined;
    });
    assert.equal(Number(done.row_count), job.total);
    assert.equal(Number(done.attempts), 2);
    const exportsOfJob = await t.db.kysely
      .selectFrom('exports')
      .select('status')
      .where('account_id', '=', a.accountId)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      exportsOfJob.map((e) => e.status),
      ['aborted', 'done'],
    );
    const usage = await t.db.kysely
      .selectFrom('export_row_usage')
      .select('row_count')
      .where('account_id', '=', a.accountId)
      .executeTakeFirstOrThrow();
    assert.equal(Number(usage.row_count), job.total, "the stopped attempt's rows were given back");
    await second.close();
  });
});
