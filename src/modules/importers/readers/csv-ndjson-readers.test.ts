import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { AppError } from '../../../infra/errors.ts';
import type { PlaceInput } from '../../places/place-input.ts';
import { detectFormat } from '../import.service.ts';
import type { OpenOptions, ReadResult, SourceReader } from '../importer.types.ts';
import { derivedId, parseColumnMapping } from './generic.ts';
import { readerFactories } from './index.ts';
import { detectEncoding } from './text-source.ts';

const data = resolve(import.meta.dirname, '../../../../../shared/data');

/** Each real file with the format it must be detected as and the records the data README counts. */
const realFiles = [
  { file: 'ratings/gmaps-scraper-europe-115.csv.gz', format: 'gmaps-csv', source: 'gmaps', records: 115 },
  { file: 'ratings/gmaps-scraper-plano-tx-73.csv.gz', format: 'gmaps-csv', source: 'gmaps', records: 73 },
  { file: 'ratings/yelp-fusion-4cities-2018.ndjson.gz', format: 'yelp-fusion-ndjson', source: 'yelp', records: 4100 },
  { file: 'ratings/yelp-open-dataset-business-sample5000.ndjson.gz', format: 'yelp-open-ndjson', source: 'yelp', records: 5000 },
  { file: 'ratings/zomato-restaurants-9551.csv.gz', format: 'zomato-csv', source: 'zomato', records: 9551 },
  { file: 'places/overture-places-boulder-3545.ndjson.gz', format: 'overture-ndjson', source: 'overture', records: 3545 },
  { file: 'places/michelin-guide-2022-6510.csv.gz', format: 'michelin-csv', source: 'michelin', records: 6510 },
];

const factory = (format: string) => {
  const f = readerFactories.find((x) => x.format === format);
  assert.ok(f, `format ${format} is registered`);
  return f;
};

interface ReadAll {
  reader: SourceReader & { encoding?: string };
  results: ReadResult[];
  /** bytesRead() when the first record came out. */
  bytesAtFirst: number;
}

async function readAll(path: string, format: string, options: OpenOptions = {}): Promise<ReadAll> {
  const reader = await factory(format).open(path, options);
  const results: ReadResult[] = [];
  let bytesAtFirst = -1;
  for await (const r of reader.records()) {
    if (bytesAtFirst < 0) bytesAtFirst = reader.bytesRead();
    results.push(r);
  }
  return { reader, results, bytesAtFirst };
}

const places = (results: ReadResult[]): PlaceInput[] => results.flatMap((r) => (r.ok ? [r.place] : []));
const byId = (results: ReadResult[], id: string): PlaceInput => {
  const p = places(results).find((x) => x.sourceId === id);
  assert.ok(p, `record ${id} was read`);
  return p;
};

/** Every real file is read once; the tests below look at the results. */
const read = new Map<string, Promise<ReadAll>>();
const readReal = (file: string) => {
  const entry = realFiles.find((f) => f.file === file)!;
  if (!read.has(file)) read.set(file, readAll(join(data, file), entry.format));
  return read.get(file)!;
};

let tmp: string;
before(() => {
  tmp = mkdtempSync(join(tmpdir(), 'readers-'));
});
after(() => rmSync(tmp, { recursive: true, force: true }));

