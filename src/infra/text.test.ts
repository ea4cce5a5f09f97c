import { test } from 'node:test';
import assert from 'node:assert/strict';
import { foldText } from './text.ts';

test('folds accents, case and punctuation so spellings of one name compare equal', () => {
  assert.equal(foldText('Köln'), 'koln');
  assert.equal(foldText("Café  de l'Opéra"), 'cafe de l opera');
  assert.equal(foldText('Straße'), 'strasse');
  assert.equal(foldText('Øresund'), 'oresund');
});

test('keeps non-Latin scripts and folds full-width forms', () => {
  assert.equal(foldText('東京駅'), '東京駅');
  assert.equal(foldText('ＡＢＣ'), 'abc');
  assert.equal(foldText('Москва'), 'москва');
});
