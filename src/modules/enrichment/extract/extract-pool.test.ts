import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { extractContacts, type PageInput } from './extract.ts';
import { ExtractionPool } from './extract-pool.ts';

describe('ExtractionPool', () => {
  const pool = new ExtractionPool(2, 1);
  after(() => pool.close());
  const pages = (i: number): PageInput[] => [
    {
      url: `https://www.baeckerei-${i}.de/`,
      html: `<html><body><a href="mailto:info@baeckerei-${i}.de">Mail</a> Tel. +49 30 1234567${i % 10}
        <a href="https://www.instagram.com/baeckerei_${i}/">Instagram</a> <a href="/kontakt">Kontakt</a></body></html>`,
    },
  ];
  const context = (i: number) => ({ countryCode: 'DE', siteDomain: `baeckerei-${i}.de` });

  test('answers what extractContacts answers on the main thread, for many sites at once (more than its queue holds)', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => pool.extract(pages(i), context(i))));
    answers.forEach((answer, i) => assert.deepEqual(answer, extractContacts(pages(i), context(i))));
    assert.equal(answers[3]!.emails[0]?.address, 'info@baeckerei-3.de');
  });

  test('a site whose extraction throws fails alone, and the pool goes on', async () => {
    await assert.rejects(pool.extract([{ url: 'not a url', html: null as unknown as string }], context(0)));
    assert.equal((await pool.extract(pages(1), context(1))).emails.length, 1);
  });
});