describe('real files', () => {
  for (const { file, format } of realFiles) {
    test(`${file} is detected as ${format}, also renamed to a neutral name`, async () => {
      assert.equal((await detectFormat(join(data, file))).format, format);
      const renamed = join(tmp, `upload-${format}`);
      copyFileSync(join(data, file), renamed);
      assert.equal((await detectFormat(renamed)).format, format);
    });
  }

  for (const { file, source, records } of realFiles) {
    test(`${file} reads all ${records} records, none skipped, and bytesRead advances to the file size`, async () => {
      const { reader, results, bytesAtFirst } = await readReal(file);
      assert.equal(reader.source, source);
      assert.deepEqual(
        results.filter((r) => !r.ok),
        [],
      );
      assert.equal(results.length, records);
      assert.equal(new Set(places(results).map((p) => p.sourceId)).size, records);
      assert.ok(bytesAtFirst > 0 && bytesAtFirst < reader.totalBytes, `bytesRead ${bytesAtFirst} at the first record`);
      assert.equal(reader.bytesRead(), reader.totalBytes);
    });
  }

  test('the Google Maps scraper row for Tuccio in Bari maps name, phone, rating, reviews, address parts and hours', async () => {
    const { results } = await readReal('ratings/gmaps-scraper-europe-115.csv.gz');
    const p = byId(results, '9089864112570766741');
    assert.equal(p.name, 'Tuccio - Cucina Caffè');
    assert.deepEqual(p.sourceCategories, ['Italian restaurant']);
    assert.equal(p.phone, '+39 342 798 8613');
    assert.equal(p.rating, 4.5);
    assert.equal(p.reviewCount, 918);
    assert.equal(p.website, 'https://www.tuccio.biz/');
    assert.equal(p.street, 'Piazza Giuseppe Massari, 15');
    assert.equal(p.postcode, '70122');
    assert.equal(p.city, 'Bari');
    assert.equal(p.countryCode, 'IT');
    assert.equal(p.lat, 41.126789);
    assert.equal(p.lon, 16.866602);
    // Google writes a narrow no-break space before AM/PM; the reader keeps it (enrich folds spaces on storage).
    assert.equal(p.openingHours, 'Mo Closed; Tu-Fr 10:30\u202fAM–11\u202fPM; Sa 10:30\u202fAM–1\u202fAM; Su 10:30\u202fAM–11\u202fPM');
    assert.deepEqual(p.attributes, { price_range: '€20–30', google_place_id: 'ChIJ8ZJxsbLpRxMRlRVaDkCvJX4' });
  });

  test('the Yelp Fusion record for Limoncello in San Francisco maps rating, reviews, phone, category titles and price', async () => {
    const { results } = await readReal('ratings/yelp-fusion-4cities-2018.ndjson.gz');
    const p = byId(results, '2hGIxgprREdBieylltWaRQ');
    assert.equal(p.name, 'Limoncello');
    assert.deepEqual(p.sourceCategories, ['Sandwiches', 'Delis', 'Beer, Wine & Spirits']);
    assert.equal(p.phone, '+14156386361');
    assert.equal(p.rating, 5);
    // The README quotes 403 from one daily dump; this file keeps the last one seen.
    assert.equal(p.reviewCount, 511);
    assert.equal(p.street, '1400 Sutter St');
    assert.equal(p.address, '1400 Sutter St, San Francisco, CA 94109');
    assert.equal(p.city, 'San Francisco');
    assert.equal(p.region, 'CA');
    assert.equal(p.postcode, '94109');
    assert.equal(p.countryCode, 'US');
    assert.deepEqual(p.attributes, { price: '$$' });
  });

  test('the Yelp Open Dataset record for The UPS Store maps stars, reviews, categories and hours padded to HH:MM', async () => {
    const { results } = await readReal('ratings/yelp-open-dataset-business-sample5000.ndjson.gz');
    const p = byId(results, 'mpf3x-BjTdTEA3yCZrAYPw');
    assert.equal(p.name, 'The UPS Store');
    assert.equal(p.rating, 3);
    assert.equal(p.reviewCount, 15);
    assert.equal(p.city, 'Affton');
    assert.equal(p.region, 'MO');
    assert.equal(p.postcode, '63123');
    assert.deepEqual(p.sourceCategories, ['Shipping Centers', 'Local Services', 'Notaries', 'Mailbox Centers', 'Printing Services']);
    assert.equal(p.openingHours, 'Mo 00:00-00:00; Tu-Fr 08:00-18:30; Sa 08:00-14:00');
  });

  test('the Zomato row for Le Petit Souffle maps rating 4.8, 314 votes, cuisines and country 162 as PH', async () => {
    const { results } = await readReal('ratings/zomato-restaurants-9551.csv.gz');
    const p = byId(results, '6317637');
    assert.equal(p.name, 'Le Petit Souffle');
    assert.equal(p.rating, 4.8);
    assert.equal(p.reviewCount, 314);
    assert.deepEqual(p.sourceCategories, ['French', 'Japanese', 'Desserts']);
    assert.equal(p.countryCode, 'PH');
    assert.equal(p.city, 'Makati City');
    assert.equal(p.lat, 14.565443);
    assert.equal(p.lon, 121.027535);
    assert.equal(p.attributes?.price_level, 3);
  });

  test('a Zomato aggregate rating of 0 ("Not rated") becomes no rating while the votes stay', async () => {
    const { results } = await readReal('ratings/zomato-restaurants-9551.csv.gz');
    const p = byId(results, '6600060');
    assert.equal(p.rating, null);
    assert.equal(p.reviewCount, 2);
  });

  test('Zomato is detected as a single-byte encoding and every byte comes out as written, never as U+FFFD', async () => {
    const { reader, results } = await readReal('ratings/zomato-restaurants-9551.csv.gz');
    assert.equal(reader.encoding, 'windows-1252');
    // The upstream file already carries these accents double-encoded ("Café" became bytes ED A9); they are
    // decoded byte for byte, as latin-1 gives them.
    assert.equal(byId(results, '6601005').name, 'Cafí© Daniel Briand');
    assert.equal(byId(results, '6601005').city, 'Brasí_lia');
    assert.equal(byId(results, '7300483').name, 'Zazíç BistríÇ Tropical');
    // 0x81 is undefined in windows-1252; the WHATWG table keeps it as U+0081, as latin-1 does.
    assert.equal(byId(results, '6000549').name, 'Me\u0081ôhur TavacÛ± Recep Usta');
    const mangled = places(results).filter((p) => JSON.stringify(p).includes('\uFFFD'));
    assert.deepEqual(
      mangled.map((p) => p.sourceId),
      [],
    );
  });

  test('the Michelin row for Enoteca Pinchiorri maps the award, the country from the address and a + on the digits-only phone', async () => {
    const { results } = await readReal('places/michelin-guide-2022-6510.csv.gz');
    const p = byId(results, 'https://guide.michelin.com/en/toscana/firenze/restaurant/enoteca-pinchiorri');
    assert.equal(p.name, 'Enoteca Pinchiorri');
    assert.equal(p.phone, '+3905526311');
    assert.equal(p.city, 'Florence');
    assert.equal(p.countryName, 'Italy');
    assert.equal(p.website, 'https://www.enotecapinchiorri.it/');
    assert.deepEqual(p.sourceCategories, ['Modern Cuisine']);
    assert.equal(p.attributes?.award, '3 MICHELIN Stars');
    assert.equal(p.attributes?.min_price, 200);
    assert.equal(p.attributes?.max_price, 340);
  });

  test('a Michelin phone a spreadsheet rounded to scientific notation (4.95362E+11) is dropped, not kept as a number', async () => {
    const { results } = await readReal('places/michelin-guide-2022-6510.csv.gz');
    const aqua = byId(results, 'https://guide.michelin.com/en/niedersachsen/wolfsburg/restaurant/aqua79029');
    assert.equal(aqua.name, 'Aqua');
    assert.equal(aqua.phone, null);
    assert.equal(places(results).filter((p) => /E\+/.test(p.phone ?? '')).length, 0);
  });

  test('the Overture record for Hideaway Pizza maps the point, the first phone and website and the address', async () => {
    const { results } = await readReal('places/overture-places-boulder-3545.ndjson.gz');
    const p = byId(results, '5d181e52-949d-4557-ba62-93ba3bd8fba1');
    assert.equal(p.name, 'Hideaway Pizza');
    // The current taxonomy, as its path from the top, rather than the older `categories.primary`.
    assert.deepEqual(p.sourceCategories, [
      'food_and_drink > restaurant > european_restaurant > mediterranean_restaurant > italian_restaurant > pizza_restaurant',
    ]);
    assert.equal(p.phone, '(303) 444-4642');
    assert.equal(p.website, 'http://www.hideawaypizza.com');
    assert.equal(p.street, '500 Cascade Ave');
    assert.equal(p.city, 'Boulder');
    assert.equal(p.postcode, '80302');
    assert.equal(p.countryCode, 'US');
    assert.equal(p.lat, 40.00144643460996);
    assert.equal(p.lon, -105.28756445330866);
  });
});

