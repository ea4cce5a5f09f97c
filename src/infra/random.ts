import { randomFillSync } from 'node:crypto';

/**
 * Random bytes for ids made on every request (request ids, search ids), drawn from the system's
 * generator a few kilobytes at a time instead of one call per id. Not for secrets that must never
 * share a buffer with anything else (tokens, session cookies): those use crypto.randomBytes directly.
 */
const pool = Buffer.alloc(8192);
let offset = pool.length;

/** `count` fresh random bytes (a view into the pool, valid until the next call). */
export function randomBytesFromPool(count: number): Buffer {
  if (count > pool.length) throw new RangeError(`at most ${pool.length} bytes at a time`);
  if (offset + count > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + count);
  offset += count;
  return bytes;
}
