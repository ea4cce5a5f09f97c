import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { attachmentDisposition, exportFilename } from './content-disposition.ts';

const date = new Date('2026-11-21T10:00:00Z');

describe('export file names', () => {
  test('names the file after the city, the type and the day', () => {
    const name = exportFilename({ city: 'Porto', type: 'restaurant', date, extension: 'csv' });
    assert.equal(name, 'leadatlas-porto-restaurant-2026-11-21.csv');
    assert.equal(attachmentDisposition(name), 'attachment; filename="leadatlas-porto-restaurant-2026-11-21.csv"');
  });

  test('adds an RFC 5987 filename* for a non-ASCII city and keeps an accent-folded ASCII filename', () => {
    const name = exportFilename({ city: 'München', type: 'cafe', date, extension: 'xlsx' });
    assert.equal(
      attachmentDisposition(name),
      `attachment; filename="leadatlas-munchen-cafe-2026-11-21.xlsx"; filename*=UTF-8''leadatlas-m%C3%BCnchen-cafe-2026-11-21.xlsx`,
    );
  });

  test('drops a part that has no ASCII form from the fallback and leaves out missing parts', () => {
    const name = exportFilename({ city: '東京', type: null, date, extension: 'json' });
    assert.equal(name, 'leadatlas-東京-2026-11-21.json');
    assert.match(
      attachmentDisposition(name),
      /^attachment; filename="leadatlas-2026-11-21\.json"; filename\*=UTF-8''leadatlas-%E6%9D%B1%E4%BA%AC-2026-11-21\.json$/,
    );
  });

  test('turns separators, quotes and slashes in names into dashes so the header cannot be broken', () => {
    const name = exportFilename({ city: 'St. John\'s "Old" Town/West', type: 'fast_food', date, extension: 'csv' });
    assert.equal(name, 'leadatlas-st-john-s-old-town-west-fast-food-2026-11-21.csv');
  });
});
