import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomBytesFromPool } from './random.ts';

test('hands out fresh random bytes across refills of the pool', () => {
  const seen = new Set<string>();
  const counts = new Array<number>(256).fill(0);
  // 5,000 ids of 16 bytes: nearly ten refills of the 8 KiB pool.
  for (let i = 0; i < 5000; i++) {
    const bytes = randomBytesFromPool(16);
    assert.equal(bytes.length, 16);
    seen.add(bytes.toString('hex'));
    for (const b of bytes) counts[b]!++;
  }
  assert.equal(seen.size, 5000, 'no id twice');
  // 80,000 bytes: each value expected ~312 times; a stuck or zeroed pool would be far off.
  assert.ok(Math.min(...counts) > 200 && Math.max(...counts) < 450, `${Math.min(...counts)}..${Math.max(...counts)}`);
  assert.throws(() => randomBytesFromPool(10_000), RangeError);
});
