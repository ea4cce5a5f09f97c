import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { buffer } from 'node:stream/consumers';
import { describe, test } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import XLSX from 'xlsx';
import { type PlaceField, type PublicPlaceTuple, placeFields, placeRowToPlace, placeRowToTuple } from '../../places/places.schema.ts';
import { placeCellBatches, tabularHeader } from './cells.ts';
import { placesToCsv } from './csv.ts';
import { inBatches, placeRow } from './formats.fixtures.ts';
import { exportFormatNames, exportFormats } from './index.ts';
import { placesToXlsx } from './xlsx.ts';

/** The trust columns of a place the trust pass has not seen. */
const trustNone = [null, null, null, null, null, null, null];

const utf8 = async (stream: NodeJS.ReadableStream) => (await buffer(stream)).toString('utf8');

function readWorkbook(bytes: Buffer): XLSX.WorkBook {
  return XLSX.read(bytes, { type: 'buffer', cellFormula: true });
}

function sheetRows(wb: XLSX.WorkBook, name: string): unknown[][] {
  const sheet = wb.Sheets[name];
  assert.ok(sheet, `sheet ${name} exists`);
  return XLSX.utils.sheet_to_json<unknown[]>(sheet, { header: 1, defval: null, raw: true });
}

describe('xlsx export', () => {
  test('reads back with an xlsx reader: header row, text as text, numbers as numbers, empty cells for null', async () => {
    const rows = [
      placeRow(1, { name: 'Ratskeller & <Bar>', rating: 4.5, review_count: 120, phone: '+49 (0) 89 21 99 89 0' }),
      placeRow(2, { name: '=1+1', city: '東京', lat: 35.68, lon: 139.76 }),
    ];
    const fields: PlaceField[] = ['name', 'phone', 'rating', 'review_count', 'city', 'lat', 'lon', 'categories'];
    const wb = readWorkbook(await buffer(placesToXlsx(inBatches(rows, 1), fields)));
    assert.deepEqual(wb.SheetNames, ['places']);
    assert.deepEqual(sheetRows(wb, 'places'), [
      fields,
      ['Ratskeller & <Bar>', '+49 (0) 89 21 99 89 0', 4.5, 120, 'München', 48.137, 11.575, 'restaurant;cafe'],
      ['=1+1', null, null, null, '東京', 35.68, 139.76, 'restaurant;cafe'],
    ]);
    const formulaLooking = wb.Sheets.places?.A3;
    assert.equal(formulaLooking?.t, 's', 'a text cell, not a formula');
    assert.equal(formulaLooking?.f, undefined);
  });

  test('drops control characters XML cannot carry instead of producing a file Excel must repair', async () => {
    const wb = readWorkbook(await buffer(placesToXlsx(inBatches([placeRow(1, { name: 'Bell\u0007 and\u0000 tab\tstay' })], 1), ['name'])));
    assert.deepEqual(sheetRows(wb, 'places')[1], ['Bell and tab\tstay']);
  });

  test('continues on a further sheet, with its own header, when a sheet is full', async () => {
    const rows = Array.from({ length: 7 }, (_, i) => placeRow(i + 1));
    const wb = readWorkbook(await buffer(placesToXlsx(inBatches(rows, 2), ['id', 'name'], { rowsPerSheet: 3 })));
    assert.deepEqual(wb.SheetNames, ['places', 'places 2', 'places 3']);
    const names = wb.SheetNames.flatMap((s) =>
      sheetRows(wb, s)
        .slice(1)
        .map((r) => r[1]),
    );
    assert.deepEqual(
      names,
      rows.map((r) => r.name),
    );
    assert.deepEqual(sheetRows(wb, 'places 3'), [
      ['id', 'name'],
      [rows[6]!.public_id, 'Place 7'],
    ]);
  });

  test('a full last sheet does not leave an empty sheet behind', async () => {
    const rows = Array.from({ length: 6 }, (_, i) => placeRow(i + 1));
    const wb = readWorkbook(await buffer(placesToXlsx(inBatches(rows, 4), ['name'], { rowsPerSheet: 3 })));
    assert.deepEqual(wb.SheetNames, ['places', 'places 2']);
  });
});

