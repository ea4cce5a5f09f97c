import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { analysePage, contactKindOf } from './page-links.ts';

const sameDomain = (domain: string) => (url: URL) => url.hostname === domain || url.hostname.endsWith(`.${domain}`);

describe('contactKindOf: the keyword list across languages', () => {
  test("names contact, legal, about and team pages in the taxonomy's languages, accents and case aside", () => {
    const cases: Record<string, string> = {
      Kontakt: 'contact',
      'Contactez-nous': 'contact',
      Contatti: 'contact',
      Contáctenos: 'contact',
      'Fale Conosco': 'contact',
      Yhteystiedot: 'contact',
      お問い合わせ: 'contact',
      연락처: 'contact',
      联系我们: 'contact',
      Контакты: 'contact',
      İletişim: 'contact',
      Επικοινωνία: 'contact',
      'צור קשר': 'contact',
      Impressum: 'legal',
      'Mentions légales': 'legal',
      'Aviso legal': 'legal',
      'Note legali': 'legal',
      Colofon: 'legal',
      'Über uns': 'about',
      'Chi siamo': 'about',
      'Quiénes somos': 'about',
      'Om oss': 'about',
      会社概要: 'about',
      'О нас': 'about',
      Hakkımızda: 'about',
      'Unser Team': 'team',
      Équipe: 'team',
    };
    for (const [text, kind] of Object.entries(cases)) assert.equal(contactKindOf(text), kind, text);
  });

  test('a keyword must start a word, except in scripts written without spaces', () => {
    assert.equal(contactKindOf('Produkte'), null);
    assert.equal(contactKindOf('Meisterbetrieb seit 1921'), null);
    assert.equal(contactKindOf('Kontaktformular'), 'contact');
    assert.equal(contactKindOf('/de/kontakt'), 'contact');
    assert.equal(contactKindOf('店舗へのお問い合わせはこちら'), 'contact');
  });

  test('the strongest kind wins when a text names several', () => {
    assert.equal(contactKindOf('Über uns & Kontakt'), 'contact');
    assert.equal(contactKindOf('Team und Impressum'), 'legal');
  });
});

describe('analysePage (htmlparser2)', () => {
  test("ranks links by the kind their words name, keeps the site's domain, drops files, fragments and the page itself", () => {
    const page = `<html><head><base href="/de/"></head><body>
      <a href="team.html">Team</a>
      <a href="ueber-uns.html">Über uns</a>
      <a href="kontakt.html#formular">Kontakt</a>
      <a href="kontakt.html">Schreiben Sie uns</a>
      <a href="https://impressum.example-host.com/">Impressum</a>
      <a href="https://shop.baeckerei.de/impressum">Impressum</a>
      <a href="/files/kontakt.pdf">Kontakt (PDF)</a>
      <a href="mailto:info@baeckerei.de">Kontakt per E-Mail</a>
      <a href="javascript:void(0)">Kontakt</a>
      <a href="#top">Kontakt</a>
      <a href="/de/">Start</a>
      <a href="/de/kontakt-anfahrt/">Wie Sie uns finden</a>
    </body></html>`;
    const analysis = analysePage(page, 'https://www.baeckerei.de/de/', sameDomain('baeckerei.de'));
    assert.deepEqual(
      analysis.contactLinks.map((l) => [l.url, l.kind, l.score]),
      [
        ['https://www.baeckerei.de/de/kontakt.html', 'contact', 8],
        ['https://shop.baeckerei.de/impressum', 'legal', 6],
        ['https://www.baeckerei.de/de/ueber-uns.html', 'about', 4],
        ['https://www.baeckerei.de/de/kontakt-anfahrt/', 'contact', 4],
        ['https://www.baeckerei.de/de/team.html', 'team', 2],
      ],
    );
  });

  test('counts visible text, scripts and links the way a reader sees the page', () => {
    const shell = analysePage(
      '<html><head><title>A long title that is not visible text</title><script>var a = "lots of code";</script></head><body><div id="app"></div><noscript>Please enable JavaScript to use this site.</noscript><script src="/app.js"></script></body></html>',
      'https://app.example.org/',
      () => true,
    );
    assert.deepEqual([shell.visibleTextLength, shell.scriptCount, shell.linkCount], [0, 2, 0]);
    const real = analysePage('<body><p>Bäckerei   Müller</p><a href="/x">Mehr</a></body>', 'https://b.example.org/', () => true);
    assert.deepEqual([real.visibleTextLength, real.scriptCount, real.linkCount], ['Bäckerei Müller'.length + 'Mehr'.length, 0, 1]);
  });

  test('reads <meta http-equiv="refresh"> targets, quoted or not, resolved against the page', () => {
    const refresh = (content: string) =>
      analysePage(
        `<html><head><meta http-equiv="Refresh" content="${content}"></head></html>`,
        'http://old.example.de/index.html',
        () => true,
      ).refreshUrl;
    assert.equal(refresh("0; URL='/de/start.html'"), 'http://old.example.de/de/start.html');
    assert.equal(refresh('3;url=https://www.example.de/'), 'https://www.example.de/');
    assert.equal(refresh('5'), null);
  });

  test('survives broken markup: unclosed tags and stray quotes still give their links', () => {
    const analysis = analysePage(
      '<div><a href=/kontakt>Kontakt<div><a href="/impressum>Impressum</a><p>unclosed',
      'http://x.example.com/',
      () => true,
    );
    assert.equal(analysis.contactLinks[0]?.url, 'http://x.example.com/kontakt');
  });

  test('a page nested far deeper than real pages gives the links before the depth limit instead of overflowing the stack', () => {
    const html = '<a href="/kontakt">Kontakt</a>' + '<b>'.repeat(100_000) + '<a href="/impressum">Impressum</a>';
    const analysis = analysePage(html, 'https://x.example.de/', () => true);
    assert.deepEqual(
      analysis.contactLinks.map((l) => l.url),
      ['https://x.example.de/kontakt'],
    );
  });
});
