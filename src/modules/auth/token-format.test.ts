import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  checksumLength,
  crc32Ascii,
  generateToken,
  hashToken,
  isWellFormedToken,
  randomLength,
  tokenLength,
  tokenPrefix,
} from './token-format.ts';

test('a generated token is the prefix, 30 base62 random characters and a 6-character checksum', () => {
  const { token, hash, displayPrefix } = generateToken();
  assert.equal(token.length, tokenLength);
  assert.match(token, /^la_pat_[0-9A-Za-z]{36}$/);
  assert.equal(hash, hashToken(token));
  assert.match(hash, /^[0-9a-f]{64}$/);
  assert.equal(displayPrefix, token.slice(0, tokenPrefix.length + 6));
  assert.ok(isWellFormedToken(token));
});

test('the random part carries at least 160 bits of entropy', () => {
  assert.ok(randomLength * Math.log2(62) >= 160);
  const tokens = Array.from({ length: 2000 }, () => generateToken().token);
  assert.equal(new Set(tokens).size, tokens.length);
  // Every base62 character turns up: the alphabet is used whole, not a biased subset.
  const seen = new Set(tokens.flatMap((t) => [...t.slice(tokenPrefix.length, tokenPrefix.length + randomLength)]));
  assert.equal(seen.size, 62);
});

test('rejects every single-character typo and every truncation through the checksum', () => {
  const { token } = generateToken();
  const body = tokenPrefix.length;
  for (let i = body; i < token.length; i++) {
    const replacement = token[i] === 'a' ? 'b' : 'a';
    assert.equal(isWellFormedToken(token.slice(0, i) + replacement + token.slice(i + 1)), false, `typo at ${i}`);
  }
  for (let n = 1; n <= checksumLength + 2; n++) assert.equal(isWellFormedToken(token.slice(0, -n)), false, `truncated by ${n}`);
});

test('rejects values with another prefix, bad characters or extra characters', () => {
  const { token } = generateToken();
  for (const bad of [
    '',
    'la_pat_',
    `ghp_${token.slice(tokenPrefix.length)}`,
    `${token} `,
    `${token}A`,
    token.replace(/.$/, '-'),
    token.toUpperCase(),
  ]) {
    assert.equal(isWellFormedToken(bad), false, bad);
  }
});

test('the checksum is the standard CRC-32 (IEEE check values)', () => {
  assert.equal(crc32Ascii('123456789'), 0xcbf43926);
  assert.equal(crc32Ascii('The quick brown fox jumps over the lazy dog'), 0x414fa339);
  assert.equal(crc32Ascii(''), 0);
});