describe('cells of a row array', () => {
  test('each field reads the value of the public place shape (lists joined), whatever the field order', async () => {
    const row = placeRow(7, {
      phone: '+49 89 1',
      phone_e164: '+49891',
      website: 'https://example.org',
      email: 'a@example.org',
      rating: 4.5,
      review_count: 9,
      address: 'Marienplatz 8, München',
      street: 'Marienplatz',
      housenumber: '8',
      postcode: '80331',
      region: 'Bayern',
      opening_hours: 'Mo-Fr 10:00-18:00',
    });
    const place = placeRowToPlace(row);
    const fields = [...placeFields].reverse();
    const batches: unknown[][][] = [];
    for await (const b of placeCellBatches(inBatches([row], 1), fields)) batches.push(b);
    const cells = batches[0]?.[0];
    const listed = (v: ReadonlyArray<string | { source: string; source_id: string }>) =>
      v.map((x) => (typeof x === 'string' ? x : `${x.source}:${x.source_id}`)).join(';');
    const contactCells = [
      place.contacts.emails.map((e) => e.address).join(';'),
      place.contacts.phones.map((p) => p.e164).join(';'),
      null,
      null,
      ...trustNone,
    ];
    assert.deepEqual(
      cells,
      fields.flatMap((f) => {
        if (f === 'contacts') return contactCells;
        const v = place[f];
        return [Array.isArray(v) ? listed(v) : v];
      }),
    );
    assert.equal(cells?.[tabularHeader(fields).indexOf('sources')], 'osm:n7', 'a place of one record: its own source and id');
  });

  test('the trust columns give the best email, phone and website by confidence and the latest check', async () => {
    const seen = { sources: ['osm'], first_seen_at: null, last_seen_at: null };
    const trust = {
      model: 'test',
      emails: [
        { ...seen, value: 'a@x.example', status: 'no_mx', confidence: 0.2, checked_at: '2026-10-01T00:00:00.000Z' },
        { ...seen, value: 'b@y.example', status: 'valid_domain', confidence: 0.9, checked_at: '2026-11-01T00:00:00.000Z' },
      ],
      phones: [{ ...seen, value: '+4915112345678', type: 'mobile', valid: true, as_written: null, confidence: 0.7, checked_at: null }],
      websites: [
        {
          ...seen,
          value: 'https://y.example',
          status: 'dead',
          final_domain: null,
          confidence: 0.1,
          checked_at: '2026-11-20T00:00:00.000Z',
        },
      ],
    };
    const row = placeRow(10, { contact_trust: JSON.stringify(trust) });
    const batches: unknown[][][] = [];
    for await (const b of placeCellBatches(inBatches([row], 1), ['contacts'])) batches.push(b);
    assert.deepEqual(batches[0]?.[0]?.slice(4), ['valid_domain', 0.9, 'mobile', 0.7, 'dead', 0.1, '2026-11-20T00:00:00.000Z']);
  });

  test("contacts are four columns: every email, phone and social profile, and the contact page, with what a website found after the source's", async () => {
    const found = {
      site: 'https://example.org/',
      emails: [
        {
          address: 'info@example.org',
          page: 'https://example.org/kontakt',
          fetched_at: '2026-11-26T10:00:00.000Z',
          own_domain: true,
          verdict: 'deliverable_domain',
        },
      ],
      phones: [{ e164: '+49892', page: 'https://example.org/kontakt', fetched_at: '2026-11-26T10:00:00.000Z' }],
      socials: [
        {
          network: 'instagram',
          url: 'https://www.instagram.com/example',
          page: 'https://example.org/',
          fetched_at: '2026-11-26T10:00:00.000Z',
        },
      ],
      contact_url: 'https://example.org/kontakt',
    };
    const enriched = placeRow(8, {
      website: 'https://example.org',
      phone: '+49 89 1',
      phone_e164: '+49891',
      found_contacts: JSON.stringify(found),
      enrich_basis: 'https://example.org',
    });
    const stale = placeRow(9, {
      website: 'https://other.example',
      found_contacts: JSON.stringify(found),
      enrich_basis: 'https://example.org',
    });
    const batches: unknown[][][] = [];
    for await (const b of placeCellBatches(inBatches([enriched, stale], 2), ['email', 'phone', 'contacts'])) batches.push(b);
    assert.deepEqual(
      batches[0],
      [
        [
          'info@example.org',
          '+49 89 1',
          'info@example.org',
          '+49891;+49892',
          'https://www.instagram.com/example',
          'https://example.org/kontakt',
          ...trustNone,
        ],
        [null, null, null, null, null, null, ...trustNone],
      ],
      'an empty email is filled by the website; a source phone stays; found values of a website the place no longer has count for nothing',
    );
    assert.deepEqual(tabularHeader(['email', 'phone', 'contacts']), [
      'email',
      'phone',
      'emails',
      'phones',
      'socials',
      'contact_url',
      'email_status',
      'email_confidence',
      'phone_type',
      'phone_confidence',
      'website_status',
      'website_confidence',
      'verified_at',
    ]);
  });

  test('the sources of a place of several records are every record’s, joined', async () => {
    const sources = [
      { source: 'osm', source_id: 'n7' },
      { source: 'michelin', source_id: 'https://guide.michelin.com/x' },
    ];
    const row = placeRow(7, { source_id: 'merged:plc_test000000000007', sources: JSON.stringify(sources) });
    const batches: unknown[][][] = [];
    for await (const b of placeCellBatches(inBatches([row], 1), ['id', 'sources'])) batches.push(b);
    assert.deepEqual(batches[0]?.[0], [row.public_id, 'osm:n7;michelin:https://guide.michelin.com/x']);
    const csv = (await buffer(placesToCsv(inBatches([row], 1), ['sources']))).toString('utf8');
    assert.equal(csv, '\uFEFFsources\r\nosm:n7;michelin:https://guide.michelin.com/x\r\n');
    assert.deepEqual(placeRowToPlace(row).sources, sources);
  });
});

