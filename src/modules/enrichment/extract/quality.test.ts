import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type LabelledPage, loadLabelledSet, precision, recall, scorePages } from '../../../../test/helpers/contacts-labelled-set.ts';
import { normalisePhone } from '../../geo/phone.ts';
import { extractContacts } from './extract.ts';

// The saved business pages of ../shared/data/websites, read by path; truth in test/fixtures/contacts/judged-contacts.json.
const pages = loadLabelledSet();
const findings = (page: LabelledPage) => {
  const found = extractContacts([{ url: page.url, html: page.html }], { countryCode: page.country, siteDomain: page.siteDomain });
  return { emails: found.emails.map((e) => e.address), phones: found.phones.map((p) => p.e164), socials: found.socials.map((s) => s.url) };
};

describe('contact extraction on the labelled set of real pages', () => {
  for (const [part, selected] of [
    ['all pages', pages],
    ['the held-out sites', pages.filter((p) => p.heldOut)],
  ] as const) {
    test(`meets the precision and recall targets on ${part}`, () => {
      assert.ok(selected.length >= 20, `${selected.length} pages`);
      const scores = scorePages(selected, findings, (raw, country) => normalisePhone(raw, country));
      assert.ok(precision(scores.emails) >= 0.97, `email precision ${precision(scores.emails)}`);
      assert.ok(recall(scores.emails) >= 0.9, `email recall ${recall(scores.emails)}`);
      assert.ok(precision(scores.socials) >= 0.97, `social precision ${precision(scores.socials)}`);
      assert.ok(precision(scores.phones) >= 0.95, `phone precision ${precision(scores.phones)}`);
      assert.ok(scores.emails.truth > 10 && scores.phones.truth > 20 && scores.socials.truth > 10, JSON.stringify(scores));
    });
  }

  test('finds every address the contact pages were labelled with', () => {
    const labelled = pages.filter((p) => p.file.startsWith('webstruct_us_contact/'));
    assert.equal(labelled.length, 15);
    const missed = labelled.flatMap((page) => {
      const found = new Set(findings(page).emails.map((e) => e.toLowerCase()));
      return page.emailLabels.filter((label) => !found.has(label.toLowerCase())).map((label) => `${page.file}: ${label}`);
    });
    assert.deepEqual(missed, []);
  });
});
