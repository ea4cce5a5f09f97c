import assert from 'node:assert/strict';
import { test } from 'node:test';
import { escapeHtml, html, raw, safeUrl } from './html.ts';

test('html escapes interpolated text in element bodies and attributes', () => {
  const evil = `"><script>alert('x')</script><img src=x onerror=alert(1)>`;
  const out = html`<p title="${evil}">${evil}</p>`.value;
  assert.equal(out.includes('<script>'), false);
  assert.equal(out.includes('<img'), false);
  assert.equal(
    out,
    `<p title="&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;">&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</p>`,
  );
});

test('html keeps nested fragments and joins arrays without escaping them twice', () => {
  const items = ['a&b', '<i>'];
  const out = html`<ul>${items.map((i) => html`<li>${i}</li>`)}</ul>`.value;
  assert.equal(out, '<ul><li>a&amp;b</li><li>&lt;i&gt;</li></ul>');
});

test('html renders null, undefined and false as nothing and numbers as text', () => {
  assert.equal(html`[${null}${undefined}${false}${0}${12.5}]`.value, '[012.5]');
});

test('raw markup passes through unchanged', () => {
  assert.equal(html`<div>${raw('<svg></svg>')}</div>`.value, '<div><svg></svg></div>');
});

test('escapeHtml escapes the backtick that old browsers treated as an attribute quote', () => {
  assert.equal(escapeHtml('`x`'), '&#96;x&#96;');
});

test('safeUrl turns javascript: and protocol-relative URLs into a harmless #', () => {
  assert.equal(safeUrl('javascript:alert(1)'), '#');
  assert.equal(safeUrl('//evil.example/'), '#');
  assert.equal(safeUrl('/tokens'), '/tokens');
  assert.equal(safeUrl('https://example.com/a'), 'https://example.com/a');
});
