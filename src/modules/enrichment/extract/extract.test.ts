import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { canonicalSocial } from '../../contacts/socials.ts';
import { normaliseEmail } from './emails.ts';
import { type ExtractedContacts, extractContacts } from './extract.ts';
import { decodeCloudflareEmail } from './page-scan.ts';

const site = 'https://www.baeckerei-huber.de/';
const extract = (html: string, countryCode: string | null = 'DE', url = site): ExtractedContacts =>
  extractContacts([{ url, html }], { countryCode, siteDomain: 'baeckerei-huber.de' });
const emails = (html: string) => extract(html).emails.map((e) => e.address);
const phones = (html: string, countryCode: string | null = 'DE') => extract(html, countryCode).phones.map((p) => p.e164);
const page = (body: string) => `<!doctype html><html><head><title>Bäckerei Huber</title></head><body>${body}</body></html>`;

/** Cloudflare's encoding of an address with a key byte, as its email protection writes it. */
function cloudflareHex(address: string, key: number): string {
  const hex = (n: number) => n.toString(16).padStart(2, '0');
  return hex(key) + [...Buffer.from(address, 'utf8')].map((b) => hex(b ^ key)).join('');
}

describe('email extraction', () => {
  test('reads mailto links, decoding percent escapes and dropping the query', () => {
    assert.deepEqual(emails(page('<a href="mailto:%20info@baeckerei-huber.de?subject=Hallo">Schreiben Sie uns</a>')), [
      'info@baeckerei-huber.de',
    ]);
  });

  test('undoes obfuscations inside a mailto link', () => {
    assert.deepEqual(emails(page('<a href="mailto:info[at]baeckerei-huber[dot]de">Mail</a>')), ['info@baeckerei-huber.de']);
  });

  test('reads several addresses of one mailto link', () => {
    assert.deepEqual(emails(page('<a href="mailto:a@baeckerei-huber.de,b@baeckerei-huber.de">mail</a>')), [
      'a@baeckerei-huber.de',
      'b@baeckerei-huber.de',
    ]);
  });

  test('reads addresses written in visible text, with entities decoded by the parser', () => {
    assert.deepEqual(emails(page('<p>E-Mail: info&#64;baeckerei-huber.de</p>')), ['info@baeckerei-huber.de']);
    assert.deepEqual(emails(page('<p>E-Mail: info&commat;baeckerei-huber&period;de</p>')), ['info@baeckerei-huber.de']);
  });

  test('undoes bracketed obfuscations', () => {
    for (const written of [
      'info [at] baeckerei-huber [dot] de',
      'info(at)baeckerei-huber.de',
      'info {at} baeckerei-huber (dot) de',
      'info[@]baeckerei-huber.de',
    ]) {
      assert.deepEqual(emails(page(`<p>${written}</p>`)), ['info@baeckerei-huber.de'], written);
    }
  });

  test('closes spaces around the @ unless the words make a sentence', () => {
    assert.deepEqual(emails(page('<p>info @ baeckerei-huber.de</p>')), ['info@baeckerei-huber.de']);
    assert.deepEqual(emails(page('<p>Follow us @ twitter.com</p>')), []);
  });

  test('undoes the spelled-out form only when the domain is spelled out too', () => {
    assert.deepEqual(emails(page('<p>info at baeckerei-huber punkt de</p>')), ['info@baeckerei-huber.de']);
    assert.deepEqual(emails(page('<p>Write to info at baeckerei-huber dot de</p>')), ['info@baeckerei-huber.de']);
    assert.deepEqual(emails(page('<p>Meet the team at Marienplatz. Ask for Anna at the counter.</p>')), []);
    assert.deepEqual(emails(page('<p>Find us at baeckerei-huber dot de</p>')), []);
  });

  test('decodes Cloudflare email protection in data-cfemail and in protection links', () => {
    const hex = cloudflareHex('info@baeckerei-huber.de', 0x5a);
    assert.equal(decodeCloudflareEmail(hex), 'info@baeckerei-huber.de');
    assert.deepEqual(emails(page(`<a class="__cf_email__" data-cfemail="${hex}">[email&#160;protected]</a>`)), ['info@baeckerei-huber.de']);
    assert.deepEqual(emails(page(`<a href="/cdn-cgi/l/email-protection#${cloudflareHex('laden@baeckerei-huber.de', 0x13)}">Mail</a>`)), [
      'laden@baeckerei-huber.de',
    ]);
    assert.equal(decodeCloudflareEmail('zz12'), null);
  });

  test('reads JSON-LD email values in nested objects, @graph and arrays, and microdata', () => {
    const jsonLd = JSON.stringify({
      '@context': 'https://schema.org',
      '@graph': [
        { '@type': 'Bakery', email: 'mailto:info@baeckerei-huber.de', contactPoint: [{ email: ['bestellung@baeckerei-huber.de'] }] },
      ],
    });
    assert.deepEqual(emails(page(`<script type="application/ld+json">${jsonLd}</script>`)), [
      'info@baeckerei-huber.de',
      'bestellung@baeckerei-huber.de',
    ]);
    assert.deepEqual(emails(page('<span itemprop="email">laden@baeckerei-huber.de</span>')), ['laden@baeckerei-huber.de']);
    assert.deepEqual(emails(page('<script type="application/ld+json">{"email": broken</script><p>x</p>')), []);
  });

  test('ignores addresses in scripts, styles, comments and form defaults', () => {
    const html = page(
      '<script>var dsn = "https://abc@o1.ingest.example.io"; var mail = "shop@baeckerei-huber.de";</script>' +
        '<style>/* font by design@foundry.com */</style><!-- old: alt@baeckerei-huber.de -->' +
        '<input placeholder="you@yourdomain.com"><textarea>chef@baeckerei-huber.de</textarea><p>Nothing here</p>',
    );
    assert.deepEqual(emails(html), []);
  });

  test('drops asset file names, reserved and placeholder domains, platform addresses and machine-made mailboxes', () => {
    const junk = [
      'logo@2x.png',
      'banner@3x.webp',
      'icon@2x.svg',
      'photo@large.jpg',
      'info@example.com',
      'someone@example.org',
      'office@shop.example',
      'your@email.com',
      'name@domain.com',
      'yourname@gmail.com',
      'email@example',
      'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6@sentry.io',
      'abc@sentry-next.wixpress.com',
      'support@squarespace.com',
      'help@godaddy.com',
      'wordpress@wordpress.org',
      'john.doe@baeckerei-huber.de',
      'noreply@baeckerei-huber.de',
      'x@localhost',
    ];
    for (const address of junk) assert.equal(normaliseEmail(address), null, address);
    assert.deepEqual(emails(page(`<p>${junk.join(' ')}</p>`)), []);
    assert.equal(normaliseEmail('Info@Baeckerei-Huber.DE'), 'Info@baeckerei-huber.de');
  });

  test('drops the address of a web designer credit', () => {
    const html = page(
      '<p>info@baeckerei-huber.de</p><footer>Website by Pixelwerk: hallo@pixelwerk.de <a href="mailto:studio@webagentur.de">Site by</a></footer>',
    );
    assert.deepEqual(emails(html), ['info@baeckerei-huber.de']);
    for (const credit of [
      'Webdesign von Pixelwerk',
      'Réalisé par Pixelwerk',
      'Diseño web por Pixelwerk',
      'Realizzato da Pixelwerk',
      'Desenvolvido por Pixelwerk',
    ]) {
      assert.deepEqual(
        emails(page(`<p>info@baeckerei-huber.de</p><p>${credit} – hallo@pixelwerk.de</p>`)),
        ['info@baeckerei-huber.de'],
        credit,
      );
    }
  });

  test('ranks the site own addresses first, deduplicates case-insensitively and marks own_domain', () => {
    const found = extract(
      page(
        '<p>baeckerhuber@gmail.com</p><p>INFO@Baeckerei-Huber.de</p><p>info@baeckerei-huber.de</p><p>filiale@shop.baeckerei-huber.de</p>',
      ),
    ).emails;
    assert.deepEqual(
      found.map((e) => [e.address, e.own_domain]),
      [
        ['INFO@baeckerei-huber.de', true],
        ['filiale@shop.baeckerei-huber.de', true],
        ['baeckerhuber@gmail.com', false],
      ],
    );
    assert.equal(found[0]!.page, site);
  });

  test('separates an address from a label or text that inline markup runs into it', () => {
    assert.deepEqual(emails(page('<p><span>info@baeckerei-huber.de</span><span>Telefon</span></p>')), ['info@baeckerei-huber.de']);
    assert.deepEqual(emails(page('<p><span class="label">E-Mail</span><span class="value">info@baeckerei-huber.de</span></p>')), [
      'info@baeckerei-huber.de',
    ]);
    assert.deepEqual(emails(page('<p>info<span>@</span>baeckerei-huber.de</p>')), ['info@baeckerei-huber.de']);
  });

  test('reads an address from the query of a payment link', () => {
    assert.deepEqual(
      emails(page('<a href="https://www.paypal.com/cgi-bin/webscr?cmd=_cart&amp;business=kasse@baeckerei-huber.de">Pay</a>')),
      ['kasse@baeckerei-huber.de'],
    );
  });
});

