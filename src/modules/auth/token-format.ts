import * as crypto from 'node:crypto';

/**
 * Personal access token format, after GitHub's `ghp_` tokens:
 *
 *   la_pat_ + 30 base62 characters of randomness (178 bits) + 6 base62 characters of CRC32 checksum
 *
 * The prefix lets secret scanners match a leaked token; the checksum lets the server reject a
 * mistyped or truncated token before any database lookup. Only the SHA-256 of the whole token is
 * stored: a fast hash is right for a secret with this much entropy.
 */
export const tokenPrefix = 'la_pat_';
export const randomLength = 30;
export const checksumLength = 6;
export const tokenLength = tokenPrefix.length + randomLength + checksumLength;
/** Characters of the random part kept as the display prefix. */
const displayLength = 6;

const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A fresh token: its value (shown once), the hash to store and the prefix to display. */
export function generateToken(): { token: string; hash: string; displayPrefix: string } {
  const random = randomBase62(randomLength);
  const token = tokenPrefix + random + checksumOf(tokenPrefix + random);
  return { token, hash: hashToken(token), displayPrefix: tokenPrefix + random.slice(0, displayLength) };
}

/**
 * True when `value` has the prefix, the length, the alphabet and a matching checksum. One pass, no
 * allocation: it runs on every API request, before anything else.
 */
export function isWellFormedToken(value: string): boolean {
  if (value.length !== tokenLength || !value.startsWith(tokenPrefix)) return false;
  const bodyEnd = tokenLength - checksumLength;
  let crc = prefixCrcState;
  for (let i = tokenPrefix.length; i < bodyEnd; i++) {
    const code = value.charCodeAt(i);
    if (code > 127 || (base62Values[code] as number) < 0) return false;
    crc = (crcTable[(crc ^ code) & 0xff] as number) ^ (crc >>> 8);
  }
  let given = 0;
  for (let i = bodyEnd; i < tokenLength; i++) {
    const code = value.charCodeAt(i);
    const digit = code > 127 ? -1 : (base62Values[code] as number);
    if (digit < 0) return false;
    given = given * 62 + digit;
  }
  return given === (crc ^ 0xffffffff) >>> 0;
}

/**
 * SHA-256 (hex) of the token: what the database stores and looks up. `crypto.hash` (Node ≥ 20.12)
 * returns the hex string without the Hash object and Buffer that `createHash` allocates; this runs
 * on every API request.
 */
export const hashToken: (token: string) => string =
  typeof crypto.hash === 'function'
    ? (token) => crypto.hash('sha256', token, 'hex')
    : (token) => crypto.createHash('sha256').update(token).digest('hex');

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of crypto.randomBytes(length * 2)) {
      // 248 = 4 × 62: rejecting higher bytes keeps every character equally likely.
      if (byte < 248) out += base62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

function checksumOf(body: string): string {
  let n = crc32Ascii(body);
  let out = '';
  for (let i = 0; i < checksumLength; i++) {
    out = base62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

const crcTable = Uint32Array.from({ length: 256 }, (_, i) => {
  let c = i;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

const base62Values = new Int8Array(128).fill(-1);
for (let i = 0; i < base62.length; i++) base62Values[base62.charCodeAt(i)] = i;

/** The CRC register after the constant prefix, so verification only runs over the random part. */
const prefixCrcState = (() => {
  let c = 0xffffffff;
  for (let i = 0; i < tokenPrefix.length; i++) c = (crcTable[(c ^ tokenPrefix.charCodeAt(i)) & 0xff] as number) ^ (c >>> 8);
  return c;
})();

/** CRC-32 (IEEE), as zlib computes it (zlib.crc32 only exists from Node 20.15), over an ASCII string. */
export function crc32Ascii(text: string): number {
  let c = 0xffffffff;
  for (let i = 0; i < text.length; i++) c = (crcTable[(c ^ text.charCodeAt(i)) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