describe('encodings', () => {
  test('detection picks UTF-8 for a UTF-8 file even though chardet calls its ASCII head ISO-8859-1', async () => {
    const { reader } = await readReal('places/overture-places-boulder-3545.ndjson.gz');
    assert.equal(reader.encoding, 'utf-8');
    assert.equal(detectEncoding(Buffer.from('name,city\nCafé,Zürich\n', 'utf8')), 'utf-8');
    assert.equal(detectEncoding(Buffer.from('name,city\nCafé,Zürich\n', 'latin1')), 'windows-1252');
  });

  test('an explicit wrong --encoding latin1 on a UTF-8 file is respected', async () => {
    const path = join(data, 'ratings/gmaps-scraper-europe-115.csv.gz');
    const { reader, results } = await readAll(path, 'gmaps-csv', { encoding: 'latin1' });
    assert.equal(reader.encoding, 'latin1');
    assert.equal(byId(results, '9089864112570766741').name, 'Tuccio - Cucina CaffÃ¨');
  });

  test('an unknown --encoding is refused, naming the option', async () => {
    await assert.rejects(
      factory('zomato-csv').open(join(data, 'ratings/zomato-restaurants-9551.csv.gz'), { encoding: 'klingon-8' }),
      (e: unknown) => e instanceof AppError && e.code === 'validation_failed' && e.extras.errors?.[0]?.field === 'encoding',
    );
  });

  test('a plain latin-1 CSV (not gzip) keeps its accents: é, ü and ç', async () => {
    const path = join(tmp, 'latin1.csv');
    writeFileSync(path, Buffer.from('id,name,city\n1,Café Müller,Besançon\n2,Bäckerei Süß,Zürich\n', 'latin1'));
    const { reader, results } = await readAll(path, 'csv');
    assert.equal(reader.encoding, 'windows-1252');
    assert.deepEqual(
      places(results).map((p) => [p.name, p.city]),
      [
        ['Café Müller', 'Besançon'],
        ['Bäckerei Süß', 'Zürich'],
      ],
    );
  });
});