describe('phone extraction', () => {
  test('reads tel links, JSON-LD telephone and microdata in the place country', () => {
    const jsonLd = JSON.stringify({ '@type': 'Bakery', telephone: '089 2199890' });
    const html = page(
      `<a href="tel:+49-89-1234567">Anrufen</a><script type="application/ld+json">${jsonLd}</script><span itemprop="telephone">0171 2345678</span>`,
    );
    assert.deepEqual(phones(html), ['+49891234567', '+49892199890', '+491712345678']);
  });

  test('reads callto links and the numbers of WhatsApp chat links', () => {
    const html = page(
      '<a href="callto:089 2199890">Skype</a><a href="https://wa.me/491712345678?text=Hallo">WhatsApp</a><a href="https://api.whatsapp.com/send?phone=+34612345678">WA</a><a href="https://wa.me/">WA</a>',
    );
    assert.deepEqual(phones(html), ['+49892199890', '+491712345678', '+34612345678']);
  });

  test('reads numbers written in visible text, including the (0) after the country code', () => {
    assert.deepEqual(phones(page('<p>Tel.: 089 / 219 98 90</p><p>+49 (0) 171 2345678</p>'), 'DE'), ['+49892199890', '+491712345678']);
    assert.deepEqual(phones(page('<p>Call (214) 544-0919 today</p>'), 'US'), ['+12145440919']);
  });

  test('drops numbers labelled as fax, before or after the number, unless a page also gives them as a phone', () => {
    assert.deepEqual(phones(page('<p>Phone: (916) 774-5200</p><p>Fax: (916) 786-9175</p><p>(916) 782-4348 [fax]</p>'), 'US'), [
      '+19167745200',
    ]);
    assert.deepEqual(phones(page('<p>T 020 3167 4997 | F 020 7629 1317</p>'), 'GB'), ['+442031674997']);
    assert.deepEqual(phones(page('<p>Tel/Fax: 020 3167 4997</p>'), 'GB'), ['+442031674997']);
    assert.deepEqual(phones(page('<p>Fax: 020 3167 4997</p><a href="tel:02031674997">Call</a>'), 'GB'), ['+442031674997']);
  });

  test('ignores dates, prices, product numbers and digit runs without a phone label', () => {
    const html = page('<p>Opened 12/03/2014. Price $1,299.00. Amiga 500/600/1200 supply. Order 2125551234 shipped. Since 1999-2014.</p>');
    assert.deepEqual(phones(html, 'US'), []);
    assert.deepEqual(phones(page('<p>Phone Number</p><p>16177373344</p>'), 'US'), ['+16177373344']);
    assert.deepEqual(phones(page('<p>Telemóvel: 912345678</p><p>NIPC 501234567</p>'), 'PT'), ['+351912345678']);
  });

  test('ignores bank accounts, tax and company registrations and opening hours', () => {
    const html = page(
      '<p>IBAN: DE89 3704 0044 0532 0130 00</p><p>Konto 0532 0130 00</p><p>Steuernummer 143/123/45678</p><p>Mo-Fr 08.00-12.00 14.00-18.00 Uhr</p><p>P.IVA 01234567890</p>',
    );
    assert.deepEqual(phones(html, 'DE'), []);
    assert.deepEqual(phones(page('<p>VAT Reg No. 123 4567 89</p><p>Jerry, Account Manager</p><p>(469) 360-3706</p>'), 'US'), [
      '+14693603706',
    ]);
  });

  test('finds no national numbers without a country, but finds international ones', () => {
    assert.deepEqual(phones(page('<p>Tel. 089 2199890 or +33 1 42 68 53 00</p>'), null), ['+33142685300']);
  });

  test('deduplicates numbers by E.164 and keeps the raw text of the first', () => {
    const found = extract(page('<p>Tel: 089 2199890</p><p>Telefon +49 89 2199890</p>')).phones;
    assert.deepEqual(
      found.map((p) => [p.e164, p.raw]),
      [['+49892199890', '089 2199890']],
    );
  });
});

