import assert from 'node:assert/strict';
import { buffer } from 'node:stream/consumers';
import { describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { type PlaceField, placeFields } from '../../places/places.schema.ts';
import { guardFormula, isPlainPhoneNumber, tabularHeader } from './cells.ts';
import { csvLine, placesToCsv } from './csv.ts';
import { inBatches, placeRow } from './formats.fixtures.ts';

const csvText = async (stream: NodeJS.ReadableStream) => (await buffer(stream)).toString('utf8');

describe('CSV export', () => {
  test('starts with a UTF-8 byte-order mark and a header row of the chosen fields, lines end in CRLF', async () => {
    const fields: PlaceField[] = ['name', 'city', 'phone'];
    const bytes = await buffer(placesToCsv(inBatches([placeRow(1), placeRow(2)], 1), fields));
    assert.deepEqual([...bytes.subarray(0, 3)], [0xef, 0xbb, 0xbf]);
    const out = bytes.toString('utf8');
    assert.ok(out.startsWith('\uFEFFname,city,phone\r\n'));
    assert.equal(out.split('\r\n').length, 4, 'header, two rows and the empty string after the last CRLF');
    assert.doesNotMatch(out.replaceAll('\r\n', ''), /[\r\n]/);
  });

  test('reads back with csv-parse as the same values, quotes, commas, line breaks and non-Latin text included', async () => {
    const tricky = [
      placeRow(1, { name: 'Café "Zur Post", am Markt', address: 'Line one\nLine two', city: '東京' }),
      placeRow(2, { name: 'Ölmühle; Bäckerei', rating: 4.5, review_count: 12, lat: -33.9, lon: -0.12 }),
    ];
    const out = await csvText(placesToCsv(inBatches(tricky, 1), placeFields));
    const [header, ...rows] = parse(out, { bom: true, relax_quotes: false }) as string[][];
    assert.deepEqual(header, tabularHeader(placeFields));
    assert.equal(rows.length, 2);
    const col = (row: string[] | undefined, f: PlaceField) => row?.[header!.indexOf(f)];
    assert.equal(col(rows[0], 'name'), 'Café "Zur Post", am Markt');
    assert.equal(col(rows[0], 'address'), 'Line one\nLine two');
    assert.equal(col(rows[0], 'city'), '東京');
    assert.equal(col(rows[0], 'categories'), 'restaurant;cafe');
    assert.equal(col(rows[1], 'rating'), '4.5');
    assert.equal(col(rows[1], 'lon'), '-0.12', 'a negative number is a number, not a formula');
    assert.equal(col(rows[1], 'phone'), '', 'null is an empty cell');
  });

  test('encodes records exactly as csv-stringify does with CRLF line ends and line breaks quoted', () => {
    const records = [
      ['plain', 'with,comma', 'with "quote"', 'two\nlines', 'cr\ronly', null, 4.25, -7, ''],
      ['Ünïcödé', '東京', ' spaced ', 'tab\there', 'semi;colon', 0, 1e21, 'x', null],
    ];
    const mine = records.map((r) => csvLine(r)).join('');
    assert.equal(mine, stringify(records, { record_delimiter: 'windows', quoted_match: /[\r\n]/, cast: { number: (n) => String(n) } }));
  });

  test('neutralises cells that a spreadsheet would run as a formula', async () => {
    const payloads = [
      '=HYPERLINK("http://evil.example","click")',
      "+1+cmd|' /C calc'!A0",
      "-2+3+cmd|' /C calc'!A0",
      '@SUM(1,2)',
      '\t=1+1',
      '\r=1+1',
      '  =1+1',
      '\n=1+1',
      '＝1+1',
    ];
    const rows = payloads.map((name, i) => placeRow(i + 1, { name }));
    const out = await csvText(placesToCsv(inBatches(rows, 4), ['name']));
    const [, ...parsed] = parse(out, { bom: true }) as string[][];
    assert.deepEqual(
      parsed.map((r) => r[0]),
      payloads.map((p) => `'${p}`),
    );
  });

  test('keeps plain phone numbers intact even though they start with +', async () => {
    // Numbers a source wrote that are no valid number show as written (a valid one shows its international form).
    const phones = ['+33 1 42 68 53 00', '+4989219989', '+49 (0) 89 21 99 89 0', '+1 415-638-6361', '+39 055.26.311', '+44 20/7946 0958'];
    const rows = phones.map((phone, i) => placeRow(i + 1, { phone, phone_e164: null }));
    const out = await csvText(placesToCsv(inBatches(rows, 10), ['phone']));
    const [, ...parsed] = parse(out, { bom: true }) as string[][];
    assert.deepEqual(
      parsed.map((r) => r[0]),
      phones,
    );
  });

  test('writes a valid number in its international form, E.164 beside it, neither taken for a formula', async () => {
    const phones = ['+33 1 42 68 53 00', '+4989219989', '+49 (0) 89 21 99 89 0', '+1 415-638-6361', '+39 055.26.311', '+44 20/7946 0958'];
    const rows = phones.map((phone, i) => placeRow(i + 1, { phone, phone_e164: phone.replace(/[^\d+]/g, '') }));
    const out = await csvText(placesToCsv(inBatches(rows, 10), ['phone', 'phone_e164']));
    const [, ...parsed] = parse(out, { bom: true }) as string[][];
    assert.deepEqual(
      parsed.map((r) => r[0]),
      ['+33 1 42 68 53 00', '+49 89 219989', '+49 89 2199890', '+1 415 638 6361', '+39 055 26311', '+44 20 7946 0958'],
    );
    assert.deepEqual(
      parsed.map((r) => r[1]),
      phones.map((p) => p.replace(/[^\d+]/g, '')),
    );
  });

  test('does not take formulas, too short or too long digit runs for phone numbers', () => {
    for (const value of ['+1+1', '+33 1 42 68 53 00 =A1', '+SUM(1)', '+12345', '+1234567890123456', '+33\t142685300', '+(1) 2', '+cmd|x']) {
      assert.equal(isPlainPhoneNumber(value), false, value);
      assert.equal(guardFormula(value), `'${value}`, value);
    }
    for (const value of ['Ratskeller', '089 21 99 89 0', 'a=b', '3+4']) assert.equal(guardFormula(value), value, value);
  });
});
