import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { DashboardClient as Client } from '../../../test/helpers/dashboard-client.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import type { App } from '../../app.ts';
import { listSuppressions } from '../suppressions/suppressions.service.ts';

const password = 'a passphrase long enough';

/** A multipart/form-data body as a browser sends the upload form: fields first, in the form's order, then the file. */
function multipart(fields: Record<string, string>, file: { name: string; content: string } | null): { body: string; type: string } {
  const boundary = '----leadatlas' + Math.random().toString(36).slice(2);
  let body = '';
  for (const [k, v] of Object.entries(fields)) body += `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`;
  if (file)
    body += `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: text/csv\r\n\r\n${file.content}\r\n`;
  body += `--${boundary}--\r\n`;
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

for (const dialect of dialects)
  describe(`dashboard suppressions page on ${dialect.name}`, () => {
    let app: App;
    let t: TestApp;

    before(async () => {
      t = await buildTestApp({ dialect: dialect.name });
      app = t.app;
    });
    after(async () => {
      await t.close();
    });

    async function signedUp(): Promise<{ c: Client; accountId: number }> {
      const c = new Client(app);
      await c.get('/signup');
      const email = `s${Math.random().toString(36).slice(2)}@example.com`;
      const res = await c.post('/signup', { email, password });
      assert.equal(res.statusCode, 303);
      await c.get('/suppressions');
      const account = await app.accounts.findByEmail(email);
      assert.ok(account);
      return { c, accountId: account.id };
    }

    async function upload(c: Client, content: string, fields: Record<string, string> = {}, csrf: string | null = c.csrf()) {
      const { body, type } = multipart({ ...(csrf === null ? {} : { _csrf: csrf }), ...fields }, { name: 'list.csv', content });
      const res = await app.inject({
        method: 'POST',
        url: '/suppressions/upload',
        remoteAddress: c.ip,
        cookies: Object.fromEntries(c.cookies),
        headers: { 'content-type': type },
        payload: body,
      });
      if (String(res.headers['content-type']).startsWith('text/html')) c.lastHtml = res.body;
      return res;
    }

    const entries = async (accountId: number) => (await listSuppressions(t.db, accountId, { per_page: 1000 })).data;

    test('the page is in the navigation and shows an empty list with the upload form', async () => {
      const { c } = await signedUp();
      const res = await c.get('/suppressions');
      assert.equal(res.statusCode, 200);
      assert.match(res.body, /<a href="\/suppressions" aria-current="page">Suppressions<\/a>/);
      assert.match(res.body, /<form method="post" action="\/suppressions\/upload" enctype="multipart\/form-data"/);
      assert.match(res.body, /<input id="f-file" name="file" type="file"/);
      assert.match(res.body, /Your suppression list is empty/);
      for (const k of ['phone', 'domain', 'email', 'place']) assert.match(res.body, new RegExp(`data-count="${k}">0<`));
      assert.doesNotMatch(res.body, /<script>/);
    });

    test('a CSV upload goes through the suppressions service: counts per kind, entries listed, duplicates counted', async () => {
      const { c, accountId } = await signedUp();
      const res = await upload(c, 'value\n93 15 00 00\nshop.example.com\nSales@Example.org\n+377 93 15 00 00\n', {
        country: 'mc',
        on_invalid: 'reject',
      });
      assert.equal(res.statusCode, 200, res.body.slice(0, 500));
      assert.match(res.body, /data-added="3">3 entries added<\/strong> of 4 read; 1 already on the list/);
      assert.match(res.body, /data-count="phone">1</);
      assert.match(res.body, /data-count="domain">1</);
      assert.match(res.body, /data-count="email">1</);
      assert.match(res.body, /data-count="place">0</);
      assert.match(res.body, /<code>\+37793150000<\/code>/, "the national number is stored in E.164 with the form's country");
      assert.match(res.body, /<code>example\.com<\/code>/);
      assert.deepEqual(
        (await entries(accountId)).map((e) => e.key),
        ['+37793150000', 'example.com', 'sales@example.org'],
      );
    });

    test('an upload with an invalid line adds nothing and names the line, as the API does; with skip the others are added', async () => {
      const { c, accountId } = await signedUp();
      const csv = 'phone,+49 89 2199890\nfax,123\nexample.net\n';
      const refused = await upload(c, csv);
      assert.equal(refused.statusCode, 400);
      assert.match(refused.body, /Nothing was added/);
      assert.match(refused.body, /1 of 3 entries are not valid/);
      assert.match(
        refused.body,
        /<li>Line 2: &quot;fax,123&quot; must be a value, or type,value\[,country\] with a type of phone, domain, email, place<\/li>/,
      );
      assert.deepEqual(await entries(accountId), []);

      const skipped = await upload(c, csv, { on_invalid: 'skip' });
      assert.equal(skipped.statusCode, 200);
      assert.match(skipped.body, /2 entries added<\/strong> of 3 read; 1 invalid line was skipped/);
      assert.match(skipped.body, /<li>Line 2: &quot;fax,123&quot; must be a value/);
      assert.match(skipped.body, /id="on-invalid-skip" name="on_invalid" value="skip" checked/, 'the choice is kept');
      assert.equal((await entries(accountId)).length, 2);
    });

    test('a national number without a country, a bad country or no file are refused on the page', async () => {
      const { c, accountId } = await signedUp();
      const national = await upload(c, '089 2199890\n');
      assert.equal(national.statusCode, 400);
      assert.match(national.body, /Line 1: &quot;089 2199890&quot; is not a valid international phone number/);
      const badCountry = await upload(c, '089 2199890\n', { country: 'Germany' });
      assert.equal(badCountry.statusCode, 400);
      assert.match(badCountry.body, /country must be a two-letter ISO 3166-1 code/);
      const { body, type } = multipart({ _csrf: c.csrf() }, { name: '', content: '' });
      const noFile = await app.inject({
        method: 'POST',
        url: '/suppressions/upload',
        remoteAddress: c.ip,
        cookies: Object.fromEntries(c.cookies),
        headers: { 'content-type': type },
        payload: body,
      });
      assert.equal(noFile.statusCode, 400);
      assert.match(noFile.body, /Choose a CSV file to upload/);
      assert.deepEqual(await entries(accountId), []);
    });

    test('an upload without the form token, or with the token after the file, is refused and adds nothing', async () => {
      const { c, accountId } = await signedUp();
      const none = await upload(c, 'example.com\n', {}, null);
      assert.equal(none.statusCode, 403);
      assert.match(none.body, /This form has expired/);
      const wrong = await upload(c, 'example.com\n', {}, 'x'.repeat(43));
      assert.equal(wrong.statusCode, 403);
      // The token must come before the file: a part after it is not read before the file is.
      const boundary = '----late';
      const late = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\nContent-Type: text/csv\r\n\r\nexample.com\r\n--${boundary}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${c.csrf()}\r\n--${boundary}--\r\n`;
      const after = await app.inject({
        method: 'POST',
        url: '/suppressions/upload',
        remoteAddress: c.ip,
        cookies: Object.fromEntries(c.cookies),
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        payload: late,
      });
      assert.equal(after.statusCode, 403);
      assert.deepEqual(await entries(accountId), []);
      // Other dashboard forms do not take multipart: their token is never read from one.
      const { body, type } = multipart({ _csrf: c.csrf(), name: 'x', scopes: 'search', expiry: '30' }, null);
      const tokens = await app.inject({
        method: 'POST',
        url: '/tokens',
        remoteAddress: c.ip,
        cookies: Object.fromEntries(c.cookies),
        headers: { 'content-type': type },
        payload: body,
      });
      assert.equal(tokens.statusCode, 403);
      // Signed out, the upload leads to sign-in.
      const stranger = new Client(app);
      await stranger.get('/signin');
      const { body: b2, type: t2 } = multipart({ _csrf: stranger.csrf() }, { name: 'a.csv', content: 'example.com\n' });
      const signedOut = await app.inject({
        method: 'POST',
        url: '/suppressions/upload',
        remoteAddress: stranger.ip,
        cookies: Object.fromEntries(stranger.cookies),
        headers: { 'content-type': t2 },
        payload: b2,
      });
      assert.equal(signedOut.statusCode, 303);
    });

    test('a body that is not a readable upload answers 4xx and adds nothing: no boundary, cut short, too many parts, an unclosed quote', async () => {
      const { c, accountId } = await signedUp();
      const csrf = c.csrf();
      const b = '----x';
      const head = `--${b}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${csrf}\r\n--${b}\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\nContent-Type: text/csv\r\n\r\n`;
      const cases: Array<[string, string, number, RegExp]> = [
        ['multipart/form-data', 'garbage', 400, /The upload could not be read: Multipart: Boundary not found/],
        [
          `multipart/form-data; boundary=${b}`,
          `${head}example.com\nexample.org`,
          400,
          /The upload ended before its end: nothing was added/,
        ],
        [
          `multipart/form-data; boundary=${b}`,
          Array.from({ length: 20 }, (_, i) => `--${b}\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nv\r\n`).join('') +
            `--${b}--\r\n`,
          413,
          /The upload could not be read/,
        ],
        [`multipart/form-data; boundary=${b}`, `${head}example.com\n"abc\r\n--${b}--\r\n`, 400, /The CSV cannot be read: Quote Not Closed/],
      ];
      for (const [type, payload, status, message] of cases) {
        const res = await app.inject({
          method: 'POST',
          url: '/suppressions/upload',
          remoteAddress: c.ip,
          cookies: Object.fromEntries(c.cookies),
          headers: { 'content-type': type },
          payload,
        });
        assert.equal(res.statusCode, status, payload.slice(-40));
        assert.match(res.body, message);
      }
      assert.deepEqual(await entries(accountId), []);
    });

    test('an entry is removed with its button; without the token it stays', async () => {
      const { c, accountId } = await signedUp();
      await upload(c, 'example.com\nexample.org\n');
      const [first, second] = await entries(accountId);
      assert.ok(first && second);
      const page = await c.get('/suppressions');
      assert.ok(page.body.includes(`action="/suppressions/${first.id}/remove"`));
      assert.equal((await c.post(`/suppressions/${first.id}/remove`, {}, { csrf: null })).statusCode, 403);
      assert.equal((await entries(accountId)).length, 2);
      const res = await c.post(`/suppressions/${first.id}/remove`, {});
      assert.equal(res.statusCode, 303);
      assert.equal(res.headers.location, '/suppressions?removed=1');
      const after = await c.get(res.headers.location as string);
      assert.match(after.body, /The entry was removed/);
      assert.match(after.body, /data-count="domain">1</);
      assert.deepEqual(
        (await entries(accountId)).map((e) => e.id),
        [second.id],
      );
      assert.equal((await c.post('/suppressions/abc/remove', {})).statusCode, 404);
    });

    test("another account's entry cannot be removed", async () => {
      const owner = await signedUp();
      await upload(owner.c, 'example.com\n');
      const [entry] = await entries(owner.accountId);
      assert.ok(entry);
      const other = await signedUp();
      const res = await other.c.post(`/suppressions/${entry.id}/remove`, {});
      assert.equal(res.statusCode, 404);
      assert.match(String(res.headers['content-type']), /text\/html/);
      assert.equal((await entries(owner.accountId)).length, 1);
      assert.doesNotMatch((await other.c.get('/suppressions')).body, /example\.com<\/th>/, "another account's entries are not listed");
      const all = await other.c.post('/suppressions/remove-all', { confirm: 'yes' });
      assert.equal(all.headers.location, '/suppressions?removed_all=0');
      assert.equal((await entries(owner.accountId)).length, 1);
    });

    test('remove all needs the confirmation box and the token, then empties the list', async () => {
      const { c, accountId } = await signedUp();
      await upload(c, 'example.com\nexample.org\n+377 93 15 00 00\n');
      await c.get('/suppressions');
      assert.equal((await c.post('/suppressions/remove-all', { confirm: 'yes' }, { csrf: null })).statusCode, 403);
      const unconfirmed = await c.post('/suppressions/remove-all', {});
      assert.equal(unconfirmed.statusCode, 400);
      assert.match(unconfirmed.body, /must be ticked to remove every entry/);
      assert.equal((await entries(accountId)).length, 3);
      const res = await c.post('/suppressions/remove-all', { confirm: 'yes' });
      assert.equal(res.statusCode, 303);
      const after = await c.get(res.headers.location as string);
      assert.match(after.body, /3 entries were removed/);
      assert.match(after.body, /Your suppression list is empty/);
      assert.deepEqual(await entries(accountId), []);
    });

    test('the list pages by cursor', async () => {
      const { c } = await signedUp();
      const csv = Array.from({ length: 60 }, (_, i) => `d${i}-example.com`).join('\n');
      await upload(c, csv);
      const first = await c.get('/suppressions');
      assert.match(first.body, /Entries 1–50 of 60/);
      const next = /href="(\/suppressions\?cursor=[^"]+)" rel="next"/.exec(first.body)?.[1]?.replaceAll('&amp;', '&');
      assert.ok(next);
      const second = await c.get(next);
      assert.match(second.body, /Entries 51–60 of 60/);
      assert.match(second.body, /d59-example\.com/);
      assert.doesNotMatch(second.body, /rel="next"/);
      const bad = await c.get('/suppressions?cursor=not-a-cursor');
      assert.equal(bad.statusCode, 400);
      assert.match(String(bad.headers['content-type']), /text\/html/);
    });
  });
