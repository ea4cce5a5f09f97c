import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout } from 'node:timers/promises';
import { parse } from 'csv-parse/sync';
import XLSX from 'xlsx';
import { buildApp, type App } from '../../app.ts';
import { loadConfig } from '../../config.ts';
import { placeFields, type Place, type PlaceField } from '../places/places.schema.ts';
import { openTestSqlite } from '../../../test/helpers/databases.ts';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { exportBatchSize, startExport } from './exports.service.ts';
import { prepareMunich, saveSearch, type TestCity } from './exports.test-helpers.ts';
import { guardFormula, listSeparator } from './formats/cells.ts';

describe('GET /api/v2/map/export on the Munich OpenStreetMap extract', () => {
  const t = openTestSqlite();
  let app: App;
  let city: TestCity;

  before(async () => {
    city = await prepareMunich(t.db);
    app = await buildApp({ config: loadConfig({ DATABASE_URL: t.url, LOG_LEVEL: 'silent' }), db: t.db });
    await app.ready();
  });
  after(async () => {
    await app.close();
    await t.dispose();
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
    app.inject({ method: 'GET', url: `/api/v2/map/export?${new URLSearchParams(query)}`, headers: { authorization: account.authorization } });

  async function restaurantsInDb(): Promise<number> {
    const r = await t.db.kysely
      .selectFrom('places')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('category', '=', 'restaurant')
      .where('city_id', '=', city.id)
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
    assert.ok(places.some((p) => p.phone?.startsWith('+')), 'some phones start with +');

    const csv = await exportOf(account, { search_id: searchId, format: 'csv' });
    assert.equal(csv.statusCode, 200);
    const [header, ...csvRows] = parse(csv.rawPayload, { bom: true }) as string[][];
    assert.deepEqual(header, placeFields);
    assert.deepEqual(
      csvRows,
      places.map((p) => placeFields.map((f) => csvCell(p[f]))),
    );

    const xlsx = await exportOf(account, { search_id: searchId, format: 'xlsx' });
    assert.equal(xlsx.statusCode, 200);
    const wb = XLSX.read(xlsx.rawPayload, { type: 'buffer' });
    const sheet = XLSX.utils.sheet_to_json<unknown[]>(wb.Sheets[wb.SheetNames[0]!]!, { header: 1, defval: null, raw: true });
    assert.deepEqual(sheet[0], placeFields);
    assert.deepEqual(
      sheet.slice(1),
      places.map((p) => placeFields.map((f) => xlsxCell(p[f]))),
    );
  });

  test('ndjson and geojson carry the same places in the same order as json', async () => {
    const account = await createAccountWithToken(t.db);
    const searchId = await saveRestaurants(account);
    const ids = (await exportOf(account, { search_id: searchId, format: 'json', fields: 'id' })).json<Array<{ id: string }>>().map((p) => p.id);
    const nd = (await exportOf(account, { search_id: searchId, format: 'ndjson', fields: 'id' })).body.trimEnd().split('\n').map((l) => JSON.parse(l).id);
    const geo = (await exportOf(account, { search_id: searchId, format: 'geojson', fields: 'name' })).json<{ features: Array<{ id: string; geometry: { coordinates: number[] } }> }>();
    assert.deepEqual(nd, ids);
    assert.deepEqual(geo.features.map((f) => f.id), ids);
    assert.ok(geo.features.every((f) => f.geometry.coordinates.length === 2));
  });

  test('a search with a misspelt name exports exactly the places the search found (fuzzy matches checked on every name)', async () => {
    const account = await createAccountWithToken(t.db);
    const found = await app.inject({ method: 'GET', url: '/api/v2/map/search?query=Ratskelelr&city=Munich&per_page=100&fields=id', headers: { authorization: account.authorization } });
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
    const expected = `attachment; filename="leadatlas-${ascii}-restaurant-${day}.csv"` +
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
      { field: 'querystring.format', message: 'must be one of: csv, xlsx, json, ndjson, geojson', allowed: ['csv', 'xlsx', 'json', 'ndjson', 'geojson'] },
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

  test('logs the export as done with its row count, and the exported places become the account\'s leads', async () => {
    const account = await createAccountWithToken(t.db);
    const searchId = await saveRestaurants(account);
    const res = await exportOf(account, { search_id: searchId, format: 'ndjson', fields: 'id' });
    const ids = res.body.trimEnd().split('\n').map((l) => JSON.parse(l).id as string);
    const log = await t.db.kysely.selectFrom('exports').selectAll().where('public_id', '=', String(res.headers['x-export-id'])).executeTakeFirstOrThrow();
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

  test('a download cut short counts the batches already handed to the response as leads, logs the export aborted and never a partial batch', async () => {
    const account = await createAccountWithToken(t.db);
    const searchId = await saveSearch(t.db, account.accountId, city, null);
    const total = Number((await t.db.kysely.selectFrom('places').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    assert.ok(total > 2 * exportBatchSize, `the whole extract spans several batches: ${total}`);
    const started = await startExport(t.db, { accountId: account.accountId, searchId, format: 'csv', fields: 'id' }, app.quotas);
    let received = 0;
    for await (const chunk of started.body) {
      received += String(chunk).split('\r\n').length - 1;
      if (received > exportBatchSize) break; // for-await destroys the stream: the client went away
    }
    const log = await waitForEnd(started.exportId);
    assert.equal(log.status, 'aborted');
    assert.ok(log.row_count >= exportBatchSize && log.row_count < total, `row_count ${log.row_count}`);
    assert.equal(log.row_count % exportBatchSize, 0, 'whole batches only');
    const leads = await t.db.kysely.selectFrom('leads').select((eb) => eb.fn.countAll<number>().as('n')).where('account_id', '=', account.accountId).executeTakeFirstOrThrow();
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
    for await (const chunk of started.body) rows += String(chunk).split('\r\n').length - 1;
    clearInterval(turns);
    assert.ok(rows > 2 * exportBatchSize, `several batches: ${rows} lines`);
    assert.ok(loopTurns > 0, 'timers ran while the export streamed');
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

/** What the CSV holds for a JSON value: empty for null, lists joined, numbers as written, text formula-guarded. */
function csvCell(v: Place[PlaceField]): string {
  if (v === null) return '';
  if (Array.isArray(v)) return v.join(listSeparator);
  if (typeof v === 'number') return String(v);
  return guardFormula(v);
}

function xlsxCell(v: Place[PlaceField]): string | number | null {
  return Array.isArray(v) ? v.join(listSeparator) : v;
}
