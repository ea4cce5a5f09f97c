import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { canonicalSocial } from '../../contacts/socials.ts';
import { normaliseEmail } from './emails.ts';
import { extractContacts } from './extract.ts';

/**
 * Generated pages made of the pieces extraction looks at (links of every kind, obfuscated and plain
 * addresses, numbers, JSON-LD, Cloudflare attributes, broken markup and entities) in random order and
 * nesting. Whatever the page, extraction answers, and what it answers is already in normal form:
 * every address passes the junk rules unchanged, every phone is E.164, every profile URL is canonical.
 */
const word = fc.stringMatching(/^[a-z0-9._-]{1,12}$/);
const domain = fc.tuple(fc.stringMatching(/^[a-z0-9-]{1,12}$/), fc.constantFrom('de', 'com', 'co.uk', 'png', 'example', 'io', 'xn--p1ai'));
const address = fc.tuple(word, domain).map(([local, [name, tld]]) => `${local}@${name}.${tld}`);
const piece = fc.oneof(
  address,
  fc.tuple(word, domain).map(([local, [name, tld]]) => `${local} [at] ${name} [dot] ${tld.replace('.', ' [dot] ')}`),
  fc.tuple(word, domain).map(([local, [name, tld]]) => `${local} at ${name} dot ${tld}`),
  address.map((a) => `<a href="mailto:${a}?subject=x">${a}</a>`),
  fc.stringMatching(/^\+?[0-9 ()./-]{4,24}$/).map((n) => `<p>Tel: ${n}</p>`),
  fc.stringMatching(/^[0-9 ()./-]{4,24}$/).map((n) => `<a href="tel:${n}">${n}</a>`),
  fc
    .tuple(
      fc.constantFrom('Tel.', 'Fax', 'IBAN', '', '+49', 'T:'),
      fc.constantFrom('089', '030', '0171', '(212)', '020'),
      fc.stringMatching(/^[0-9]{3,4}[ -]?[0-9]{3,4}$/),
    )
    .map(([label, area, rest]) => `<p>${label} ${area} ${rest}</p>`),
  fc
    .tuple(fc.constantFrom('facebook.com', 'instagram.com', 'x.com', 'youtube.com/@', 'tiktok.com/@', 'linkedin.com/in'), word)
    .map(([host, handle]) => `<a href="https://www.${host}/${handle}">p</a>`),
  fc
    .tuple(
      fc.constantFrom(
        'facebook.com',
        'twitter.com',
        'x.com',
        'instagram.com',
        'linkedin.com/company',
        'youtube.com',
        'tiktok.com',
        'm.facebook.com',
        'developers.facebook.com',
      ),
      fc.webPath(),
      fc.webQueryParameters(),
    )
    .map(([host, path, query]) => `<a href="https://${host}${path}?${query}">s</a>`),
  fc
    .stringMatching(/^[0-9a-f]{0,40}$/)
    .map((hex) => `<span data-cfemail="${hex}">[email protected]</span><a href="/cdn-cgi/l/email-protection#${hex}">x</a>`),
  fc
    .jsonValue({ maxDepth: 4 })
    .map((v) => `<script type="application/ld+json">${JSON.stringify({ email: v, telephone: v, sameAs: v, '@graph': [v] })}</script>`),
  fc.constantFrom(
    '<div>',
    '</div>',
    '<br>',
    '<p',
    '">',
    '&#64;',
    '&amp;',
    '<script>',
    '</script>',
    '<!--',
    '-->',
    '<style>',
    '<td>',
    '<span itemprop="email">',
    '</span>',
    '<base href="::">',
  ),
  fc.string({ maxLength: 20 }),
);
const htmlPage = fc.array(piece, { maxLength: 40 }).map((pieces) => pieces.join(' '));

describe('extraction on generated pages', () => {
  test('always answers, with addresses in normal form, phones in E.164 and canonical profile URLs', () => {
    fc.assert(
      fc.property(htmlPage, fc.constantFrom('DE', 'US', 'GB', null, 'ZZ'), (html, countryCode) => {
        const found = extractContacts([{ url: 'https://www.shop.de/', html }], { countryCode, siteDomain: 'shop.de' });
        for (const email of found.emails) assert.equal(normaliseEmail(email.address), email.address);
        for (const phone of found.phones) assert.match(phone.e164, /^\+[1-9]\d{6,14}$/);
        for (const social of found.socials) assert.equal(canonicalSocial(social.url)?.url, social.url);
        const lowered = found.emails.map((e) => e.address.toLowerCase());
        assert.equal(new Set(lowered).size, lowered.length);
      }),
      { numRuns: 400 },
    );
  });

  test('reads a deeply nested page up to its nesting limit without exhausting the call stack', () => {
    // Nested 4,000 deep: read whole, through the walk's own stack.
    const deep = `<p>info@shop.de</p>${'<div><span>'.repeat(2_000)}laden@shop.de${'</span></div>'.repeat(2_000)}<p>Tel. 089 2199890</p>`;
    const found = extractContacts([{ url: 'https://www.shop.de/', html: deep }], { countryCode: 'DE', siteDomain: 'shop.de' });
    assert.deepEqual(
      found.emails.map((e) => e.address),
      ['info@shop.de', 'laden@shop.de'],
    );
    assert.deepEqual(
      found.phones.map((p) => p.e164),
      ['+49892199890'],
    );
    // 200,000 unclosed elements, which would cost the parser minutes: read up to the limit, the rest left.
    const hostile = `<p>info@shop.de</p>${'<b>'.repeat(200_000)}laden@shop.de`;
    const cut = extractContacts([{ url: 'https://www.shop.de/', html: hostile }], { countryCode: 'DE', siteDomain: 'shop.de' });
    assert.deepEqual(
      cut.emails.map((e) => e.address),
      ['info@shop.de'],
    );
  });

  test('canonicalises any string or URL without throwing, to a fixed point', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.webUrl({ withQueryParameters: true, withFragments: true })), (value) => {
        const profile = canonicalSocial(value);
        if (profile) assert.deepEqual(canonicalSocial(profile.url), profile);
      }),
      { numRuns: 2_000 },
    );
  });
});
