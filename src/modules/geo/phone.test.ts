import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { normalisePhone } from './phone.ts';

const data = (path: string) => fileURLToPath(new URL(`../../../../shared/data/${path}`, import.meta.url));

interface OsmRecord {
  id: string;
  extract: string;
  tags: Record<string, string>;
}

const osm: OsmRecord[] = gunzipSync(readFileSync(data('osm/osm-pois-all.ndjson.gz')))
  .toString('utf8')
  .split('\n')
  .filter((l) => l.length > 0)
  .map((l) => JSON.parse(l) as OsmRecord);
const osmPhone = (id: string): string => {
  const r = osm.find((x) => x.id === id);
  const phone = r?.tags.phone ?? r?.tags['contact:phone'];
  assert.ok(phone, `OSM record ${id} has a phone in the data file`);
  return phone;
};

const extractCountry: Record<string, string> = {
  'andorra-2026': 'AD',
  'helsinki-center-2019': 'FI',
  'liechtenstein-2024': 'LI',
  'london-center-2020': 'GB',
  'malta-2018': 'MT',
  'monaco-2026': 'MC',
  'munich-center-2020': 'DE',
  'porto-2020': 'PT',
  'tokyo-center': 'JP',
};

describe('normalisePhone on real OpenStreetMap values', () => {
  test('drops the trunk prefix written in brackets after the country code (Ratskeller, Munich)', () => {
    assert.equal(normalisePhone(osmPhone('n60013073'), 'DE'), '+49892199890');
  });

  test('reads a national number with the place country (Hehku, Helsinki; a 7-Eleven in Tokyo)', () => {
    assert.equal(normalisePhone(osmPhone('n4034025843'), 'FI'), '+358207681610');
    assert.equal(normalisePhone(osmPhone('n563665430'), 'JP'), '+81333214729');
  });

  test('reads the 00 international prefix (Coop Schaan, Liechtenstein)', () => {
    assert.equal(normalisePhone(osmPhone('w987120730'), 'LI'), '+4232360620');
  });

  test('takes the first of several numbers separated by ; or | (ESpace, Helsinki; Espiga, Porto)', () => {
    assert.equal(normalisePhone(osmPhone('n4754875494'), 'FI'), '+3589626044');
    assert.equal(normalisePhone(osmPhone('n7031904015'), 'PT'), '+351934214308');
  });

  test('tells a local number from one that carries the country code without a plus (Malta)', () => {
    assert.equal(normalisePhone(osmPhone('n4678386489'), 'MT'), '+35621556170');
    assert.equal(normalisePhone(osmPhone('n5484406423'), 'MT'), '+35621241000');
  });

  test('normalises nearly every phone of the OpenStreetMap extracts and only to E.164', () => {
    let valid = 0;
    let total = 0;
    for (const r of osm) {
      const raw = r.tags.phone ?? r.tags['contact:phone'];
      if (!raw) continue;
      total++;
      const e164 = normalisePhone(raw, extractCountry[r.extract] ?? null);
      if (e164 === null) continue;
      valid++;
      assert.match(e164, /^\+[1-9]\d{6,14}$/, `${raw} gave ${e164}`);
    }
    assert.ok(total > 3000, `expected the extracts to hold over 3,000 phones, found ${total}`);
    assert.ok(valid / total > 0.98, `${valid} of ${total} normalised`);
  });
});

describe('normalisePhone on real Michelin and scraped values', () => {
  const michelin = parse(gunzipSync(readFileSync(data('places/michelin-guide-2022-6510.csv.gz'))), { columns: true }) as Array<
    Record<string, string>
  >;
  const byName = (name: string) => {
    const row = michelin.find((r) => r.Name === name);
    assert.ok(row, `${name} is in the Michelin file`);
    return row;
  };

  test('reads Michelin digit strings as international numbers that lack their plus', () => {
    assert.equal(normalisePhone(byName('Enoteca Pinchiorri').PhoneNumber!, 'IT'), '+3905526311');
    assert.equal(normalisePhone(byName('Inter Scaldes').PhoneNumber!, 'NL'), '+31113381753');
  });

  test('rejects numbers a spreadsheet turned into scientific notation', () => {
    const damaged = michelin.filter((r) => /E\+/.test(r.PhoneNumber ?? ''));
    assert.ok(damaged.length > 100, 'the Michelin file has spreadsheet-damaged numbers');
    for (const r of damaged) assert.equal(normalisePhone(r.PhoneNumber!, 'CN'), null, r.PhoneNumber);
  });

  test('keeps a number from a neighbouring country that the source filed under another (Monaco under France)', () => {
    const monaco = michelin.find((r) => (r.Address ?? '').endsWith('France') && (r.PhoneNumber ?? '').startsWith('377'));
    assert.ok(monaco, 'the Michelin file lists a Monaco number under France');
    assert.equal(normalisePhone(monaco.PhoneNumber!, 'FR'), `+${monaco.PhoneNumber}`);
  });

  test('drops an extension and returns null for text that is not a number', () => {
    const gmaps = parse(gunzipSync(readFileSync(data('ratings/gmaps-scraper-europe-115.csv.gz'))), { columns: true }) as Array<
      Record<string, string>
    >;
    const tuccio = gmaps.find((r) => r.title === 'Tuccio - Cucina Caffè');
    assert.ok(tuccio?.phone, 'the scraped file has Tuccio with a phone');
    assert.equal(normalisePhone(`${tuccio.phone} ext. 12`, 'IT'), '+393427988613');
    assert.equal(normalisePhone('https://www.viinitie.fi/', 'FI'), null);
    assert.equal(normalisePhone('', 'FI'), null);
  });
});

describe('normalisePhone answers remembered within an import', () => {
  test('reads the same national number once per country, not once for all', () => {
    // Remembered answers are keyed by country and field: a national number means another line elsewhere.
    const munich = normalisePhone('089 2199890', 'DE');
    const vienna = normalisePhone('089 2199890', 'AT');
    assert.equal(munich, '+49892199890');
    assert.notEqual(vienna, munich);
    assert.equal(normalisePhone('089 2199890', 'DE'), munich);
    assert.equal(normalisePhone('089 2199890', null), null, 'without a country a national number is not read');
  });
});
