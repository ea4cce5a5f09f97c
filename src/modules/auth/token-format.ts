import { createHash, randomBytes } from 'node:crypto';

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
const tokenPattern = new RegExp(`^${tokenPrefix}[0-9A-Za-z]{${randomLength + checksumLength}}$`);

/** A fresh token: its value (shown once), the hash to store and the prefix to display. */
export function generateToken(): { token: string; hash: string; displayPrefix: string } {
  const random = randomBase62(randomLength);
  const token = tokenPrefix + random + checksumOf(tokenPrefix + random);
  return { token, hash: hashToken(token), displayPrefix: tokenPrefix + random.slice(0, displayLength) };
}

/** True when `value` has the prefix, the length, the alphabet and a matching checksum. */
export function isWellFormedToken(value: string): boolean {
  if (!tokenPattern.test(value)) return false;
  const body = value.slice(0, tokenLength - checksumLength);
  return checksumOf(body) === value.slice(tokenLength - checksumLength);
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 248 = 4 × 62: rejecting higher bytes keeps every character equally likely.
      if (byte < 248) out += base62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

function checksumOf(body: string): string {
  let n = crc32(Buffer.from(body, 'ascii'));
  let out = '';
  for (let i = 0; i < checksumLength; i++) {
    out = base62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

const crcTable = Array.from({ length: 256 }, (_, i) => {
  let c = i;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** CRC-32 (IEEE), as zlib computes it; zlib.crc32 itself only exists from Node 20.15. */
export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = (crcTable[(c ^ b) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
