import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import XLSX from 'xlsx';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { munichExtract, type TestCity, topRestaurantCity } from '../../../test/helpers/exports.ts';
import { readmeSnippet, receiver } from '../../../test/helpers/webhooks.ts';
import type { PlaceNameResolver } from '../search/search.types.ts';
import { createPlaceNameResolver } from '../search/type-resolver.ts';
import { accountWebhookSecret } from '../webhooks/webhooks.service.ts';
import type { MatchRecordInput } from './match.schema.ts';
import { type MatchDeps, matchDepsOf, matchRecords } from './match.service.ts';
import { HeaderDictionary } from './match-headers.ts';
import { resultColumns } from './match-jobs.schema.ts';
import { createMatchJob, receiveList } from './match-jobs.service.ts';

/** A multipart/form-data body as a browser sends it: the fields, then the file. */
function multipart(fields: Record<string, string>, file?: { name: string; content: Buffer | string; type?: string }) {
  const boundary = '----leadatlas-test-boundary';
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  if (file) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: ${file.type ?? 'application/octet-stream'}\r\n\r\n`,
      ),
      Buffer.from(file.content),
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

interface Business {
  name: string;
  street: string | null;
  housenumber: string | null;
  postcode: string | null;
  phone: string | null;
}

for (const database of ['sqlite', 'postgres'] as const) {
  describe(`match jobs on the Munich OpenStreetMap extract (${database})`, () => {
    let t: TestApp;
    let city: TestCity;
    let businesses: Business[];
    const dataDir = mkdtempSync(join(tmpdir(), 'leadatlas-match-jobs-'));
    const env = {
      EXPORT_DATA_DIR: dataDir,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_BASE_MS: '200',
      EXPORT_LINK_TTL: '3600',
      MATCH_JOBS_PER_SERVER: '2',
    };

    before(async () => {
      t = await buildTestApp({ dialect: database, files: [munichExtract], env });
      city = await topRestaurantCity(t.db);
      // Real restaurants of the city, typed as a CRM holds them (street and number apart, the city's German name).
      businesses = (
        await t.db.kysely
          .selectFrom('places')
          .select(['name', 'street', 'housenumber', 'postcode', 'phone'])
          .where('category', '=', 'restaurant')
          .where('city_id', '=', city.id)
          .where('street', 'is not', null)
          .orderBy('id')
          .limit(30)
          .execute()
      ).map((b) => ({ ...b }));
      await t.app.ready();
    });
    after(async () => {
      await t.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    /** A German CRM export: `;`-separated, a quoted cell holding the delimiter, a row without a name, a formula-like cell. */
    const germanCsv = () => {
      const q = (s: string | null) => (s === null ? '' : /[;"]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s);
      const lines = ['Kundennr;Firma;Straße;Hausnummer;PLZ;Ort;Telefon;Notiz'];
      businesses.forEach((b, i) => {
        lines.push(
          [`K-${i + 1}`, b.name, b.street, b.housenumber, b.postcode, city.name, b.phone, i === 0 ? '=HYPERLINK("x")' : 'a; b']
            .map(q)
            .join(';'),
        );
      });
      lines.push(['K-bad', '', 'Marienplatz', '1', '80331', city.name, '', ''].join(';'));
      lines.push(['K-none', 'Zzyzx Quantenschmiede Blorp', 'Nirgendwo', '9', '80331', city.name, '', ''].join(';'));
      return `${lines.join('\r\n')}\r\n`;
    };
    /** The records the job should have handed the matcher for the CSV above. */
    const germanRecords = (): MatchRecordInput[] => [
      ...businesses.map((b, i) => {
        const r: MatchRecordInput = { ref: String(i + 1), name: b.name, street: b.street!, city: city.name };
        if (b.housenumber) r.housenumber = b.housenumber;
        if (b.postcode) r.postcode = b.postcode;
        if (b.phone) r.phone = b.phone;
        return r;
      }),
      { ref: String(businesses.length + 1), street: 'Marienplatz', housenumber: '1', postcode: '80331', city: city.name },
      {
        ref: String(businesses.length + 2),
        name: 'Zzyzx Quantenschmiede Blorp',
        street: 'Nirgendwo',
        housenumber: '9',
        postcode: '80331',
        city: city.name,
      },
    ];

    const post = (a: TestAccount, fields: Record<string, string>, file?: { name: string; content: Buffer | string }) => {
      const body = multipart(fields, file);
      return t.app.inject({
        method: 'POST',
        url: '/api/v2/match/jobs',
        headers: { authorization: a.authorization, 'content-type': body.contentType },
        payload: body.payload,
      });
    };
    const get = (a: TestAccount, url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: a.authorization } });
    const finished = (a: TestAccount, id: string) =>
      eventually(`job ${id} to end`, async () => {
        const job = (await get(a, `/api/v2/match/jobs/${id}`)).json();
        return job.status === 'succeeded' || job.status === 'failed' ? job : undefined;
      });
    const download = async (job: { download: { url: string } }) => {
      const url = new URL(job.download.url);
      const file = await t.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
      assert.equal(file.statusCode, 200, file.body);
      return file;
    };
    const queuedJob = async (a: TestAccount) => {
      const list = await receiveList(dataDir, Readable.from([germanCsv()]), 'crm.csv', () => false, 1 << 20);
      return (
        await createMatchJob(t.db, { allowance: t.app.quotas, dictionary: () => dictionary() }, { accountId: a.accountId, list, form: {} })
      ).public_id;
    };
    let dict: HeaderDictionary | undefined;
    const dictionary = () => {
      dict ??= HeaderDictionary.build();
      return dict;
    };
    let matchDeps: MatchDeps | undefined;
    // The matcher as the app builds it, on the test's database.
    const deps = (): MatchDeps => {
      let resolver: PlaceNameResolver | undefined;
      matchDeps ??= matchDepsOf({ db: t.db, places: () => (resolver ??= createPlaceNameResolver(t.db)) });
      return matchDeps;
    };

    describeAuthSuite({ method: 'GET', url: '/api/v2/match/jobs', scope: 'match' }, () => ({ app: t.app, db: t.db }));
    describeAuthSuite(
      {
        method: 'GET',
        url: '/api/v2/match/jobs/mjob_aaaaaaaaaaaaaa',
        scope: 'match',
        ownResource: async (_ctx, a) => `/api/v2/match/jobs/${await queuedJob(a)}`,
        foreignResource: async ({ owner }) => ({ url: `/api/v2/match/jobs/${await queuedJob(owner)}` }),
      },
      () => ({ app: t.app, db: t.db }),
    );

    test('a German CSV is recognised by its headers, matched row by row in order, and downloaded through the signed link with the catalog columns', async () => {
      const a = await createAccountWithToken(t.db);
      const created = await post(a, {}, { name: 'Kunden München.csv', content: germanCsv() });
      assert.equal(created.statusCode, 202, created.body);
      const job = created.json();
      assert.match(job.id, /^mjob_[A-Za-z0-9_-]{14}$/);
      assert.equal(created.headers.location, `/api/v2/match/jobs/${job.id}`);
      assert.deepEqual(job.mapping, {
        name: 'Firma',
        street: 'Straße',
        housenumber: 'Hausnummer',
        postcode: 'PLZ',
        city: 'Ort',
        phone: 'Telefon',
      });
      assert.equal(job.rows, businesses.length + 2);
      const done = await finished(a, job.id);
      assert.equal(done.status, 'succeeded', done.failure);
      const file = await download(done);
      assert.match(String(file.headers['content-type']), /^text\/csv/);
      assert.match(String(file.headers['content-disposition']), /Kunden/);
      assert.ok(file.body.startsWith('\uFEFF'), 'a BOM for Excel');
      const rows = parse(file.body.slice(1), { delimiter: ';', relax_column_count: false }) as string[][];
      const header = rows.shift()!;
      assert.deepEqual(header, ['Kundennr', 'Firma', 'Straße', 'Hausnummer', 'PLZ', 'Ort', 'Telefon', 'Notiz', ...resultColumns]);
      assert.equal(rows.length, businesses.length + 2, 'every row comes back');
      // The same records straight through the matcher: the file says what it says, row by row.
      const expected = await matchRecords(deps(), germanRecords());
      const col = (name: string) => header.indexOf(name);
      rows.forEach((row, i) => {
        const r = expected[i]!;
        assert.equal(row[0], i < businesses.length ? `K-${i + 1}` : row[0], 'the rows keep their order');
        if (i < businesses.length) assert.equal(row[1], businesses[i]!.name, "the list's own cells are kept as they were");
        const decision = r.error ? 'bad_row' : r.match ? 'matched' : 'unmatched';
        assert.equal(row[col('leadatlas_decision')], decision, `row ${i + 1}`);
        assert.equal(row[col('leadatlas_place_id')], r.match?.place.id ?? '', `row ${i + 1}`);
        if (r.match) {
          assert.equal(Number(row[col('leadatlas_score')]), Math.round(r.match.score * 1000) / 1000);
          assert.equal(row[col('leadatlas_name')], r.match.place.name);
          assert.equal(row[col('leadatlas_status')], r.match.place.status);
          assert.equal(row[col('leadatlas_phone')], r.match.place.phone ?? '');
          assert.equal(row[col('leadatlas_website')], r.match.place.website ?? '');
          assert.equal(row[col('leadatlas_email')], r.match.place.email ?? '');
          assert.equal(row[col('leadatlas_socials')], r.match.place.contacts.socials.map((s) => s.url).join(';'));
          assert.equal(row[col('leadatlas_category')], r.match.place.category ?? '');
        }
      });
      assert.equal(rows[0]![7], '=HYPERLINK("x")', "the customer's own cells are not rewritten");
      const bad = rows[businesses.length]!;
      assert.equal(bad[col('leadatlas_decision')], 'bad_row');
      assert.ok(bad[col('leadatlas_reason')]!.length > 0, 'a bad row says why');
      assert.equal(rows[businesses.length + 1]![col('leadatlas_decision')], 'unmatched');
      const matched = expected.filter((r) => r.match).length;
      assert.ok(matched >= businesses.length / 2, `real restaurants typed by hand are found: ${matched} of ${businesses.length}`);
      assert.deepEqual(done.progress, {
        done: businesses.length + 2,
        matched,
        unmatched: businesses.length + 2 - matched - 1,
        closed: expected.filter((r) => r.match && r.match.place.status !== 'open').length,
        bad_rows: 1,
      });
      assert.deepEqual(
        readdirSync(dataDir).filter((n) => n.startsWith(job.id)),
        [`${job.id}.csv`],
        'the upload is deleted; only the result stays',
      );
      // The month's quota keeps the rows matched, not the bad one.
      const usage = (await get(a, '/api/v1/user-api/usage')).json();
      assert.equal(usage.match_rows.used, businesses.length + 1);
    });

    test('an XLSX workbook comes back as a workbook, and an NDJSON file with an explicit mapping as NDJSON, row by row', async () => {
      const a = await createAccountWithToken(t.db);
      const some = businesses.slice(0, 8);
      const wb = XLSX.utils.book_new();
      XLSX.utils.book_append_sheet(
        wb,
        XLSX.utils.aoa_to_sheet([
          ['Ref', 'Empresa', 'Código postal', 'Localidade', 'Telefone'],
          ...some.map((b, i) => [i + 101, b.name, b.postcode, city.name, b.phone]),
          [109, '', '80331', city.name, ''],
        ]),
        'Clientes',
      );
      const xlsx = XLSX.write(wb, { type: 'buffer', bookType: 'xlsx' }) as Buffer;
      const fromXlsx = await post(a, { threshold: '0.5' }, { name: 'clientes.xlsx', content: xlsx });
      assert.equal(fromXlsx.statusCode, 202, fromXlsx.body);
      assert.deepEqual(fromXlsx.json().mapping, { name: 'Empresa', postcode: 'Código postal', city: 'Localidade', phone: 'Telefone' });
      const ndjson = `${some.map((b, i) => JSON.stringify({ id: i, label: b.name, town: city.name, extra: { keep: true } })).join('\n')}\nnot json\n`;
      const fromNdjson = await post(
        a,
        { mapping: JSON.stringify({ name: 'label', city: 'town' }) },
        { name: 'list.ndjson', content: ndjson },
      );
      assert.equal(fromNdjson.statusCode, 202, fromNdjson.body);
      const x = await finished(a, fromXlsx.json().id);
      assert.equal(x.status, 'succeeded', x.failure);
      const xFile = await download(x);
      assert.equal(xFile.headers['content-type'], 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
      assert.match(String(xFile.headers['content-disposition']), /clientes-leadatlas\.xlsx/);
      // Read back with SheetJS: the list's rows in order, its own cells, then the result columns.
      const book = XLSX.read(xFile.rawPayload, { type: 'buffer' });
      assert.equal(book.SheetNames.length, 1);
      const xRows = XLSX.utils.sheet_to_json<unknown[]>(book.Sheets[book.SheetNames[0]!]!, { header: 1, defval: null });
      assert.deepEqual(xRows[0], ['Ref', 'Empresa', 'Código postal', 'Localidade', 'Telefone', ...resultColumns]);
      assert.equal(xRows.length, some.length + 2, 'the header, every row, the bad row');
      const xExpected = await matchRecords(
        deps(),
        some.map((b, i) => ({
          ref: String(i + 1),
          name: b.name,
          city: city.name,
          ...(b.postcode ? { postcode: b.postcode } : {}),
          ...(b.phone ? { phone: b.phone } : {}),
        })),
        { threshold: 0.5 },
      );
      const col = (name: string) => 5 + resultColumns.indexOf(name as (typeof resultColumns)[number]);
      xRows.slice(1, -1).forEach((row, i) => {
        const r = xExpected[i]!;
        assert.equal(row[0], i + 101, 'a number of the list stays a number, and the rows keep their order');
        assert.equal(row[1], some[i]!.name);
        assert.equal(row[col('leadatlas_place_id')], r.match?.place.id ?? null, `row ${i + 1}`);
        assert.equal(row[col('leadatlas_decision')], r.match ? 'matched' : 'unmatched', `row ${i + 1}`);
        const best = r.match?.score ?? r.candidates[0]?.score;
        assert.equal(row[col('leadatlas_score')], best === undefined ? null : Math.round(best * 1000) / 1000, 'the score is a number');
        if (r.match) {
          assert.equal(row[col('leadatlas_name')], r.match.place.name);
          assert.equal(row[col('leadatlas_status')], r.match.place.status);
          assert.equal(row[col('leadatlas_phone')], r.match.place.phone);
          assert.equal(row[col('leadatlas_category')], r.match.place.category);
        }
      });
      assert.ok(
        xExpected.some((r) => r.match),
        'some rows match',
      );
      const bad = xRows.at(-1)!;
      assert.equal(bad[0], 109);
      assert.equal(bad[col('leadatlas_decision')], 'bad_row');
      assert.ok(String(bad[col('leadatlas_reason')]).length > 0, 'a bad row says why');
      const n = await finished(a, fromNdjson.json().id);
      assert.equal(n.status, 'succeeded', n.failure);
      const file = await download(n);
      assert.match(String(file.headers['content-type']), /ndjson/);
      const lines = file.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.equal(lines.length, some.length + 1);
      assert.deepEqual(lines[0].extra, { keep: true }, 'the objects keep their own fields');
      assert.equal(lines[0].label, some[0]!.name);
      assert.equal(lines.at(-1).leadatlas_decision, 'bad_row');
      assert.match(lines.at(-1).leadatlas_reason, /not a JSON object/);
    });

    test('as_leads makes every matched place a lead of the account, so only_new searches leave them out', async () => {
      const a = await createAccountWithToken(t.db);
      const search = async (extra = '') => {
        const res = await get(a, `/api/v2/map/search?type=restaurant&city=${encodeURIComponent(city.name)}&fields=id&per_page=1${extra}`);
        assert.equal(res.statusCode, 200, res.body);
        return res.json().total as number;
      };
      const before = await search('&only_new=true');
      const created = await post(a, { as_leads: 'true' }, { name: 'crm.csv', content: germanCsv() });
      assert.equal(created.statusCode, 202, created.body);
      assert.equal(created.json().as_leads, true);
      const done = await finished(a, created.json().id);
      assert.equal(done.status, 'succeeded', done.failure);
      const rows = parse((await download(done)).body.slice(1), { delimiter: ';' }) as string[][];
      const idCol = rows[0]!.indexOf('leadatlas_place_id');
      const matchedIds = new Set(
        rows
          .slice(1)
          .map((r) => r[idCol])
          .filter((id) => id !== ''),
      );
      assert.ok(matchedIds.size > 0);
      const leads = (await get(a, '/api/v1/user-api/places?per_page=100&fields=id')).json();
      assert.deepEqual(new Set(leads.data.map((l: { id: string }) => l.id)), matchedIds);
      // Search leaves closed places out whatever the leads: the open restaurants matched are what only_new now skips.
      const col = (name: string) => rows[0]!.indexOf(name);
      const restaurantsMatched = rows
        .slice(1)
        .filter((r) => r[idCol] !== '' && r[col('leadatlas_category')] === 'restaurant' && r[col('leadatlas_status')] === 'open').length;
      assert.equal(await search('&only_new=true'), before - restaurantsMatched);
    });

    test('the webhook arrives signed as match_job.succeeded and verifies with the README snippet', async () => {
      const verify = await readmeSnippet();
      const hook = await receiver([]);
      try {
        const a = await createAccountWithToken(t.db);
        const created = await post(a, { webhook_url: hook.url }, { name: 'crm.csv', content: germanCsv() });
        assert.equal(created.statusCode, 202, created.body);
        await finished(a, created.json().id);
        await eventually('the delivery', async () => (hook.received.length >= 1 ? true : undefined));
        const r = hook.received[0]!;
        assert.equal(verify(r.body, String(r.headers['leadatlas-signature']), await accountWebhookSecret(t.db, a.accountId)), true);
        const event = JSON.parse(r.body);
        assert.equal(event.type, 'match_job.succeeded');
        assert.equal(event.data.job.id, created.json().id);
        assert.equal(event.data.job.progress.done, businesses.length + 2);
        assert.match(event.data.job.download.url, /^\/api\/v2\/match\/jobs\/mjob_.+\/download\?expires=\d+&signature=[0-9a-f]{64}$/);
      } finally {
        await hook.close();
      }
    });

    test("a list larger than the month's match rows left is refused with 429 saying so, and nothing is queued", async () => {
      const a = await createAccountWithToken(t.db);
      await t.app.quotas.setQuotas(a.accountId, { matchRowsPerMonth: 10 });
      const res = await post(a, {}, { name: 'crm.csv', content: germanCsv() });
      assert.equal(res.statusCode, 429, res.body);
      assert.match(String(res.headers['content-type']), /application\/problem\+json/);
      const problem = res.json();
      assert.equal(problem.code, 'quota_exceeded');
      assert.deepEqual(problem['violated-policies'], ['match-rows']);
      assert.match(problem.detail, /has 32 rows and this account has 10 of its 10 match rows left this month/);
      assert.equal((await get(a, '/api/v2/match/jobs')).json().data.length, 0);
    });

    test('bad uploads are refused as problems naming the field, and leave no file behind', async () => {
      const a = await createAccountWithToken(t.db);
      const before = readdirSync(dataDir).length;
      const cases: Array<[Record<string, string>, { name: string; content: string } | undefined, number, string]> = [
        [{}, undefined, 400, 'body.file'],
        [{ threshold: '2' }, { name: 'a.csv', content: germanCsv() }, 400, 'body.threshold'],
        [{ mapping: '{"name": "Company"}' }, { name: 'a.csv', content: germanCsv() }, 400, 'body.mapping.name'],
        [{ mapping: '{"colour": "Firma"}' }, { name: 'a.csv', content: germanCsv() }, 400, 'body.mapping.colour'],
        [{}, { name: 'a.csv', content: 'Colour;Size\r\nred;2\r\n' }, 400, 'body.mapping.name'],
        [{}, { name: 'a.csv', content: 'Firma;Ort\r\n' }, 400, 'file'],
      ];
      for (const [fields, file, status, field] of cases) {
        const res = await post(a, fields, file);
        assert.equal(res.statusCode, status, res.body);
        assert.equal(res.json().errors[0].field, field, res.body);
      }
      assert.equal(readdirSync(dataDir).length, before);
      const json = await t.app.inject({
        method: 'POST',
        url: '/api/v2/match/jobs',
        headers: { authorization: a.authorization },
        payload: { file: 'x' },
      });
      assert.equal(json.statusCode, 400, json.body);
    });
  });
}
