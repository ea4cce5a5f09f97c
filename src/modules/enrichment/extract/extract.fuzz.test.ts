import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { normaliseEmail } from './emails.ts';
import { canonicalSocial, extractContacts } from './extract.ts';

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
  fc.tuple(fc.constantFrom('Tel.', 'Fax', 'IBAN', '', '+49', 'T:'), fc.constantFrom('089', '030', '0171', '(212)', '020'), fc.stringMatching(/^[0-9]{3,4}[ -]?[0-9]{3,4}$/))
    .map(([label, area, rest]) => `<p>${label} ${area} ${rest}</p>`),
  fc.tuple(fc.constantFrom('facebook.com', 'instagram.com', 'x.com', 'youtube.com/@', 'tiktok.com/@', 'linkedin.com/in'), word).map(([host, handle]) => `<a href="https://www.${host}/${handle}">p</a>`),
  fc.tuple(fc.constantFrom('facebook.com', 'twitter.com', 'x.com', 'instagram.com', 'linkedin.com/company', 'youtube.com', 'tiktok.com', 'm.facebook.com', 'developers.facebook.com'), fc.webPath(), fc.webQueryParameters())
    .map(([host, path, query]) => `<a href="https://${host}${path}?${query}">s</a>`),
  fc.stringMatching(/^[0-9a-f]{0,40}$/).map((hex) => `<span data-cfemail="${hex}">[email protected]</span><a href="/cdn-cgi/l/email-protection#${hex}">x</a>`),
  fc.jsonValue({ maxDepth: 4 }).map((v) => `<script type="application/ld+json">${JSON.stringify({ email: v, telephone: v, sameAs: v, '@graph': [v] })}</script>`),
  fc.constantFrom('<div>', '</div>', '<br>', '<p', '">', '&#64;', '&amp;', '<script>', '</script>', '<!--', '-->', '<style>', '<td>', '<span itemprop="email">', '</span>', '<base href="::">'),
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

  test('reads a page of 50,000 nested elements without exhausting the call stack', () => {
    const depth = 50_000;
    const html = `${'<div><span>'.repeat(depth)}info@shop.de${'</span></div>'.repeat(depth)}${'<a href="mailto:laden@shop.de">'.repeat(depth)}x`;
    const found = extractContacts([{ url: 'https://www.shop.de/', html }], { countryCode: 'DE', siteDomain: 'shop.de' });
    assert.deepEqual(found.emails.map((e) => e.address).sort(), ['info@shop.de', 'laden@shop.de']);
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
