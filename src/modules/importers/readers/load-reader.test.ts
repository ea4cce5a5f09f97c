import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readerFactories } from './index.ts';
import { loadableFormats, loadReaderFactory } from './load-reader.ts';

test('loads, for every format detection knows, the same reader on its own, and nothing for an unknown format', async () => {
  assert.deepEqual([...loadableFormats].sort(), readerFactories.map((f) => f.format).sort());
  for (const factory of readerFactories) assert.equal(await loadReaderFactory(factory.format), factory, factory.format);
  assert.equal(await loadReaderFactory('toString'), undefined);
  assert.equal(await loadReaderFactory('kml'), undefined);
});
