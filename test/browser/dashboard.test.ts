import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import type { App } from '../../src/app.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { requireTool } from '../helpers/tools.ts';

/**
 * The dashboard driven end to end in headless Chromium (Debian's `chromium`, through playwright-core):
 * a real server on a random port over a temp SQLite file with one OpenStreetMap extract imported.
 * Screenshots of every page go to test-results/dashboard/ for review.
 */

const repoRoot = resolve(import.meta.dirname, '../..');
const extract = resolve(repoRoot, '../shared/data/osm/monaco-2026.osm.pbf');
const shots = join(repoRoot, 'test-results', 'dashboard');

describe('the dashboard in a real browser', { timeout: 240_000 }, () => {
  let app: App;
  let testApp: TestApp | undefined;
  let context: BrowserContext;
  let page: Page;
  let origin: string;
  let profile: string;
  const consoleErrors: string[] = [];
  let token = '';

  const shot = async (name: string) => {
    await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  };
  const api = (authorization: string) => fetch(`${origin}/api/v1/user-api/places`, { headers: { authorization } });

  before(async () => {
    // Fails, not skips: `npm test` installs the package (scripts/test-deps.sh), and a silently skipped browser test proves nothing.
    const chromiumPath = requireTool('chromium');
    assert.ok(existsSync(extract), `demo extract missing: ${extract}`);
    mkdirSync(shots, { recursive: true });
    testApp = await buildTestApp({ files: [extract] });
    app = testApp.app;
    await app.listen({ host: '127.0.0.1', port: 0 });
    origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    profile = mkdtempSync(join(tmpdir(), 'leadatlas-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
      viewport: { width: 1280, height: 900 },
      acceptDownloads: true,
    });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
  });

  after(async () => {
    await context?.close();
    await testApp?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  test('a visitor signs up and lands on token creation', async () => {
    await page.goto(`${origin}/signup`);
    await shot('01-sign-up');
    await page.getByLabel('Email').fill('browser@example.com');
    await page.getByLabel('Password').fill('a long browser passphrase');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(`${origin}/tokens/new?welcome=1`);
    await page.getByRole('status').filter({ hasText: 'Welcome' }).waitFor();
    await shot('02-new-token');
  });

  test('a token is created, shown once and copied with the copy button', async () => {
    await page.getByLabel('Name', { exact: true }).fill('browser test');
    await page.getByLabel(/^export/).check();
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByRole('heading', { name: 'Your new token' }).waitFor();
    token = await page.getByTestId('token-value').inputValue();
    assert.match(token, /^la_pat_[0-9A-Za-z]{36}$/);
    await page.getByTestId('copy-token').click();
    await page.locator('.copy-status[data-for="token-value"]').filter({ hasText: 'Copied' }).waitFor();
    // A string expression: the test is type-checked without the DOM library.
    const copied = await page.evaluate('navigator.clipboard.readText()');
    assert.equal(copied, token);
    assert.ok(
      (await page.locator('#first-call').innerText()).includes(`Authorization: Bearer ${token}`),
      'the first call uses the new token',
    );
    await shot('03-token-created');
  });

  test('the copied token calls the API', async () => {
    const res = await api(`Bearer ${token}`);
    assert.equal(res.status, 200, await res.text());
  });

  test('the token list shows the prefix and last use, never the token', async () => {
    await page.goto(`${origin}/tokens`);
    const row = page.getByRole('row', { name: /browser test/ });
    await row.waitFor();
    assert.ok((await row.innerText()).includes(token.slice(0, 13)));
    assert.equal((await page.content()).includes(token), false);
    assert.match(await row.innerText(), /127\.0\.0\.1/, 'last used from the test client');
    await shot('04-tokens');
  });

  test('a revoked token is refused by the API', async () => {
    await page.getByRole('button', { name: 'Revoke browser test' }).click();
    await page.getByRole('status').filter({ hasText: 'was revoked' }).waitFor();
    await shot('05-token-revoked');
    const res = await api(`Bearer ${token}`);
    assert.equal(res.status, 401);
    assert.equal(((await res.json()) as { reason: string }).reason, 'revoked');
  });

  test('the search form suggests kinds of business, cities and names from the catalog as one types', async () => {
    await page.goto(`${origin}/search`);
    // Each option of a datalist as [value, its data-count].
    const options = async (list: string) =>
      (await page.evaluate(
        `[...document.querySelectorAll('datalist#${list} option')].map((o) => [o.value, Number(o.dataset.count)])`,
      )) as Array<[string, number]>;
    const filled = (list: string) => page.locator(`datalist#${list} option[data-count]`).first().waitFor({ state: 'attached' });
    await page.getByLabel('Type of business').pressSequentially('restaur');
    await filled('type-suggestions');
    const types = await options('type-suggestions');
    assert.ok(
      types.some(([value, count]) => value === 'Restaurant' && count > 10),
      JSON.stringify(types),
    );
    await page.getByLabel('City').pressSequentially('Mona');
    await filled('city-suggestions');
    assert.equal((await options('city-suggestions'))[0]![0], 'Monaco');
    await page.getByLabel('Name contains').pressSequentially('pharm');
    await filled('name-suggestions');
    const names = await options('name-suggestions');
    assert.ok(names.length > 0 && names.every(([value]) => /pharm/i.test(String(value))), JSON.stringify(names));
    await shot('05b-search-suggestions');
  });

  test('a search shows the exact total, a table and the map, and its CSV has that many rows', async () => {
    await page.goto(`${origin}/search`);
    await shot('06-search');
    await page.getByLabel('Type of business').fill('restaurant');
    await page.getByLabel('City').fill('Monaco');
    // Alone, "Monaco" is also Munich's Italian name, and Munich is larger: the country picks the city.
    await page.getByLabel('Country').fill('MC');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.waitForURL(/\/searches\/srch_[a-z2-7]{16}$/);
    const total = Number(await page.locator('[data-total]').getAttribute('data-total'));
    assert.ok(total > 10, `restaurants in Monaco: ${total}`);
    assert.equal(await page.locator('svg.map .map-result').count(), total, 'every restaurant of the extract has coordinates');
    assert.ok((await page.locator('svg.map .map-footprint circle').count()) > total, 'the other places draw the footprint');
    assert.ok((await page.locator('table.results tbody tr').count()) > 0);
    await shot('07-search-results');
    await page.locator('figure.map-card').screenshot({ path: join(shots, '07b-search-map.png') });

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-csv').click()]);
    assert.match(download.suggestedFilename(), /^leadatlas-monaco-restaurant-\d{4}-\d{2}-\d{2}\.csv$/);
    const rows = parse(readFileSync(await download.path()), { columns: true, bom: true, skip_empty_lines: true }) as Array<
      Record<string, string>
    >;
    assert.equal(rows.length, total);
    assert.ok(
      rows.every((r) => r.category === 'restaurant' || r.category?.startsWith('restaurant')),
      'only restaurants',
    );
  });

  test('the searches page lists the search and its export', async () => {
    await page.goto(`${origin}/searches`);
    await page
      .getByRole('link', { name: /Restaurant in Monaco/i })
      .first()
      .waitFor();
    assert.match(await page.locator('table').nth(1).innerText(), /CSV[\s\S]*Complete/);
    await shot('08-searches');
  });

  test('a background export job is started from the search, finishes on the Export jobs page, and its file downloads', async () => {
    await page.goto(`${origin}/searches`);
    await page
      .getByRole('link', { name: /Restaurant in Monaco/i })
      .first()
      .click();
    await page.waitForURL(/\/searches\/srch_[a-z2-7]{16}$/);
    const total = Number(await page.locator('[data-total]').getAttribute('data-total'));
    await page.getByLabel('Background export').selectOption('csv');
    await page.getByTestId('start-job').click();
    await page.waitForURL(`${origin}/exports`);
    const status = page.getByTestId('job-status').first();
    for (let i = 0; i < 200 && (await status.innerText()) !== 'Ready'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      await page.reload();
    }
    assert.equal(await status.innerText(), 'Ready');
    assert.match(await page.getByTestId('webhook-secret').inputValue(), /^whsec_/);
    await shot('08b-export-jobs');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('job-download').first().click()]);
    assert.match(download.suggestedFilename(), /^leadatlas-monaco-restaurant-\d{4}-\d{2}-\d{2}\.csv$/);
    const rows = parse(readFileSync(await download.path()), { columns: true, bom: true, skip_empty_lines: true }) as Array<
      Record<string, string>
    >;
    assert.equal(rows.length, total);
  });

  test('a suppression CSV with the phone of a listed place, written nationally, hides that place from the same search', async () => {
    const runSearch = async () => {
      await page.goto(`${origin}/search`);
      await page.getByLabel('Type of business').fill('restaurant');
      await page.getByLabel('City').fill('Monaco');
      await page.getByLabel('Country').fill('MC');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.waitForURL(/\/searches\/srch_[a-z2-7]{16}$/);
      return Number(await page.locator('[data-total]').getAttribute('data-total'));
    };
    const before = await runSearch();
    assert.equal(await page.getByTestId('suppressed').count(), 0, 'nothing hidden yet');
    // The first listed place with a phone; its number as the page links it (E.164), written as a Monegasque would.
    const link = page.locator('table.results tbody tr td a[href^="tel:+377"]').first();
    const e164 = (await link.getAttribute('href'))!.slice('tel:'.length);
    const name = await link.locator('xpath=ancestor::tr/th').innerText();
    const national = e164.slice(4).replace(/(\d\d)(?=\d)/g, '$1 ');
    assert.match(national, /^\d\d( \d{1,2})+$/);
    const sameNumber = async () => page.locator(`table.results tbody tr td a[href="tel:${e164}"]`).count();
    assert.ok((await sameNumber()) >= 1);

    await page.getByRole('link', { name: 'Suppressions' }).click();
    await page.waitForURL(`${origin}/suppressions`);
    await page.getByText('Your suppression list is empty').waitFor();
    await shot('08c-suppressions-empty');
    await page.getByLabel(/^Country of numbers/).fill('MC');
    await page
      .getByLabel('CSV file')
      .setInputFiles({ name: 'do-not-call.csv', mimeType: 'text/csv', buffer: Buffer.from(`phone\n${national}\n`) });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.getByTestId('upload-result').waitFor();
    assert.match(await page.getByTestId('upload-result').innerText(), /1 entry added of 1 read/);
    assert.equal(await page.locator('[data-count="phone"]').innerText(), '1');
    assert.equal(await page.locator('[data-count="domain"]').innerText(), '0');
    assert.equal(await page.locator('[data-count="email"]').innerText(), '0');
    assert.equal(await page.locator('[data-count="place"]').innerText(), '0');
    const row = page.getByRole('row', { name: new RegExp(national) });
    assert.match(await row.innerText(), new RegExp(`phone\\s+\\${e164}`), 'stored as the number in E.164');
    await shot('08d-suppressions-uploaded');

    const after = await runSearch();
    const hidden = Number((await page.getByTestId('suppressed').innerText()).match(/^(\d+) hidden by your suppression list$/)?.[1]);
    assert.ok(hidden >= 1, `hidden: ${hidden}`);
    assert.equal(after, before - hidden, 'the total drops by what the list hides');
    assert.equal(await sameNumber(), 0, `no listed place has the number any more (${name} had it)`);
    await shot('08e-search-with-suppressions');
  });

  test('the usage page charts the API calls of the day', async () => {
    await app.usage.flush();
    await page.goto(`${origin}/usage`);
    const today = new Date().toISOString().slice(0, 10);
    await page.getByText('The same numbers as a table').click();
    const cell = page.getByRole('row', { name: new RegExp(today) }).getByRole('cell');
    assert.equal(await cell.innerText(), '1', 'one successful call today (the refused one is not counted)');
    await shot('09-usage');
  });

  test('the account page, sign-out and a keyboard-only sign-in work', async () => {
    await page.goto(`${origin}/account/password`);
    await shot('10-account');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${origin}/signin`);
    await shot('11-sign-in');
    // Keyboard only: skip link, then Tab through the form and submit with Enter.
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement.textContent'), 'Skip to content');
    await page.getByLabel('Email').focus();
    await page.keyboard.type('browser@example.com');
    await page.keyboard.press('Tab');
    await page.keyboard.type('a long browser passphrase');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${origin}/search`);
  });

  test('no page logged a script error or a content-security-policy violation', () => {
    assert.deepEqual(consoleErrors, []);
  });
});
