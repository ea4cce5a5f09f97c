import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { DashboardClient as Client } from '../../../test/helpers/dashboard-client.ts';
import { eventually } from '../../../test/helpers/eventually.ts';

const password = 'a passphrase long enough';

describe('dashboard: Match a list (sqlite)', () => {
  let t: TestApp;
  const dataDir = mkdtempSync(join(tmpdir(), 'leadatlas-match-page-'));

  before(async () => {
    t = await buildTestApp({ dialect: 'sqlite', env: { EXPORT_DATA_DIR: dataDir } });
  });
  after(async () => {
    await t.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const upload = async (c: Client, content: string, csrf = c.csrf()) => {
    const boundary = '----leadatlas-match-page';
    const body =
      `--${boundary}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${csrf}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="Kunden.csv"\r\nContent-Type: text/csv\r\n\r\n${content}\r\n--${boundary}--\r\n`;
    return t.app.inject({
      method: 'POST',
      url: '/match/upload',
      remoteAddress: c.ip,
      cookies: Object.fromEntries(c.cookies),
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: body,
    });
  };

  test('a list uploaded on the page shows the columns it recognised, its progress and summary, and a download once ready', async () => {
    const c = new Client(t.app);
    await c.get('/signup');
    const email = `m${Math.random().toString(36).slice(2)}@example.com`;
    assert.equal((await c.post('/signup', { email, password })).statusCode, 303);
    const page = await c.get('/match');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /<a href="\/match" aria-current="page">Match a list<\/a>/);
    assert.match(page.body, /<form method="post" action="\/match\/upload" enctype="multipart\/form-data"/);
    const res = await upload(c, 'Firma;PLZ;Ort;Telefon\r\nZzyzx Quantenschmiede;80331;München;089 1234567\r\n;80331;München;\r\n');
    assert.equal(res.statusCode, 303, res.body.slice(0, 400));
    const location = String(res.headers.location);
    assert.match(location, /^\/match\?job=mjob_/);
    const ready = await eventually('the job to be ready', async () => {
      const r = await c.get(location);
      return /data-testid="match-download"/.test(r.body) ? r.body : undefined;
    });
    assert.match(ready, /<th scope="row">name<\/th><td>Firma<\/td>/);
    assert.match(ready, /<th scope="row">postcode<\/th><td>PLZ<\/td>/);
    assert.match(ready, /2 of 2 rows: 0 matched \(0 closed\), 1 unmatched, 1 bad/);
    const refused = await upload(c, 'Colour;Size\r\nred;2\r\n');
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /data-testid="match-error"/);
    assert.match(refused.body, /no column of the list is recognised as the business/);
  });
});