describe('JSON, NDJSON and GeoJSON exports', () => {
  const rows = [placeRow(1, { name: 'Ratskeller', rating: 4.5 }), placeRow(2, { name: 'Nowhere', lat: null, lon: null })];
  const fields: PlaceField[] = ['id', 'name', 'rating', 'categories'];
  const expected = rows.map((r) => ({ id: r.public_id, name: r.name, rating: r.rating, categories: ['restaurant', 'cafe'] }));

  test('json is a plain array of places with the chosen fields, and [] when the search is empty', async () => {
    assert.deepEqual(JSON.parse(await utf8(exportFormats.json.write(inBatches(rows, 1), fields))), expected);
    assert.deepEqual(JSON.parse(await utf8(exportFormats.json.write(inBatches([], 1), fields))), []);
  });

  test('ndjson has one place per line', async () => {
    const lines = (await utf8(exportFormats.ndjson.write(inBatches(rows, 1), fields))).split('\n');
    assert.equal(lines.pop(), '', 'the last line ends with a newline');
    assert.deepEqual(
      lines.map((l) => JSON.parse(l)),
      expected,
    );
  });

  test('geojson is a FeatureCollection of Points at [lon, lat], a place without coordinates keeps a null geometry', async () => {
    const fc = JSON.parse(await utf8(exportFormats.geojson.write(inBatches(rows, 1), fields)));
    assert.equal(fc.type, 'FeatureCollection');
    assert.deepEqual(fc.features, [
      { type: 'Feature', id: rows[0]!.public_id, geometry: { type: 'Point', coordinates: [11.575, 48.137] }, properties: expected[0] },
      { type: 'Feature', id: rows[1]!.public_id, geometry: null, properties: expected[1] },
    ]);
  });
});

describe('streaming', () => {
  /** An endless search (incompressible names, so zip buffers fill like real data): counts how many batches the writer has pulled and whether it was closed. */
  function endless(): { batches: AsyncGenerator<PublicPlaceTuple[]>; pulled: () => number; closed: () => boolean } {
    let pulled = 0;
    let closed = false;
    async function* gen(): AsyncGenerator<PublicPlaceTuple[]> {
      try {
        for (let b = 0; ; b++) {
          pulled++;
          yield Array.from({ length: 100 }, (_, i) =>
            placeRowToTuple(placeRow(b * 100 + i + 1, { name: randomBytes(100).toString('hex') })),
          );
        }
      } finally {
        closed = true;
      }
    }
    return { batches: gen(), pulled: () => pulled, closed: () => closed };
  }

  for (const name of exportFormatNames) {
    test(`${name}: reads no further ahead than the reader consumes, and closes the source when the reader goes away`, async () => {
      const source = endless();
      const out = exportFormats[name].write(source.batches, placeFields);
      out.once('readable', () => out.read());
      await once(out, 'readable');
      for (let i = 0; i < 300; i++) await tick();
      // Each batch is ~25 KB of output; stream buffers are 16-64 KB, so a writer with backpressure stops within a few.
      assert.ok(source.pulled() <= 20, `pulled ${source.pulled()} batches of an endless source without being read`);
      out.destroy();
      for (let i = 0; i < 20 && !source.closed(); i++) await tick();
      assert.equal(source.closed(), true, 'the source was closed');
    });
  }
});