describe('social profiles', () => {
  test('canonicalises profile links of each network', () => {
    const cases: Array<[string, string]> = [
      ['https://www.facebook.com/BaeckereiHuber/', 'https://www.facebook.com/baeckereihuber'],
      ['http://m.facebook.com/BaeckereiHuber?ref=ts', 'https://www.facebook.com/baeckereihuber'],
      ['https://de-de.facebook.com/BaeckereiHuber/about', 'https://www.facebook.com/baeckereihuber'],
      ['https://www.facebook.com/pages/Dallas-TX/erin-clark-design/120267761497', 'https://www.facebook.com/120267761497'],
      ['https://www.facebook.com/profile.php?id=100012345678', 'https://www.facebook.com/profile.php?id=100012345678'],
      ['https://www.facebook.com/p/Baeckerei-Huber-100063512345678/', 'https://www.facebook.com/profile.php?id=100063512345678'],
      ['http://www.facebook.com/?sk=lf#!/pages/Chocolate-Springs-Cafe/105297482841928?sk=wall', 'https://www.facebook.com/105297482841928'],
      ['https://instagram.com/baeckerei.huber/', 'https://www.instagram.com/baeckerei.huber'],
      ['https://www.linkedin.com/company/baeckerei-huber/about/', 'https://www.linkedin.com/company/baeckerei-huber'],
      ['https://de.linkedin.com/in/anna-huber-123', 'https://www.linkedin.com/in/anna-huber-123'],
      ['https://www.linkedin.com/school/tum', 'https://www.linkedin.com/school/tum'],
      ['https://twitter.com/BaeckerHuber', 'https://x.com/baeckerhuber'],
      ['http://twitter.com/#!/BaeckerHuber', 'https://x.com/baeckerhuber'],
      ['https://x.com/@BaeckerHuber', 'https://x.com/baeckerhuber'],
      ['https://www.youtube.com/channel/UCabcdefghijklmnopqrstuv', 'https://www.youtube.com/channel/UCabcdefghijklmnopqrstuv'],
      ['https://youtube.com/@BaeckereiHuber', 'https://www.youtube.com/@baeckereihuber'],
      ['https://www.youtube.com/c/BaeckereiHuber/videos', 'https://www.youtube.com/c/BaeckereiHuber'],
      ['https://www.youtube.com/user/huberbakery', 'https://www.youtube.com/user/huberbakery'],
      ['https://www.tiktok.com/@baeckerei_huber?lang=de', 'https://www.tiktok.com/@baeckerei_huber'],
      ['//www.instagram.com/baeckerei.huber', 'https://www.instagram.com/baeckerei.huber'],
      ['https://fb.me/BaeckereiHuber', 'https://www.facebook.com/baeckereihuber'],
    ];
    for (const [link, canonical] of cases) assert.equal(canonicalSocial(link)?.url, canonical, link);
    assert.equal(canonicalSocial('https://twitter.com/BaeckerHuber')?.network, 'x');
  });

  test('canonicalises handles written as network:handle', () => {
    assert.deepEqual(canonicalSocial('instagram:cafe_x'), { network: 'instagram', url: 'https://www.instagram.com/cafe_x' });
    assert.deepEqual(canonicalSocial('facebook:12345'), { network: 'facebook', url: 'https://www.facebook.com/12345' });
    assert.deepEqual(canonicalSocial('twitter:@CafeX'), { network: 'x', url: 'https://x.com/cafex' });
  });

  test('refuses share, intent, plugin and tracking links, posts, hashtags and the platforms own pages', () => {
    const refused = [
      'https://www.facebook.com/sharer/sharer.php?u=https%3A%2F%2Fbaeckerei-huber.de',
      'https://www.facebook.com/sharer.php?u=x',
      'https://www.facebook.com/plugins/like.php?href=x',
      'https://www.facebook.com/tr?id=123&ev=PageView',
      'https://www.facebook.com/dialog/feed?app_id=1',
      'https://www.facebook.com/BaeckereiHuber/posts/1234567890',
      'https://www.facebook.com/BaeckereiHuber/photos/a.1/2/',
      'https://www.facebook.com/hashtag/brot',
      'https://www.facebook.com/facebook',
      'https://www.facebook.com/events/123456/',
      'https://twitter.com/intent/tweet?text=x',
      'https://twitter.com/share?url=x',
      'https://twitter.com/BaeckerHuber/status/1234567890',
      'https://twitter.com/hashtag/brot',
      'https://twitter.com/twitter',
      'https://x.com/home',
      'https://www.instagram.com/p/CxYz123/',
      'https://www.instagram.com/explore/tags/brot/',
      'https://www.instagram.com/instagram',
      'https://www.linkedin.com/shareArticle?mini=true&url=x',
      'https://www.linkedin.com/sharing/share-offsite/?url=x',
      'https://www.linkedin.com/groups?gid=51850',
      'https://www.linkedin.com/company/linkedin',
      'https://www.linkedin.com/company/baeckerei-huber/posts/',
      'https://www.youtube.com/watch?v=dQw4w9WgXcQ',
      'https://youtu.be/dQw4w9WgXcQ',
      'https://www.youtube.com/embed/dQw4w9WgXcQ',
      'https://www.youtube.com/youtube',
      'https://www.tiktok.com/@baeckerei_huber/video/1234567890',
      'https://www.tiktok.com/tag/brot',
      'https://www.facebook.com/wix',
      'https://developers.facebook.com/docs/plugins',
      'https://help.instagram.com/581066165581870',
      'https://business.linkedin.com/marketing-solutions',
      'https://pinterest.com/baeckerhuber/',
      'https://www.yelp.com/biz/baeckerei-huber-muenchen',
      'mailto:info@baeckerei-huber.de',
      'javascript:void(0)',
      'not a link',
    ];
    for (const link of refused) assert.equal(canonicalSocial(link), null, link);
  });

  test('collects profiles from links and JSON-LD sameAs once each, with the page they came from', () => {
    const jsonLd = JSON.stringify({
      '@type': 'Bakery',
      sameAs: ['https://www.instagram.com/baeckerei.huber', 'https://twitter.com/BaeckerHuber'],
    });
    const found = extract(
      page(
        `<a href="https://twitter.com/BaeckerHuber">X</a><a href="https://twitter.com/intent/tweet?url=x">Share</a><script type="application/ld+json">${jsonLd}</script>`,
      ),
    ).socials;
    assert.deepEqual(found, [
      { network: 'x', url: 'https://x.com/baeckerhuber', page: site },
      { network: 'instagram', url: 'https://www.instagram.com/baeckerei.huber', page: site },
    ]);
  });

  test('keeps only the site own profiles when its pages link many profiles of one network', () => {
    const others = ['muellerbrot', 'konditorei.schmid', 'cafe.luitpold', 'brotzeit.muc']
      .map((h) => `<a href="https://www.instagram.com/${h}">${h}</a>`)
      .join('');
    const jsonLd = JSON.stringify({ '@type': 'Bakery', sameAs: 'https://www.instagram.com/huber.backt' });
    const found = extract(
      page(`${others}<a href="https://www.instagram.com/baeckerei_huber">Wir</a><script type="application/ld+json">${jsonLd}</script>`),
    ).socials;
    assert.deepEqual(
      found.map((s) => s.url),
      ['https://www.instagram.com/baeckerei_huber', 'https://www.instagram.com/huber.backt'],
    );
    const few = extract(page(others.split('</a>').slice(0, 2).join('</a>') + '</a>')).socials;
    assert.equal(few.length, 2);
  });
});

