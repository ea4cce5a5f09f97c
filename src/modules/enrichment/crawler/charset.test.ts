import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import iconv from 'iconv-lite';
import { charsetOfContentType, decodeHtml } from './charset.ts';

describe('decodeHtml: the encoding a browser would pick', () => {
  test('the Content-Type charset wins over a contradicting <meta charset>', () => {
    const body = iconv.encode('<html><head><meta charset="utf-8"></head><body>Łódź</body></html>', 'iso-8859-2');
    assert.deepEqual(decodeHtml(body, 'text/html; charset="ISO-8859-2"'), {
      html: '<html><head><meta charset="utf-8"></head><body>Łódź</body></html>',
      encoding: 'iso-8859-2',
    });
  });

  test('without a header charset, <meta charset> and <meta http-equiv> are read by the parser', () => {
    const sjis = iconv.encode('<html><head><META CHARSET=Shift_JIS></head><body>お問い合わせ</body></html>', 'shift_jis');
    assert.match(decodeHtml(sjis, 'text/html').html, /お問い合わせ/);
    const koi8 = iconv.encode(
      '<html><head><meta http-equiv="Content-Type" content="text/html; charset=koi8-r"></head><body>Контакты</body></html>',
      'koi8-r',
    );
    assert.deepEqual([decodeHtml(koi8, undefined).encoding, /Контакты/.test(decodeHtml(koi8, undefined).html)], ['koi8-r', true]);
  });

  test('ISO-8859-1 labels are read as windows-1252, as browsers do, so € and – survive', () => {
    const body = iconv.encode('<p>5 € – prix</p>', 'windows-1252');
    assert.deepEqual(decodeHtml(body, 'text/html; charset=iso-8859-1'), { html: '<p>5 € – prix</p>', encoding: 'windows-1252' });
  });

  test('undeclared pages are detected: UTF-8 when valid, else chardet (windows-1252 here)', () => {
    assert.deepEqual(decodeHtml(Buffer.from('<p>Zürich, 5 €</p>'), 'text/html'), { html: '<p>Zürich, 5 €</p>', encoding: 'utf-8' });
    const latin = iconv.encode('<p>Bäckerei Müller – Brötchen für 0,50 €, täglich frisch gebacken.</p>', 'windows-1252');
    assert.deepEqual(decodeHtml(latin, undefined), {
      html: '<p>Bäckerei Müller – Brötchen für 0,50 €, täglich frisch gebacken.</p>',
      encoding: 'windows-1252',
    });
  });

  test('a byte-order mark beats every declaration, and an ASCII page claiming UTF-16 is read as UTF-8', () => {
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('<p>Ærø</p>')]);
    assert.deepEqual(decodeHtml(bom, 'text/html; charset=windows-1252'), { html: '<p>Ærø</p>', encoding: 'utf-8' });
    assert.equal(decodeHtml(Buffer.from('<meta charset="utf-16"><p>Ærø</p>'), undefined).html, '<meta charset="utf-16"><p>Ærø</p>');
  });

  test('an unknown label falls through to detection instead of failing', () => {
    assert.equal(decodeHtml(Buffer.from('<p>Café</p>'), 'text/html; charset=x-no-such-thing').html, '<p>Café</p>');
  });

  test('charsetOfContentType reads the parameter, quoted or not, among others', () => {
    assert.equal(charsetOfContentType('text/html; boundary=x; Charset="UTF-8"'), 'UTF-8');
    assert.equal(charsetOfContentType('text/html'), null);
    assert.equal(charsetOfContentType(undefined), null);
  });
});
