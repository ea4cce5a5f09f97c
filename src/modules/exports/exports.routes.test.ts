import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout } from 'node:timers/promises';
import { parse } from 'csv-parse/sync';
import XLSX from 'xlsx';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import { munichExtract, saveSearch, type TestCity, topRestaurantCity } from '../../../test/helpers/exports.ts';
import type { App } from '../../app.ts';
import { type Place, type PlaceField, placeFields } from '../places/places.schema.ts';
import { refreshTrust } from '../trust/trust.service.ts';
import { exportBatchSize, startExport } from './exports.service.ts';
import { guardFormula, listSeparator, tabularHeader } from './formats/cells.ts';

for (const dialect of dialects)
  describe(`GET /api/v2/map/export on the Munich OpenStreetMap extract on ${dialect.name}`, () => {
    let t: TestApp;
    let app: App;
    let city: TestCity;

    before(async () => {
      t = await buildTestApp({ dialect: dialect.name, files: [munichExtract] });
      app = t.app;
      city = await topRestaurantCity(t.db);
      // The trust pass by the test (TRUST_POLL_MS=0 in tests): the tabular trust columns read what it stored.
      await refreshTrust(t.db);
      await app.ready();
    });
    after(async () => {
      await t.close();
    });

    const saveRestaurants = (account: TestAccount) => saveSearch(t.db, account.accountId, city, 'restaurant');

    describeAuthSuite(
      {
        method: 'GET',
        url: '/api/v2/map/export?search_id=srch_aaaaaaaaaaaaaaaa&format=csv',
        scope: 'export',
        ownResource: async (_ctx, account) => `/api/v2/map/export?search_id=${await saveRestaurants(account)}&format=csv`,
        foreignResource: async ({ owner }) => ({ url: `/api/v2/map/export?search_id=${await saveRestaurants(owner)}&format=csv` }),
      },
      () => ({ app, db: t.db }),
    );

    const exportOf = (account: TestAccount, query: Record<string, string>) =>
      app.inject({
        method: 'GET',
        url: `/api/v2/map/export?${new URLSearchParams(query)}`,
        headers: { authorization: account.authorization },
      });

    async function restaurantsInDb(): Promise<number> {
      const r = await t.db.kysely
        .selectFrom('places')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('category', '=', 'restaurant')
        .where('city_id', '=', city.id)
        .where('closed_at', 'is', null)
        .executeTakeFirstOrThrow();
      return Number(r.n);
    }

    test('a CSV and an xlsx export read back with a CSV parser and an xlsx reader equal the JSON export row for row', async () => {
      const account = await createAccountWithToken(t.db);
      const searchId = await saveRestaurants(account);
      const json = await exportOf(account, { search_id: searchId, format: 'json' });
      assert.equal(json.statusCode, 200, json.body);
      const places = json.json<Place[]>();
      assert.equal(places.length, await restaurantsInDb());
      assert.ok(places.length > 50, `a real search: ${places.length} restaurants`);
      assert.ok(
        places.some((p) => p.phone?.startsWith('+')),
        'some phones start with +',
      );

      const csv = await exportOf(account, { search_id: searchId, format: 'csv' });
      assert.equal(csv.statusCode, 200);
      const [header, ...csvRows] = parse(csv.rawPayload, { bom: true }) as string[][];
      assert.deepEqual(header, tabularHeader(placeFields));
      assert.deepEqual(
        csvRows,
        places.map((p) => tabularValues(p).map(csvCell)),
      );

      const xlsx = await exportOf(account, { search_id: searchId, format: 'xlsx' });
      assert.equal(xlsx.statusCode, 200);
      const wb = XLSX.read(xlsx.rawPayload, { type: 'buffer' });
      const sheet = XLSX.utils.sheet_to_json<unknown[]>(wb.Sheets[wb.SheetNames[0]!]!, { header: 1, defval: null, raw: true });
      assert.deepEqual(sheet[0], tabularHeader(placeFields));
      assert.deepEqual(
        sheet.slice(1),
        places.map((p) => tabularValues(p).map(xlsxCell)),
      );
    });

    test('ndjson and geojson carry the same places in the same order as json', async () => {
      const account = await createAccountWithToken(t.db);
      const searchId = await saveRestaurants(account);
      const ids = (await exportOf(account, { search_id: searchId, format: 'json', fields: 'id' }))
        .json<Array<{ id: string }>>()
        .map((p) => p.id);
      const nd = (await exportOf(account, { search_id: searchId, format: 'ndjson', fields: 'id' })).body
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l).id);
      const geo = (await exportOf(account, { search_id: searchId, format: 'geojson', fields: 'name' })).json<{
        features: Array<{ id: string; geometry: { coordinates: number[] } }>;
      }>();
      assert.deepEqual(nd, ids);
      assert.deepEqual(
        geo.features.map((f) => f.id),
        ids,
      );
      assert.ok(geo.features.every((f) => f.geometry.coordinates.length === 2));
    });

    test('a search with a misspelt name exports exactly the places the search found (fuzzy matches checked on every name)', async () => {
      const account = await createAccountWithToken(t.db);
      const found = await app.inject({
        method: 'GET',
        url: '/api/v2/map/search?query=Ratskelelr&city=Munich&per_page=100&fields=id',
        headers: { authorization: account.authorization },
      });
      assert.equal(found.statusCode, 200, found.body);
      const page = found.json<{ search_id: string; total: number; data: Array<{ id: string }> }>();
      assert.ok(page.total > 0 && page.total === page.data.length, `one page of a fuzzy search: ${page.total}`);
      const exported = await exportOf(account, { search_id: page.search_id, format: 'json', fields: 'id,name' });
      assert.equal(exported.statusCode, 200, exported.body);
      const places = exported.json<Array<{ id: string; name: string }>>();
      assert.deepEqual(places.map((p) => p.id).sort(), page.data.map((p) => p.id).sort());
    });

    test('answers an attachment named after the city, type and day, with the format content type', async () => {
      const account = await createAccountWithToken(t.db);
      const searchId = await saveRestaurants(account);
      const res = await exportOf(account, { search_id: searchId });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8; header=present');
      const day = new Date().toISOString().slice(0, 10);
      const slug = city.name.toLowerCase();
      const ascii = slug.normalize('NFKD').replace(/\p{M}/gu, '');
      const expected =
        `attachment; filename="leadatlas-${ascii}-restaurant-${day}.csv"` +
        (ascii === slug ? '' : `; filename*=UTF-8''${encodeURIComponent(`leadatlas-${slug}-restaurant-${day}.csv`)}`);
      assert.equal(res.headers['content-disposition'], expected);
      assert.match(String(res.headers['x-export-id']), /^exp_/);
      const xlsx = await exportOf(account, { search_id: searchId, format: 'xlsx' });
      assert.equal(xlsx.headers['content-type'], 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
      assert.match(String(xlsx.headers['content-disposition']), /\.xlsx"/);
    });

    test('exports the chosen fields in the order asked', async () => {
      const account = await createAccountWithToken(t.db);
      const searchId = await saveRestaurants(account);
      const res = await exportOf(account, { search_id: searchId, fields: 'phone,name,city' });
      const [header, first] = parse(res.rawPayload, { bom: true }) as string[][];
      assert.deepEqual(header, ['phone', 'name', 'city']);
      assert.equal(first?.length, 3);
    });

    test('rejects an unknown format, an unknown field and a malformed search_id with the allowed values', async () => {
      const account = await createAccountWithToken(t.db);
      const searchId = await saveRestaurants(account);
      const format = await exportOf(account, { search_id: searchId, format: 'pdf' });
      assert.equal(format.statusCode, 400);
      assert.deepEqual(format.json().errors, [
        {
          field: 'querystring.format',
          message: 'must be one of: csv, xlsx, json, ndjson, geojson',
          allowed: ['csv', 'xlsx', 'json', 'ndjson', 'geojson'],
        },
      ]);
      const field = await exportOf(account, { search_id: searchId, fields: 'name,colour' });
      assert.equal(field.statusCode, 400);
      assert.deepEqual(field.json().errors, [{ field: 'querystring.fields', message: 'unknown field: colour', allowed: placeFields }]);
      const id = await exportOf(account, { search_id: 'search-1' });
      assert.equal(id.statusCode, 400);
      assert.equal(id.json().errors[0].field, 'querystring.search_id');
    });

    test("answers 404, not 403, for another account's search and for an unknown one, and records no export", async () => {
      const owner = await createAccountWithToken(t.db);
      const stranger = await createAccountWithToken(t.db);
      const searchId = await saveRestaurants(owner);
      const res = await exportOf(stranger, { search_id: searchId });
      assert.equal(res.statusCode, 404, res.body);
      assert.equal(res.json().code, 'not_found');
      assert.equal((await exportOf(stranger, { search_id: 'srch_aaaaaaaaaaaaaaaa' })).statusCode, 404);
      const logged = await t.db.kysely.selectFrom('exports').select('id').where('account_id', '=', stranger.accountId).execute();
      assert.deepEqual(logged, []);
      assert.equal((await exportOf(owner, { search_id: searchId })).statusCode, 200);
    });

    test('answers 401 without a token and 403 for a token without the export scope', async () => {
      const owner = await createAccountWithToken(t.db);
      const searchId = await saveRestaurants(owner);
      const anonymous = await app.inject({ method: 'GET', url: `/api/v2/map/export?search_id=${searchId}` });
      assert.equal(anonymous.statusCode, 401);
      const reader = await createAccountWithToken(t.db, { scopes: ['places:read', 'search'] });
      const res = await exportOf(reader, { search_id: searchId });
      assert.equal(res.statusCode, 403);
      assert.equal(res.json().scope, 'export');
    });

    test("logs the export as done with its row count, and the exported places become the account's leads", async () => {
      const account = await createAccountWithToken(t.db);
      const searchId = await saveRestaurants(account);
      const res = await exportOf(account, { search_id: searchId, format: 'ndjson', fields: 'id' });
      const ids = res.body
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l).id as string);
      // The leads are recorded before the last byte of a text export; the log's status once the response is over.
      const leadsAtOnce = await t.db.kysely
        .selectFrom('leads')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('account_id', '=', account.accountId)
        .executeTakeFirstOrThrow();
      assert.equal(Number(leadsAtOnce.n), ids.length);
      const log = await waitForEnd(String(res.headers['x-export-id']));
      assert.equal(log.status, 'done');
      assert.equal(log.row_count, ids.length);
      assert.equal(log.search_id, searchId);
      assert.deepEqual(JSON.parse(log.fields), ['id']);
      const leads = await t.db.kysely
        .selectFrom('leads')
        .innerJoin('places', 'places.id', 'leads.place_id')
        .select('places.public_id')
        .where('leads.account_id', '=', account.accountId)
        .execute();
      assert.deepEqual(leads.map((l) => l.public_id).sort(), [...ids].sort());
    });

    test('a download cut short counts as leads only the batches whose bytes were delivered, logs the export aborted and never a partial batch', async () => {
      const account = await createAccountWithToken(t.db);
      const searchId = await saveSearch(t.db, account.accountId, city, null);
      const total = Number(
        (
          await t.db.kysely
            .selectFrom('places')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
      assert.ok(total > 2 * exportBatchSize + 20, `the whole extract spans several batches: ${total}`);
      const started = await startExport(t.db, { accountId: account.accountId, searchId, format: 'csv', fields: 'id' }, app.quotas);
      // The body is read ahead of what the client takes. Chunks: the header, then a batch each (fields=id).
      // The header and the first batch are delivered whole, the second batch by half, the third not at all.
      const chunks: Buffer[] = [];
      for await (const chunk of started.body) {
        chunks.push(chunk as Buffer);
        if (chunks.length <= 2) started.delivery.bodyFlushed((chunk as Buffer).length);
        if (chunks.length === 3) started.delivery.bodyFlushed(Math.floor((chunk as Buffer).length / 2));
        if (chunks.length === 4) break; // for-await destroys the stream: the client went away
      }
      assert.equal(String(chunks[1]).split('\r\n').length - 1, exportBatchSize, 'a chunk a batch');
      await started.finish(false);
      const log = await waitForEnd(started.exportId);
      assert.equal(log.status, 'aborted');
      assert.equal(log.row_count, exportBatchSize, 'the first batch was delivered whole; the second only in part, the third not at all');
      const leads = await t.db.kysely
        .selectFrom('leads')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('account_id', '=', account.accountId)
        .executeTakeFirstOrThrow();
      assert.equal(Number(leads.n), log.row_count);
    });

    test('a client that reads as fast as the export writes still leaves the event loop free between batches', async () => {
      const account = await createAccountWithToken(t.db);
      const searchId = await saveSearch(t.db, account.accountId, city, null);
      const started = await startExport(t.db, { accountId: account.accountId, searchId, format: 'csv', fields: 'id' }, app.quotas);
      // Read in microtasks only: without a turn of the loop between batches, no timer or socket would run until the end.
      let loopTurns = 0;
      const turns = setInterval(() => loopTurns++, 0);
      let rows = 0;
      for await (const chunk of started.body) {
        rows += String(chunk).split('\r\n').length - 1;
        started.delivery.bodyFlushed(Buffer.byteLength(chunk as Buffer));
      }
      await started.finish(true);
      clearInterval(turns);
      assert.ok(rows > 2 * exportBatchSize, `several batches: ${rows} lines`);
      assert.ok(loopTurns > 0, 'timers ran while the export streamed');
    });

    test('a download that pauses long enough for the export to let go of its snapshot resumes where it was, with no place missing or twice', async () => {
      const account = await createAccountWithToken(t.db);
      const searchId = await saveSearch(t.db, account.accountId, city, null);
      const read = async (pauseMs: number) => {
        const started = await startExport(t.db, { accountId: account.accountId, searchId, format: 'csv', fields: 'id' }, app.quotas);
        let text = '';
        for await (const chunk of started.body) {
          text += String(chunk);
          started.delivery.bodyFlushed(Buffer.byteLength(chunk as Buffer));
          // After the first batch: the reader closes its statement and connection while the client waits.
          if (pauseMs > 0 && text.split('\r\n').length === exportBatchSize + 2) await setTimeout(pauseMs);
        }
        await started.finish(true);
        return text.split('\r\n').slice(1, -1);
      };
      const straight = await read(0);
      const paused = await read(1500);
      assert.ok(straight.length > 2 * exportBatchSize);
      assert.deepEqual(paused, straight);
      assert.equal(new Set(paused).size, paused.length);
    });

    async function waitForEnd(exportId: string) {
      for (let i = 0; i < 1000; i++) {
        const log = await t.db.kysely.selectFrom('exports').selectAll().where('public_id', '=', exportId).executeTakeFirstOrThrow();
        if (log.status !== 'running') return log;
        await setTimeout(10);
      }
      throw new Error(`export ${exportId} still running after 10 s`);
    }
  });

