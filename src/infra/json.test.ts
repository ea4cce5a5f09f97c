import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deepFreeze, jsonOf } from './json.ts';

test('writes an object as JSON once and remembers the text with the object', () => {
  const criteria = { categories: ['restaurant', 'cafe'], cityId: 2867714, text: null };
  const text = jsonOf(criteria);
  assert.equal(text, JSON.stringify(criteria));
  // The same object answers the remembered text (which is why such objects are frozen), another object its own.
  criteria.cityId = 1;
  assert.equal(jsonOf(criteria), text);
  assert.equal(jsonOf({ ...criteria }), JSON.stringify({ ...criteria }));
});

test('freezes an object and everything in it', () => {
  const value = deepFreeze({ a: { b: [1, { c: 2 }] } });
  assert.ok(Object.isFrozen(value) && Object.isFrozen(value.a) && Object.isFrozen(value.a.b) && Object.isFrozen(value.a.b[1]));
  assert.throws(() => {
    (value.a.b as unknown[]).push(3);
  }, TypeError);
});