describe('contact page', () => {
  test('is the given page whose path names a contact page, before an imprint', () => {
    const found = extractContacts(
      [
        { url: 'https://www.baeckerei-huber.de/', html: page('<a href="/impressum">Impressum</a>') },
        { url: 'https://www.baeckerei-huber.de/impressum', html: page('x') },
        { url: 'https://www.baeckerei-huber.de/kontakt/', html: page('x') },
      ],
      { countryCode: 'DE', siteDomain: 'baeckerei-huber.de' },
    );
    assert.equal(found.contact_url, 'https://www.baeckerei-huber.de/kontakt/');
  });

  test('is otherwise the best contact link of the home page at the site own domain', () => {
    const html = page(
      '<a href="https://other.example.net/contact">Contact</a><a href="/ueber-uns">Über uns</a><a href="/legal">Impressum</a><a href="/seite-7">Kontakt</a>',
    );
    assert.equal(extract(html).contact_url, 'https://www.baeckerei-huber.de/seite-7');
    assert.equal(extract(page('<a href="/produkte">Brot</a>')).contact_url, null);
  });

  test('resolves relative contact links against the page base href', () => {
    const html = '<html><head><base href="https://www.baeckerei-huber.de/"></head><body><a href="kontakt.html">Kontakt</a></body></html>';
    assert.equal(
      extract(html, 'DE', 'https://www.baeckerei-huber.de/shop/brot/index.html').contact_url,
      'https://www.baeckerei-huber.de/kontakt.html',
    );
  });
});