/** A list as one cell: its items joined; a place's records (`sources`) as `source:source_id`. */
function listCell(v: ReadonlyArray<string | { source: string; source_id: string }>): string {
  return v.map((x) => (typeof x === 'string' ? x : `${x.source}:${x.source_id}`)).join(listSeparator);
}

type TabularValue = Exclude<Place[PlaceField], Place['contacts']>;

/** A place's values in the columns of a tabular export: `contacts` as its lists of emails, phones and socials, and its contact page. */
function tabularValues(p: Place): TabularValue[] {
  return placeFields.flatMap((f): TabularValue[] => {
    if (f !== 'contacts') return [p[f] as TabularValue];
    const list = (items: string[]) => (items.length > 0 ? items.join(listSeparator) : null);
    const c = p.contacts;
    // The trust columns: the best value of each kind (highest confidence, the first on a tie), the latest check.
    const best = <V extends { confidence: number }>(values: V[]): V | undefined =>
      values.reduce<V | undefined>((b, v) => (b === undefined || v.confidence > b.confidence ? v : b), undefined);
    const [email, phone, website] = [best(c.emails), best(c.phones), best(c.websites)];
    const checks = [...c.emails, ...c.websites].map((v) => v.checked_at).filter((at) => at != null);
    return [
      list(c.emails.map((e) => e.address)),
      list(c.phones.map((x) => x.e164 ?? x.as_written ?? '')),
      list(c.socials.map((s) => s.url)),
      c.contact_url,
      email?.status ?? null,
      email?.confidence ?? null,
      phone?.type ?? null,
      phone?.confidence ?? null,
      website?.status ?? null,
      website?.confidence ?? null,
      checks.length > 0 ? checks.reduce((a, b) => (a > b ? a : b)) : null,
    ];
  });
}

/** What the CSV holds for a JSON value: empty for null, lists joined, numbers as written, text formula-guarded. */
function csvCell(v: TabularValue): string {
  if (v === null) return '';
  if (Array.isArray(v)) return listCell(v);
  if (typeof v === 'number') return String(v);
  return guardFormula(v);
}

function xlsxCell(v: TabularValue): string | number | null {
  return Array.isArray(v) ? listCell(v) : v;
}