describe('generic CSV and NDJSON', () => {
  test('a semicolon CSV with a BOM, header synonyms and a quoted newline is mapped; bad rows are skipped with a reason', async () => {
    const path = join(tmp, 'shops.csv');
    writeFileSync(
      path,
      '\uFEFFTitle;Telephone;Latitude;Longitude;Zip;Town;Country;Categories\n' +
        'Bäckerei Huber;+49 89 123456;48.137;11.575;80331;München;DE;Bakery, Café\n' +
        '"Laden\nam Eck";089 999;48.1;11.5;80333;München;Germany;Shop\n' +
        ';0301234;52.5;13.4;10115;Berlin;DE;Bar\n' +
        'Too;many;cells;1;2;3;4;5;6\n' +
        '"Never closed;1;2;3;4;5;6;7\n',
    );
    const { reader, results } = await readAll(path, 'csv');
    assert.equal(reader.source, 'csv');
    assert.deepEqual(
      results.filter((r) => !r.ok),
      [
        { ok: false, reason: 'no name' },
        { ok: false, reason: 'bad row: column count' },
        { ok: false, reason: 'bad row' },
      ],
    );
    const [huber, laden] = places(results);
    assert.equal(huber?.name, 'Bäckerei Huber');
    assert.equal(huber?.phone, '+49 89 123456');
    assert.equal(huber?.lat, 48.137);
    assert.equal(huber?.postcode, '80331');
    assert.equal(huber?.countryCode, 'DE');
    assert.deepEqual(huber?.sourceCategories, ['Bakery', 'Café']);
    assert.equal(laden?.name, 'Laden\nam Eck');
    assert.equal(laden?.countryName, 'Germany');
  });

  test('rows without an id column get a derived id that is the same on every read', async () => {
    const path = join(tmp, 'noid.csv');
    writeFileSync(path, 'name,address,city,lat,lon\nKiosk,Hauptstr. 1,Wien,48.2,16.37\n');
    const first = places((await readAll(path, 'csv')).results)[0];
    const second = places((await readAll(path, 'csv')).results)[0];
    assert.match(first?.sourceId ?? '', /^h-[0-9a-f]{20}$/);
    assert.equal(first?.sourceId, second?.sourceId);
    assert.equal(first?.sourceId, derivedId({ name: 'kiosk', address: 'Hauptstr.  1', city: 'WIEN', lat: 48.2, lon: 16.37 }));
  });

  test('a second row with the same id is skipped so the first one wins', async () => {
    const path = join(tmp, 'dups.csv');
    writeFileSync(path, 'id,name\n7,First\n7,Second\n');
    const { results } = await readAll(path, 'csv');
    assert.deepEqual(
      places(results).map((p) => p.name),
      ['First'],
    );
    assert.deepEqual(
      results.filter((r) => !r.ok),
      [{ ok: false, reason: 'duplicate id' }],
    );
  });

  test('an explicit column mapping names the columns the synonyms do not know', async () => {
    const path = join(tmp, 'firmen.csv');
    writeFileSync(path, 'Nr,Firma,Rufnummer,Ort\n17,Schreinerei Maier,0821 55 66,Augsburg\n');
    const { results } = await readAll(path, 'csv', { columns: parseColumnMapping('id=Nr,name=Firma,phone=Rufnummer,city=Ort') });
    assert.deepEqual(places(results)[0], {
      sourceId: '17',
      name: 'Schreinerei Maier',
      sourceCategories: [],
      phone: '0821 55 66',
      website: null,
      email: null,
      street: null,
      housenumber: null,
      postcode: null,
      address: null,
      city: 'Augsburg',
      region: null,
      countryCode: null,
      countryName: null,
      lat: null,
      lon: null,
      rating: null,
      reviewCount: null,
      openingHours: null,
    });
  });

  test('a mapping to a missing column, an unknown field or a file without a name column is refused with the allowed values', async () => {
    const path = join(tmp, 'firmen2.csv');
    writeFileSync(path, 'Nr,Firma\n17,Maier\n');
    const refusal = (field: string, allowed: unknown) => (e: unknown) =>
      e instanceof AppError &&
      e.code === 'validation_failed' &&
      e.extras.errors?.[0]?.field === field &&
      assert.deepEqual(e.extras.errors[0].allowed, allowed) === undefined;
    await assert.rejects(factory('csv').open(path, { columns: { name: 'Company' } }), refusal('columns.name', ['Nr', 'Firma']));
    await assert.rejects(factory('csv').open(path, {}), refusal('columns.name', ['Nr', 'Firma']));
    assert.throws(
      () => parseColumnMapping('nom=Firma'),
      (e: unknown) => e instanceof AppError && e.extras.errors?.[0]?.field === 'columns.nom',
    );
    await assert.rejects(
      factory('gmaps-csv').open(join(data, 'ratings/gmaps-scraper-plano-tx-73.csv.gz'), { columns: { name: 'title' } }),
      refusal('columns', ['csv', 'ndjson']),
    );
  });

  test('generic NDJSON maps synonyms, GeoJSON features and dotted paths, and skips a line that is not JSON', async () => {
    const path = join(tmp, 'mixed.jsonl.gz');
    const lines = [
      {
        id: 'a1',
        title: 'Ramen Ya',
        phone_number: '+33 1 23 45 67 89',
        location: { city: 'Paris' },
        latitude: 48.86,
        longitude: 2.35,
        stars: 4.5,
      },
      '{not json',
      {
        type: 'Feature',
        id: 'a2',
        geometry: { type: 'Point', coordinates: [2.3, 48.8] },
        properties: { title: 'Bistro', location: { city: 'Paris' } },
      },
    ];
    writeFileSync(path, gzipSync(lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n'));
    assert.equal((await detectFormat(path)).format, 'ndjson');
    const { results } = await readAll(path, 'ndjson', { columns: { city: 'location.city' } });
    assert.deepEqual(
      results.filter((r) => !r.ok),
      [{ ok: false, reason: 'bad json' }],
    );
    const [ramen, bistro] = places(results);
    assert.equal(ramen?.name, 'Ramen Ya');
    assert.equal(ramen?.phone, '+33 1 23 45 67 89');
    assert.equal(ramen?.city, 'Paris');
    assert.equal(ramen?.rating, 4.5);
    assert.deepEqual([bistro?.sourceId, bistro?.city, bistro?.lat, bistro?.lon], ['a2', 'Paris', 48.8, 2.3]);
  });

  test('a Zomato file takes country names for codes it does not know from a codes file beside it', async () => {
    const dir = mkdtempSync(join(tmp, 'zomato-'));
    const header =
      'Restaurant ID,Restaurant Name,Country Code,City,Address,Locality,Locality Verbose,Longitude,Latitude,Cuisines,' +
      'Average Cost for two,Currency,Has Table booking,Has Online delivery,Is delivering now,Switch to order menu,Price range,Aggregate rating,Rating color,Rating text,Votes';
    writeFileSync(
      join(dir, 'restaurants.csv'),
      Buffer.from(`${header}\n1,Crêperie,999,Nowhere,x,x,x,1,1,French,10,X,No,No,No,No,1,4.1,Green,Very Good,5\n`, 'latin1'),
    );
    writeFileSync(join(dir, 'Country-Code.csv'), 'Country Code,Country\r999,Atlantis\r');
    assert.equal((await detectFormat(join(dir, 'restaurants.csv'))).format, 'zomato-csv');
    const [p] = places((await readAll(join(dir, 'restaurants.csv'), 'zomato-csv')).results);
    assert.deepEqual([p?.name, p?.countryCode, p?.countryName], ['Crêperie', null, 'Atlantis']);
  });
});
