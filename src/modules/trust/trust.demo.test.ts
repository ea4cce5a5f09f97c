import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { copyTestSqlite, type TestSqlite } from '../../../test/helpers/databases.ts';
import { importFiles } from '../../bootstrap.ts';
import { isParkedPage } from '../contacts/parked.ts';
import { emailStatuses, phoneTypes, websiteStatuses } from '../contacts/trust.types.ts';
import { placeRowToPlace, publicPlaceSelection } from '../places/places.schema.ts';
import { refreshTrust } from './trust.service.ts';

const demoDir = resolve(import.meta.dirname, '../../../data/osm');
const websitesDir = resolve(import.meta.dirname, '../../../../shared/data/websites');

describe('every contact of a real extract of the demo data carries a status and a confidence', () => {
  let t: TestSqlite;
  before(async () => {
    t = await copyTestSqlite('prepared');
    await importFiles(t.db, [join(demoDir, 'munich-center-2020.osm.pbf'), join(demoDir, 'monaco-2026.osm.pbf')]);
  });
  after(async () => t.dispose());

  test('after one pass, each email, phone and website of every place has its status and a confidence, and every place a lead_score', async () => {
    const pass = await refreshTrust(t.db);
    assert.equal(pass.full, true);
    const rows = await t.db.kysely
      .selectFrom('places')
      .select([...publicPlaceSelection, 'places.email_status', 'places.phone_type', 'places.website_status'])
      .where('merged_into', 'is', null)
      .execute();
    assert.ok(rows.length > 1_000, `${rows.length} places`);
    let values = 0;
    for (const row of rows) {
      const place = placeRowToPlace(row);
      assert.ok(row.lead_score !== null && row.lead_score >= 0 && row.lead_score <= 1, `a stored lead_score for ${place.id}`);
      const { emails, phones, websites } = place.contacts;
      for (const e of emails) assert.ok((emailStatuses as readonly string[]).includes(e.status) && e.confidence >= 0 && e.confidence <= 1);
      for (const p of phones) assert.ok((phoneTypes as readonly string[]).includes(p.type) && p.confidence >= 0 && p.confidence <= 1);
      for (const w of websites)
        assert.ok((websiteStatuses as readonly string[]).includes(w.status) && w.confidence >= 0 && w.confidence <= 1);
      values += emails.length + phones.length + websites.length;
      assert.equal(row.email_status === null, emails.length === 0, `the summary of ${place.id} follows its emails`);
      assert.equal(row.phone_type === null, phones.length === 0);
      assert.equal(row.website_status === null, websites.length === 0);
      // A valid number shows its international form; the raw value stays as written.
      if (place.phone_e164 && phones[0]?.valid) assert.equal(place.phone, phones[0].international);
    }
    assert.ok(values > 1_000, `${values} contact values judged`);
    const again = await refreshTrust(t.db);
    assert.equal(again.changed, 0, 'a second pass finds nothing to change');
  });
});

describe('the parked-page detector on real saved business pages (../shared/data/websites)', () => {
  test('takes none of the 104 saved business pages for a parking page', () => {
    const index = readFileSync(join(websitesDir, 'index.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as { file: string; url: string | null });
    assert.ok(index.length >= 100);
    const parked = index.filter((p) => isParkedPage(readFileSync(join(websitesDir, p.file), 'latin1'), p.url ?? undefined));
    assert.deepEqual(
      parked.map((p) => p.file),
      [],
    );
    assert.ok(readdirSync(websitesDir).length > 0);
  });

  test('recognises the usual parking and for-sale pages by their services and their words', () => {
    const pages = [
      '<html><head><title>example-bakery.de</title></head><body><script src="https://www.google.com/adsense/domains/caf.js"></script><div id="relatedsearches"></div></body></html>',
      '<html><body><h1>example-bakery.de</h1><p>This domain may be for sale!</p><a href="https://www.sedo.com/search/details/?domain=example-bakery.de">Buy this domain</a></body></html>',
      '<html><body><iframe src="https://sedoparking.com/frmpark/example-bakery.de"></iframe></body></html>',
      '<html><body><script src="https://img1.wsimg.com/parking-lander/static/js/main.js"></script><div id="root"></div></body></html>',
      '<html><body><h1>Diese Domain steht zum Verkauf</h1><p>Jetzt Angebot abgeben.</p></body></html>',
      '<html><body><p>example-bakery.de is parked free, courtesy of GoDaddy.com.</p></body></html>',
      '<html><head><meta http-equiv="refresh" content="0; url=https://www.hugedomains.com/domain_profile.cfm?d=example-bakery.de"></head></html>',
      '<html><body><a href="https://dan.com/buy-domain/example-bakery.de">example-bakery.de</a></body></html>',
    ];
    for (const html of pages) assert.equal(isParkedPage(html, 'http://example-bakery.de/'), true, html);
  });

  test('does not take a business page that mentions a sale, parking or a marketplace for one', () => {
    const filler = 'Frische Brötchen, Brezen und Kuchen jeden Morgen ab sechs Uhr. '.repeat(60);
    const pages = [
      `<html><body><h1>Bäckerei Huber</h1><p>${filler}</p><p>Our old domain is for sale: see sedo.com.</p></body></html>`,
      '<html><body><h1>Hotel Adler</h1><p>Parking in our garage.</p><img src="https://hotel-adler.de/images/parking/garage.jpg"><a href="/parking/">Parking</a></body></html>',
      '<html><body><h1>Café Rosa</h1><p>Tel. 089 123456</p><a href="https://www.facebook.com/caferosa">Facebook</a></body></html>',
    ];
    for (const html of pages) assert.equal(isParkedPage(html, 'https://example-cafe.de/'), false, html);
  });
});