describe('a modern small-business site', () => {
  // A home page and a contact page as site builders write them today: tracking and error-reporting scripts,
  // share buttons, a cookie banner, JSON-LD, Cloudflare protection, a builder's footer and a designer credit.
  const home = `<!DOCTYPE html><html lang="de"><head><meta charset="utf-8"><title>Bäckerei Huber – Brot aus München</title>
    <base href="https://www.baeckerei-huber.de/">
    <script>window.Sentry && Sentry.init({ dsn: "https://4f2a9c0b1d3e4f5a6b7c8d9e0f1a2b3c@o450000.ingest.sentry.io/5500000" });</script>
    <script type="application/ld+json">{"@context":"https://schema.org","@graph":[{"@type":"WebSite","url":"https://www.baeckerei-huber.de/"},
      {"@type":"Bakery","name":"Bäckerei Huber","telephone":"+49 89 2199890","email":"info@baeckerei-huber.de",
       "sameAs":["https://www.facebook.com/BaeckereiHuber","https://www.instagram.com/baeckerei.huber/"],
       "address":{"@type":"PostalAddress","postalCode":"80331","addressLocality":"München"}}]}</script>
    <style>.logo{background:url(img/logo@2x.png)}</style></head>
    <body><header><img src="img/logo@2x.png" alt="logo@2x.png"><nav><a href="/">Start</a><a href="sortiment/">Sortiment</a><a href="kontakt/">Kontakt</a><a href="impressum/">Impressum</a></nav></header>
    <main><h1>Seit 1921 backen wir in München</h1><p>Bestellungen bis 12.03. für Ostern. Brezn ab 0,95 €.</p>
    <p>Öffnungszeiten: Mo–Fr 06.30–18.00, Sa 07.00–12.30</p>
    <div class="share"><a href="https://www.facebook.com/sharer/sharer.php?u=https%3A%2F%2Fwww.baeckerei-huber.de">Teilen</a>
    <a href="https://twitter.com/intent/tweet?url=https%3A%2F%2Fwww.baeckerei-huber.de">Tweet</a>
    <a href="https://www.linkedin.com/shareArticle?mini=true&url=x">LinkedIn</a></div>
    <form><input type="email" placeholder="ihre@email.de" value="name@domain.com"><textarea>max@mustermann.de</textarea></form></main>
    <footer><p>Bäckerei Huber GmbH · Marienplatz 1 · 80331 München</p>
    <p>Tel. <a href="tel:+49892199890">089 / 219 98 90</a> · Fax 089 / 219 98 99</p>
    <p>E-Mail: <a href="/cdn-cgi/l/email-protection#${cloudflareHex('laden@baeckerei-huber.de', 0x42)}">[email&#160;protected]</a></p>
    <p>IBAN DE89 3704 0044 0532 0130 00 · USt-IdNr. DE 123 456 789 · HRB 123456</p>
    <p><a href="https://www.instagram.com/baeckerei.huber">Instagram</a> <a href="https://www.youtube.com/@BaeckereiHuber">YouTube</a>
    <a href="https://www.facebook.com/wix">Made with Wix</a></p>
    <p>Website by Pixelwerk · <a href="mailto:hallo@pixelwerk-design.de">Site by Pixelwerk</a></p>
    <!-- alt: bestellung@baeckerei-huber.de --></footer></body></html>`;
  const contact = `<html><head><title>Kontakt – Bäckerei Huber</title></head><body>
    <h1>Kontakt</h1><p>Schreiben Sie uns: bestellung [at] baeckerei-huber [dot] de</p>
    <p>Für Großkunden: grosskunden(at)baeckerei-huber.de, Telefon 0171 2345678</p>
    <p>Unsere Filiale am Viktualienmarkt: filiale.viktualienmarkt@gmail.com</p>
    <p>Unsere Partner: <a href="https://www.instagram.com/muellerbrot">a</a><a href="https://www.instagram.com/konditorei.schmid">b</a><a href="https://www.instagram.com/cafe.luitpold">c</a></p></body></html>`;

  test('finds the business contacts and nothing of the builder, the designer, the scripts or the forms', () => {
    const found = extractContacts(
      [
        { url: 'https://www.baeckerei-huber.de/', html: home },
        { url: 'https://www.baeckerei-huber.de/kontakt/', html: contact },
      ],
      { countryCode: 'DE', siteDomain: 'baeckerei-huber.de' },
    );
    assert.deepEqual(
      found.emails.map((e) => [e.address, e.own_domain]),
      [
        ['laden@baeckerei-huber.de', true],
        ['info@baeckerei-huber.de', true],
        ['bestellung@baeckerei-huber.de', true],
        ['grosskunden@baeckerei-huber.de', true],
        ['filiale.viktualienmarkt@gmail.com', false],
      ],
    );
    assert.deepEqual(
      found.phones.map((p) => p.e164),
      ['+49892199890', '+491712345678'],
    );
    // Four Instagram profiles: the partners listed on the contact page are not the bakery's.
    assert.deepEqual(
      found.socials.map((s) => s.url),
      ['https://www.instagram.com/baeckerei.huber', 'https://www.youtube.com/@baeckereihuber', 'https://www.facebook.com/baeckereihuber'],
    );
    assert.equal(found.contact_url, 'https://www.baeckerei-huber.de/kontakt/');
  });
});
